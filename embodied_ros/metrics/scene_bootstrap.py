"""How sure a figure measured on a few scenes is: percentile bootstrap over scenes.

A held-out set of four synthetic scenes holds four sofas and a handful of beds, so one scene more
or less moves a class's AP by a lot and the mean with it. Resampling whole scenes (never single
boxes or prompts, which are not independent within a scene) and recomputing the metric shows the
spread a different draw of scenes would give. ``scipy.stats.bootstrap`` does the resampling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import bootstrap

__all__ = ["Interval", "scene_interval"]


@dataclass(frozen=True)
class Interval:
    """A metric's value on all scenes and its bootstrap interval over scenes."""

    value: float
    low: float
    high: float
    level: float
    n_scenes: int

    def __str__(self) -> str:
        spread = f"{self.level:.0%} interval over {self.n_scenes} scenes: {self.low:.3f}..{self.high:.3f}"
        return f"{self.value:.3f} ({spread})"


def scene_interval(metric: Callable[[np.ndarray], float], n_scenes: int, resamples: int = 300,
                   level: float = 0.9, seed: int = 0) -> Interval:
    """Bootstrap a metric of scenes.

    Args:
        metric: maps an (M,) int array of scene indices (with repeats) to the metric on those scenes.
        n_scenes: how many scenes there are (indices 0..n_scenes-1).
        resamples: bootstrap resamples (each calls ``metric`` once).
        level: two-sided confidence level of the percentile interval.
        seed: resampling seed (the interval is deterministic for a given seed).

    Returns:
        The metric on all scenes and its percentile interval; with one scene the interval is the value.
    """
    if n_scenes < 1:
        raise ValueError("no scenes to bootstrap")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level {level}: must lie in (0, 1)")
    value = float(metric(np.arange(n_scenes)))
    if n_scenes == 1:
        return Interval(value, value, value, level, 1)
    result = bootstrap((np.arange(n_scenes),), lambda idx: float(metric(np.asarray(idx, dtype=np.int64))),
                       vectorized=False, n_resamples=resamples, confidence_level=level, method="percentile",
                       random_state=np.random.default_rng(seed))
    ci = result.confidence_interval
    return Interval(value, float(ci.low), float(ci.high), level, n_scenes)
