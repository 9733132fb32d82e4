"""Occupancy mIoU (empty excluded) on tiny grids whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.metrics.occupancy import EMPTY_LABEL, OccupancyAccumulator, occupancy_miou

E = EMPTY_LABEL


def test_perfect_prediction_gives_one_and_empty_is_not_a_class():
    gt = np.array([[E, 0], [1, E]])
    m = occupancy_miou([gt], [gt.copy()], ("chair", "table"))
    assert m.miou == 1.0 and m.occupied_iou == 1.0 and m.iou.shape == (2,)
    assert "empty excluded" in m.summary()


def test_known_ious_on_a_tiny_grid():
    gt = np.array([0, 0, 1, 1, E, E, E, E])
    pred = np.array([0, 1, 1, E, 0, E, E, E])
    m = occupancy_miou([pred], [gt], ("a", "b", "c"))
    # class a: TP 1, FP 1 (voxel 4), FN 1 (voxel 1) -> 1/3; class b: TP 1, FP 1, FN 1 -> 1/3; c: absent -> NaN.
    assert m.iou[0] == pytest.approx(1 / 3) and m.iou[1] == pytest.approx(1 / 3) and np.isnan(m.iou[2])
    assert m.miou == pytest.approx(1 / 3)
    # occupied: pred {0,1,2,4}, gt {0,1,2,3}: 3 / 5.
    assert m.occupied_iou == pytest.approx(3 / 5)


def test_all_empty_prediction_scores_zero_not_high():
    gt = np.full((4, 4, 2), E)
    gt[0, 0, 0] = 2
    m = occupancy_miou([np.full_like(gt, E)], [gt], ("a", "b", "c"))
    assert m.miou == 0.0 and m.occupied_iou == 0.0  # 31 empty voxels right, but empty is excluded


def test_counts_accumulate_over_grids_before_dividing():
    acc = OccupancyAccumulator(("a",))
    acc.add(np.array([0, 0]), np.array([0, 0]))  # 2 TP
    acc.add(np.array([0, E]), np.array([E, E]))  # 1 FP
    # per-grid mean would be (1 + 0) / 2; accumulated it is 2 / 3.
    assert acc.result().miou == pytest.approx(2 / 3)


def test_valid_mask_ignores_voxels():
    gt = np.array([0, 0, E])
    pred = np.array([0, E, 0])
    valid = np.array([True, False, False])
    assert occupancy_miou([pred], [gt], ("a",), valid=[valid]).miou == 1.0
    assert occupancy_miou([pred], [gt], ("a",)).miou == pytest.approx(1 / 3)


def test_bad_inputs_raise():
    with pytest.raises(ValueError):
        occupancy_miou([np.zeros(3, int)], [np.zeros(4, int)], ("a",))
    with pytest.raises(ValueError):
        occupancy_miou([np.array([5])], [np.array([0])], ("a",))
