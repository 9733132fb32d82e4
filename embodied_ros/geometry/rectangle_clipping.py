"""Rectangles clipped by half-planes, many at once in numpy: the 2D step of the exact box overlap (iou.py).

Each face of a box, seen in its own 2D coordinates, is a rectangle centred at the origin; the other
box's face planes cut it as half-planes ``a * u + b * v <= r``. Clipping is Sutherland-Hodgman, one
half-plane at a time over a whole batch of polygons, and areas are the shoelace formula.
"""

from __future__ import annotations

import numpy as np

__all__ = ["clip_polygons", "clipped_rectangle_areas", "polygon_areas"]

_UNIT_SQUARE = np.array([[-1.0, -1.0], [1.0, -1.0], [1.0, 1.0], [-1.0, 1.0]])  # CCW


def clip_polygons(pu: np.ndarray, pv: np.ndarray, line: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Clip convex polygons by one half-plane each (Sutherland-Hodgman in 2D).

    Args:
        pu, pv: (P, V) vertex coordinates of closed polygons; repeated vertices are allowed
            (zero-length edges).
        line: (P, 3) half-planes ``a * u + b * v <= r`` as rows ``(a, b, r)``.

    Returns:
        ``(pu, pv)``: (P, V') clipped polygons, padded by repeating their first vertex; an
        emptied polygon collapses to one repeated point (zero area).
    """
    p, v = pu.shape
    d = pu * line[:, 0:1] + pv * line[:, 1:2] - line[:, 2:3]
    inside = d <= 0.0
    nu = np.concatenate([pu[:, 1:], pu[:, :1]], axis=1)
    nv = np.concatenate([pv[:, 1:], pv[:, :1]], axis=1)
    d_nxt = np.concatenate([d[:, 1:], d[:, :1]], axis=1)
    crosses = inside != (d_nxt <= 0.0)
    # Where an edge crosses, exactly one end has d <= 0 < d_other, so d - d_nxt != 0.
    t = d / np.where(crosses, d - d_nxt, 1.0)
    # Each edge emits its start (if inside) and its crossing point (if any), in order.
    keep = np.empty((p, v, 2), dtype=bool)
    keep[:, :, 0], keep[:, :, 1] = inside, crosses
    cand_u, cand_v = np.empty((p, v, 2)), np.empty((p, v, 2))
    cand_u[:, :, 0], cand_u[:, :, 1] = pu, pu + t * (nu - pu)
    cand_v[:, :, 0], cand_v[:, :, 1] = pv, pv + t * (nv - pv)
    keep = keep.reshape(p, 2 * v)
    rank = np.cumsum(keep, axis=1)
    count = rank[:, -1]
    # A convex polygon gains at most one vertex per cut; rounding near the line can add
    # more, so the buffer follows the batch's largest count instead of assuming v + 1.
    width = max(int(count.max()), 1)
    # Stable compaction by scattering each kept point to its rank; the rest go to a spare
    # last column. Slots past a polygon's count keep its first point (zero-length edges).
    rows = (width + 1) * np.arange(p)[:, None]
    dest = (np.where(keep, rank - 1, width) + rows).ravel()
    first = np.argmax(keep, axis=1) + 2 * v * np.arange(p)
    out = []
    for cand in (cand_u.reshape(-1), cand_v.reshape(-1)):
        buf = np.empty((p, width + 1))
        buf[:] = cand[first][:, None]
        buf.reshape(-1)[dest] = cand
        out.append(buf[:, :width])
    return out[0], out[1]


def polygon_areas(pu: np.ndarray, pv: np.ndarray) -> np.ndarray:
    """(P, V) closed polygons -> (P,) signed areas (positive counter-clockwise)."""
    ru, rv = pu - pu[:, :1], pv - pv[:, :1]  # about the first vertex: less cancellation
    return 0.5 * np.sum(ru[:, :-1] * rv[:, 1:] - rv[:, :-1] * ru[:, 1:], axis=1)


def clipped_rectangle_areas(hu: np.ndarray, hv: np.ndarray, lines: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Areas of rectangles ``[-hu, hu] x [-hv, hv]`` clipped by six half-planes each.

    Only the work that matters is done: a rectangle that one half-plane excludes entirely
    has area 0, a half-plane that keeps all four corners is skipped, and the rectangles are
    ordered by how many half-planes cut them, so each clipping step is a prefix slice.

    Args:
        hu, hv: (...,) half sizes of the rectangles.
        lines: (..., 6, 3) half-planes ``a * u + b * v <= r`` as rows ``(a, b, r)``.
        wanted: (...,) bool, False for rectangles whose area is not needed (reported as 0).

    Returns:
        (...,) clipped areas.
    """
    shape = hu.shape
    hu, hv, wanted = hu.reshape(-1), hv.reshape(-1), wanted.reshape(-1)
    lines = lines.reshape(-1, 6, 3)
    # Extremes of a * u + b * v - r over the rectangle's corners, in closed form.
    mid = -lines[:, :, 2]
    spread = np.abs(lines[:, :, 0]) * hu[:, None] + np.abs(lines[:, :, 1]) * hv[:, None]
    cuts = (mid + spread > 0.0) & (mid - spread <= 0.0)  # (F, 6)
    alive = wanted & ~np.any(mid - spread > 0.0, axis=1)
    area = np.where(alive, 4.0 * hu * hv, 0.0)
    cuts &= alive[:, None]
    n_cuts = cuts.sum(axis=1)
    faces = np.argsort(-n_cuts, kind="stable")[: np.count_nonzero(n_cuts)]
    if len(faces) == 0:
        return area.reshape(shape)
    # The cutting half-planes of each face, packed to the front in their original order.
    n_cuts, cuts = n_cuts[faces], cuts[faces]
    slot = np.cumsum(cuts, axis=1) - 1
    f_idx, g_idx = np.nonzero(cuts)
    packed = np.empty((len(faces), int(n_cuts[0]), 3))
    packed[f_idx, slot[f_idx, g_idx]] = lines[faces[f_idx], g_idx]
    pu = _UNIT_SQUARE[None, :, 0] * hu[faces, None]
    pv = _UNIT_SQUARE[None, :, 1] * hv[faces, None]
    clipped = np.empty(len(faces))
    for step in range(int(n_cuts[0])):
        todo = np.count_nonzero(n_cuts > step)  # a prefix: faces are sorted by n_cuts
        pu, pv = clip_polygons(pu[:todo], pv[:todo], packed[:todo, step])
        done = np.count_nonzero(n_cuts > step + 1)
        if done < todo:  # faces with no cuts left: their polygons are final
            clipped[done:todo] = polygon_areas(pu[done:], pv[done:])
            pu, pv = pu[:done], pv[:done]
    area[faces] = clipped
    return area.reshape(shape)
