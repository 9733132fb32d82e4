"""Grouped statistics and box fits (a frame's detections at once) against numpy and the one-group fit."""

from __future__ import annotations

import numpy as np
import pytest
from lifting_reference import fit_upright_box as fit_one_reference

from embodied_ros.geometry.fitting import fit_upright_box, fit_upright_boxes
from embodied_ros.geometry.grouped import first_max_per_group, group_medians, group_percentiles, medians, percentiles


def _groups(rng: np.random.Generator, columns: int, ties: bool) -> tuple[np.ndarray, np.ndarray, int]:
    n_groups = int(rng.integers(1, 12))
    counts = rng.integers(1, 300, size=n_groups)
    counts[0] = 1  # a group of one
    counts[-1] = 2 if n_groups > 1 else 1  # and one of two (an even median)
    group = np.repeat(np.arange(n_groups), counts)
    values = rng.normal(size=(len(group), columns)) * 2.0
    if ties:
        values = np.round(values, 1)
    return values, group, n_groups


@pytest.mark.parametrize("seed", range(8))
def test_grouped_statistics_are_numpys_per_group(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values, group, n_groups = _groups(rng, 3, ties=seed % 2 == 0)
    kept = values.copy()
    pct = group_percentiles(values, group, n_groups, [2.0, 50.0, 98.0])
    med = group_medians(values, group, n_groups)
    med_1d = group_medians(values[:, 1].copy(), group, n_groups)
    pct_1d = group_percentiles(values[:, 2].copy(), group, n_groups, [98.0])
    np.testing.assert_array_equal(values, kept)  # the inputs are left as they were
    for g in range(n_groups):
        own = values[group == g]
        np.testing.assert_array_equal(pct[g], np.percentile(own, [2.0, 50.0, 98.0], axis=0))
        np.testing.assert_array_equal(med[g], np.median(own, axis=0))
        np.testing.assert_array_equal(percentiles(own, [2.0, 98.0]), np.percentile(own, [2.0, 98.0], axis=0))
        np.testing.assert_array_equal(medians(own), np.median(own, axis=0))
        assert med_1d[g] == np.median(own[:, 1])
        assert pct_1d[g, 0, 0] == np.percentile(own[:, 2], 98.0)


@pytest.mark.parametrize("seed", range(4))
def test_float32_statistics_are_numpys(seed: int) -> None:
    """Discovery's samples are float32: numpy's percentile of them is float64 (its weights are), its median float32;
    a float32 median is also the float64 median of the same values rounded to float32 (memory/standing_things.py)."""
    rng = np.random.default_rng(seed)
    values, group, n_groups = _groups(rng, 2, ties=seed % 2 == 0)
    values = (values + 3.0).astype(np.float32)  # depth-like
    for g in range(n_groups):
        own = values[group == g]
        got = percentiles(own, [1.0, 5.0, 95.0, 99.0])
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, np.percentile(own, [1.0, 5.0, 95.0, 99.0], axis=0))
        assert medians(own[:, 0]) == np.median(own[:, 0]) and medians(own[:, 0]).dtype == np.float32
    rounded = group_medians(values[:, 0].astype(np.float64), group, n_groups).astype(np.float32)
    np.testing.assert_array_equal(rounded, [np.median(values[group == g, 0]) for g in range(n_groups)])


@pytest.mark.parametrize("seed", range(4))
def test_first_max_per_group_is_argmax_per_group(seed: int) -> None:
    rng = np.random.default_rng(seed)
    group = np.sort(rng.integers(0, 6, size=200))
    weight = rng.integers(0, 4, size=200).astype(float)  # many ties: the first one counts
    best, first = first_max_per_group(weight, group, 7)
    for g in range(7):
        at = np.flatnonzero(group == g)
        if not len(at):
            assert first[g] == -1
            continue
        assert first[g] == at[np.argmax(weight[at])] and best[g] == weight[at].max()


@pytest.mark.parametrize("seed", range(6))
def test_fitting_groups_at_once_fits_each_as_alone(seed: int) -> None:
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(int(rng.integers(1, 9))):
        n = int(rng.integers(4, 600))
        yaw = rng.uniform(-np.pi, np.pi)
        local = rng.uniform(-1, 1, size=(n, 3)) * rng.uniform(0.05, 1.5, size=3)
        c, s = np.cos(yaw), np.sin(yaw)
        xy = local[:, :2] @ np.array([[c, s], [-s, c]])
        parts.append(np.column_stack([xy, local[:, 2]]) + rng.uniform(-4, 4, size=3))
    group = np.repeat(np.arange(len(parts)), [len(p) for p in parts])
    boxes = fit_upright_boxes(np.concatenate(parts), group, len(parts), (2.0, 98.0), pad=0.02)
    for box, part in zip(boxes, parts, strict=True):
        reference = fit_one_reference(part, (2.0, 98.0), pad=0.02)  # numpy's percentile, one group
        np.testing.assert_allclose(box, reference, rtol=0, atol=1e-12)
        np.testing.assert_allclose(fit_upright_box(part, (2.0, 98.0), pad=0.02), reference, rtol=0, atol=1e-12)
