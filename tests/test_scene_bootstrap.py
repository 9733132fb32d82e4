"""Bootstrap intervals over scenes, on metrics whose spread is known, and summed occupancy counts."""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.metrics.occupancy import EMPTY_LABEL, OccupancyAccumulator
from embodied_ros.metrics.scene_bootstrap import scene_interval


def test_a_metric_that_does_not_depend_on_the_scenes_has_no_spread() -> None:
    interval = scene_interval(lambda scenes: 0.42, 5)
    assert interval.value == interval.low == interval.high == 0.42 and interval.n_scenes == 5


def test_the_interval_of_a_mean_lies_inside_the_scenes_range_and_around_the_value() -> None:
    per_scene = np.array([0.0, 0.25, 0.5, 0.75, 1.0, 0.5])
    interval = scene_interval(lambda scenes: float(per_scene[scenes].mean()), len(per_scene), resamples=500)
    assert interval.value == pytest.approx(0.5)
    assert 0.0 <= interval.low < interval.value < interval.high <= 1.0
    # The standard error of the mean is about 0.13 here: a 90 % interval is wider than +-0.1, narrower than +-0.4.
    assert 0.2 < interval.high - interval.low < 0.8
    assert "90% interval over 6 scenes" in str(interval)


def test_resampling_picks_whole_scenes_with_repeats_and_is_reproducible() -> None:
    seen: list[np.ndarray] = []

    def metric(scenes: np.ndarray) -> float:
        seen.append(scenes)
        return float(len(np.unique(scenes)))

    first = scene_interval(metric, 8, resamples=50, seed=3)
    draws = seen[1:]  # the first call scores all scenes
    assert len(draws) >= 50 and all(len(d) == 8 and d.min() >= 0 and d.max() < 8 for d in draws)
    assert any(len(np.unique(d)) < 8 for d in draws)  # drawn with replacement
    assert scene_interval(metric, 8, resamples=50, seed=3) == first


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError, match="no scenes"):
        scene_interval(lambda s: 0.0, 0)
    with pytest.raises(ValueError, match="level"):
        scene_interval(lambda s: 0.0, 3, level=1.0)


def test_summed_accumulators_count_as_one() -> None:
    E = EMPTY_LABEL
    grids = [(np.array([0, 1, E]), np.array([0, 0, E])), (np.array([1, 1, E]), np.array([1, E, 1]))]
    together = OccupancyAccumulator(("a", "b"))
    parts = []
    for pred, gt in grids:
        together.add(pred, gt)
        part = OccupancyAccumulator(("a", "b"))
        part.add(pred, gt)
        parts.append(part)
    summed = OccupancyAccumulator(("a", "b"))
    for part in parts:
        summed.extend(part)
    assert summed.result().miou == pytest.approx(together.result().miou)
    np.testing.assert_allclose(summed.result().iou, together.result().iou)
    with pytest.raises(ValueError, match="vocabular"):
        summed.extend(OccupancyAccumulator(("a",)))
