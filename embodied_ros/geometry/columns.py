"""Reductions of (N, 3) point and voxel arrays column by column, and sorted unique values, the same numbers
as numpy's own calls at a tenth of their cost.

With numpy 2.x, ``x.min(axis=0)``, ``np.all(m, axis=1)`` and ``np.linalg.norm(x, axis=1)`` on an (N, 3)
array run 7-10 times slower than the same arithmetic written per column (the reduction machinery
iterates three-element rows one at a time), and ``np.unique(a)`` alone (no inverse, no counts) hashes
its values and then sorts the distinct ones, 5-10 times slower than a sort and a comparison with the
neighbour (measured on the project's machine, 500 to 36,000 rows). The map reduces such arrays for
every detection, object and ray bundle of every frame. Each function here gives exactly what the numpy
call it replaces gives (the same order of additions, the same comparisons).
"""

from __future__ import annotations

import numpy as np


def rows_all(mask: np.ndarray) -> np.ndarray:
    """``np.all(mask, axis=1)`` of an (N, C) bool array."""
    out = mask[:, 0].copy()
    for k in range(1, mask.shape[1]):
        out &= mask[:, k]
    return out


def rows_any(mask: np.ndarray) -> np.ndarray:
    """``np.any(mask, axis=1)`` of an (N, C) bool array."""
    out = mask[:, 0].copy()
    for k in range(1, mask.shape[1]):
        out |= mask[:, k]
    return out


def row_norms(x: np.ndarray) -> np.ndarray:
    """``np.linalg.norm(x, axis=1)`` of an (N, C) float array: the squares summed column after column."""
    total = x[:, 0] * x[:, 0]
    for k in range(1, x.shape[1]):
        total += x[:, k] * x[:, k]
    return np.sqrt(total)


def column_min(x: np.ndarray) -> np.ndarray:
    """``x.min(axis=0)`` of a non-empty (N, C) array."""
    return np.array([x[:, k].min() for k in range(x.shape[1])], dtype=x.dtype)


def column_max(x: np.ndarray) -> np.ndarray:
    """``x.max(axis=0)`` of a non-empty (N, C) array."""
    return np.array([x[:, k].max() for k in range(x.shape[1])], dtype=x.dtype)


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` of a 1-D array without NaN: its distinct values, ascending."""
    s = np.sort(np.asarray(a).reshape(-1))
    if len(s) < 2:
        return s
    keep = np.empty(len(s), dtype=bool)
    keep[0] = True
    np.not_equal(s[1:], s[:-1], out=keep[1:])
    return s[keep]
