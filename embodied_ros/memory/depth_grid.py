"""A frame's depth on a coarse grid of samples: normals, discontinuities, pieces and their outlines.

The functions object discovery (memory/discovery.py) builds its pieces with: each takes (h, w) arrays of
the sampled depth (metres, 0 where invalid), the samples' world points or their piece labels
(ndimage.label's: 0 for none), and works on the whole grid at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage


@dataclass
class DepthSamples:
    """A frame's depth on the sampling grid: (h, w, 3) world points, (h, w) depth and valid mask."""

    points: np.ndarray
    depth: np.ndarray
    valid: np.ndarray


def connected_groups(rows: np.ndarray, cols: np.ndarray) -> list[np.ndarray]:
    """The samples (at these grid positions) as index arrays of their 4-connected groups: things that a
    strip of their support (a shelf's edge) joined into one piece part when the strip is taken away."""
    if len(rows) == 0:
        return []
    r0, c0 = rows.min(), cols.min()
    mask = np.zeros((rows.max() - r0 + 1, cols.max() - c0 + 1), bool)
    mask[rows - r0, cols - c0] = True
    labels, n = ndimage.label(mask)
    if n == 1:
        return [np.arange(len(rows))]
    own = labels[rows - r0, cols - c0]
    return [np.flatnonzero(own == k) for k in range(1, n + 1)]


def label_runs(labels: np.ndarray, n: int, points: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per label 0..n of an (h, w) image: (n + 1, 3) least and greatest point, the samples' flat
    indices sorted by label, and where each label's run starts in that order (one sort: each label is
    a run, reduced at once; ndimage.label leaves no label empty)."""
    flat = labels.ravel()
    order = np.argsort(flat, kind="stable")
    first = np.concatenate([[0], np.cumsum(np.bincount(flat, minlength=n + 1))[:-1]])
    pts = points.reshape(-1, 3)[order]
    return np.minimum.reduceat(pts, first, axis=0), np.maximum.reduceat(pts, first, axis=0), order, first


def grid_normals(points: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(h, w, 3) unit normals of the sampled surface (from the 3 x 3 smoothed points' central
    differences, oriented up where not vertical) and (h, w) bool where they are defined."""
    weight = valid.astype(np.float32)
    # The three weighted coordinates and the weight, filtered together (size 1 along the last axis: each alone).
    sums = ndimage.uniform_filter(np.concatenate([points * weight[..., None], weight[..., None]], axis=-1), (3, 3, 1))
    smooth = sums[..., :3] / np.maximum(sums[..., 3:], 1e-6)
    dx = np.zeros_like(smooth)
    dy = np.zeros_like(smooth)
    dx[:, 1:-1] = smooth[:, 2:] - smooth[:, :-2]
    dy[1:-1] = smooth[2:] - smooth[:-2]
    normal = np.cross(dx, dy)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True) + 1e-9
    normal *= np.where(normal[..., 2:3] < 0, -1.0, 1.0)
    ok = np.zeros_like(valid)
    ok[1:-1, 1:-1] = (valid[1:-1, 1:-1] & valid[2:, 1:-1] & valid[:-2, 1:-1] & valid[1:-1, 2:]
                      & valid[1:-1, :-2])
    return normal, ok


def mixed_samples(depth: np.ndarray, base: float, per_m: float) -> np.ndarray:
    """(h, w) bool: mixed ("flying") depth samples, blends of the two surfaces of a depth discontinuity that lie on
    neither. Along an image axis, a sample on a surface continues it: its inverse depth (linear across the image
    on a plane, however slanted) is what the two samples before it on one side or the other predict, within
    ``base + per_m x depth`` metres. A mixed sample continues neither side (a side without two samples of depth
    predicts nothing), and departs from a neighbour by that much. Left in, they make thin false objects along the
    edges of monitors and door frames, and stretch the boxes of real things back to the wall behind them or down
    into the surface they stand on.

    Args:
        depth: (h, w) sampled depth, metres, 0 where invalid.
    """
    valid = depth > 0
    inverse = np.where(valid, 1.0 / np.where(valid, depth, 1.0), 0.0)
    metres = base + per_m * depth
    tol = metres * inverse ** 2  # metres -> inverse metres at this depth
    out = np.zeros(depth.shape, bool)
    for axis in (0, 1):
        u, d = np.moveaxis(inverse, axis, 0), np.moveaxis(depth, axis, 0)
        v = np.moveaxis(valid, axis, 0)
        t, m = np.moveaxis(tol, axis, 0)[2:-2], np.moveaxis(metres, axis, 0)[2:-2]
        c, ok = u[2:-2], v[2:-2]
        jump = ~v[1:-3] | ~v[3:-1] | (np.abs(d[1:-3] - d[2:-2]) > m) | (np.abs(d[3:-1] - d[2:-2]) > m)
        before = v[:-4] & v[1:-3] & (np.abs(2 * u[1:-3] - u[:-4] - c) <= t)
        after = v[4:] & v[3:-1] & (np.abs(2 * u[3:-1] - u[4:] - c) <= t)
        np.moveaxis(out, axis, 0)[2:-2] |= ok & jump & ~before & ~after
    return out


