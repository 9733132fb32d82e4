"""Statistics of many groups of values at once (a frame's detections, its objects), equal to numpy's per group.

Lifting and the object map fit one box per detection or object; doing it with one numpy call per
group pays numpy's per-call cost dozens of times a frame. These functions take every group's values
in one array with a group index per value and compute each group's statistic with a few array
operations (only the selection of order statistics is one C call per group). Groups are contiguous
(the values sorted by group). Each gives bit for bit what numpy gives on the group alone
(``np.percentile``'s "linear" method, ``np.median``, ``np.argmax``'s first maximum), so a batched
path returns exactly the per-group path's numbers (tests/test_grouped.py checks them against numpy).
"""

from __future__ import annotations

import math

import numpy as np


def group_starts(group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(n_groups,) first position and count of each group in a ``group`` array sorted by group."""
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return starts, counts


def _kth_values(values: np.ndarray, group: np.ndarray, n_groups: int, positions: np.ndarray) -> np.ndarray:
    """The ``positions`` (n_groups, K) smallest values of each group, per column: (n_groups, K, C).

    numpy has no segmented selection: each group's contiguous slice is partitioned at its own positions
    by one ``np.partition`` call (one C call per group; cheaper than every one-call way tried for all
    groups: lexsort, a padded partition, ranks), and the asked elements are then gathered at once.
    """
    starts, counts = group_starts(group, n_groups)
    columns = values.T.copy()  # (C, N), a copy (partitioned in place): each group's slice of a column is contiguous
    for g, (s, n) in enumerate(zip(starts.tolist(), counts.tolist(), strict=True)):
        columns[:, s:s + n].partition(np.unique(positions[g]), axis=1)
    return columns[:, starts[:, None] + positions].transpose(1, 2, 0)


def _positions(counts: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy's "linear" percentile of samples of ``counts`` (G,) values at ``q`` (Q,): the (G, Q) positions
    of the two order statistics it interpolates between and the weight of the second, as numpy computes them."""
    quantiles = np.true_divide(np.asarray(q, dtype=np.float64), 100)
    virtual = (counts[:, None] - 1) * quantiles[None, :]  # (n - 1) q
    previous = np.floor(virtual)
    above = virtual >= (counts[:, None] - 1)
    prev_i = np.where(above, counts[:, None] - 1, previous).astype(np.int64)
    next_i = np.where(above, counts[:, None] - 1, previous + 1).astype(np.int64)
    gamma = virtual - np.where(above, -1, prev_i)  # numpy's gamma (its index -1 stands for the last)
    return prev_i, next_i, gamma


def group_percentiles(values: np.ndarray, group: np.ndarray, n_groups: int, q: np.ndarray) -> np.ndarray:
    """``np.percentile(values[group == g], q, axis=0)`` of every group g: (n_groups, len(q), C).

    Args:
        values: (N,) or (N, C) float64 without NaN.
        group: (N,) int64 group of each value, ascending, in [0, n_groups); every group must hold a value.
        n_groups: number of groups.
        q: (Q,) percentiles in [0, 100].
    """
    values = np.asarray(values, dtype=np.float64)
    v = values.reshape(len(values), -1)
    prev_i, next_i, gamma = _positions(np.bincount(group, minlength=n_groups), q)
    nq = prev_i.shape[1]
    at = _kth_values(v, group, n_groups, np.concatenate([prev_i, next_i], axis=1))  # (G, 2Q, C)
    return _lerp(at[:, :nq], at[:, nq:], gamma[:, :, None])


def percentiles(values: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``np.percentile(values, q, axis=0)`` of (N, C) float values (N >= 1, no NaN): (len(q), C), the same
    numbers without numpy's per-call cost (one partition). Float32 values give float64, as numpy's do (its
    weights are float64 numbers)."""
    n = len(values)
    rows = []
    for quantile in (float(v) / 100 for v in q):  # _positions' numbers for one group, in Python floats
        virtual = (n - 1) * quantile
        if virtual >= n - 1:
            rows.append((n - 1, n - 1, np.float64(virtual + 1)))
        else:
            prev = math.floor(virtual)
            rows.append((prev, prev + 1, np.float64(virtual - prev)))
    part = np.partition(values, sorted({k for r in rows for k in r[:2]}), axis=0)
    return np.stack([_lerp(part[a], part[b], t) for a, b, t in rows])


def medians(values: np.ndarray) -> np.ndarray:
    """``np.median(values, axis=0)`` of (N, C) float64 values (N >= 1, no NaN): (C,), the same numbers."""
    n = len(values)
    half = n // 2
    if n % 2:
        return np.partition(values, half, axis=0)[half] / 1
    part = np.partition(values, [half - 1, half], axis=0)
    return (part[half - 1] + part[half]) / 2


def group_medians(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """``np.median(values[group == g], axis=0)`` of every group g: (n_groups, C) (or (n_groups,) for 1-D values).

    ``group`` as for ``group_percentiles``."""
    values = np.asarray(values, dtype=np.float64)
    v = values.reshape(len(values), -1)
    counts = np.bincount(group, minlength=n_groups)
    half = counts // 2
    at = _kth_values(v, group, n_groups, np.stack([np.maximum(half - 1, 0), half], axis=1))
    lower, upper = at[:, 0], at[:, 1]
    even = (counts % 2 == 0)[:, None]
    out = np.where(even, (lower + upper) / 2, upper / 1)  # np.median: the mean of the middle one or two
    return out if values.ndim > 1 else out[:, 0]


def first_max_per_group(weight: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Per group, its largest ``weight`` and the first position (in array order) that holds it (-1 for
    an empty group), as ``np.argmax`` gives on the group's values."""
    best = np.full(n_groups, -np.inf)
    np.maximum.at(best, group, weight)
    at = np.flatnonzero(weight == best[group])
    first = np.full(n_groups, -1, dtype=np.int64)
    first[group[at][::-1]] = at[::-1]  # the last write wins: the earliest position
    return best, first


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's quantile interpolation, step for step (its rounding, so the results are numpy's)."""
    diff = b - a
    out = a + diff * t
    return np.where(t >= 0.5, b - diff * (1 - t), out)