def depth_breaks(depth: np.ndarray, base: float, per_m: float) -> np.ndarray:
    """(h, w) bool: samples beside a depth discontinuity (to a neighbour along either image axis)."""
    tol = base + per_m * depth
    out = np.zeros(depth.shape, bool)
    across = np.abs(np.diff(depth, axis=1)) > np.minimum(tol[:, 1:], tol[:, :-1])
    down = np.abs(np.diff(depth, axis=0)) > np.minimum(tol[1:], tol[:-1])
    out[:, 1:] |= across
    out[:, :-1] |= across
    out[1:] |= down
    out[:-1] |= down
    return out


def hidden_samples(depth: np.ndarray, labels: np.ndarray, room: np.ndarray, near: float, far: np.ndarray,
            reach: int = 2) -> np.ndarray:
    """(h, w) bool: samples with something in front of them up to ``reach`` samples away along either
    image axis, outside its own piece: another piece or the room (``room``: structure, supports) nearer to
    the camera by more than ``near`` metres, or anything nearer by more than ``far`` (h, w) metres per
    sample between them (a discontinuity; a sample nearer by less may be the piece's own leaning surface
    in the band a discontinuity leaves)."""
    out = np.zeros(depth.shape, bool)
    valid = depth > 0
    other = (labels > 0) | room
    for k in range(1, reach + 1):
        for here, there in (((slice(None), slice(None, -k)), (slice(None), slice(k, None))),
                            ((slice(None), slice(k, None)), (slice(None), slice(None, -k))),
                            ((slice(None, -k), slice(None)), (slice(k, None), slice(None))),
                            ((slice(k, None), slice(None)), (slice(None, -k), slice(None)))):
            gap = depth[here] - depth[there]  # > 0: the other sample is nearer
            apart = labels[there] != labels[here]  # not the piece's own (sloping) surface
            out[here] |= valid[there] & apart & ((gap > k * far[here]) | (other[there] & (gap > near)))
    return out & valid


def grow_silhouettes(labels: np.ndarray, depth: np.ndarray, free: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Each piece grown by one sample into the ``free`` samples (those beside a discontinuity) whose depth
    is within ``tol`` (h, w) of its own beside them: its silhouette, which the discontinuity took from it
    (without it, every box is a sample short on each side)."""
    out = labels.copy()
    gap = np.full(labels.shape, np.inf, dtype=np.float32)
    for here, there in (((slice(None), slice(None, -1)), (slice(None), slice(1, None))),
                        ((slice(None), slice(1, None)), (slice(None), slice(None, -1))),
                        ((slice(None, -1), slice(None)), (slice(1, None), slice(None))),
                        ((slice(1, None), slice(None)), (slice(None, -1), slice(None)))):
        d = np.abs(depth[here] - depth[there])
        take = free[here] & (labels[there] > 0) & (d <= tol[here]) & (d < gap[here])
        out[here] = np.where(take, labels[there], out[here])
        gap[here] = np.where(take, d, gap[here])
    return out


def piece_edges(labels: np.ndarray) -> np.ndarray:
    """(h, w) bool: samples with a 4-neighbour of another label (a piece's outline)."""
    out = np.zeros(labels.shape, bool)
    across = labels[:, 1:] != labels[:, :-1]
    down = labels[1:] != labels[:-1]
    out[:, 1:] |= across
    out[:, :-1] |= across
    out[1:] |= down
    out[:-1] |= down
    return out
