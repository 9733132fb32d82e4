"""Fitting a gravity-aligned box to points: one routine for lifting (one view) and the memory (all views)."""

from __future__ import annotations

import math

import cv2
import numpy as np

from .boxes import canonical_yaw_box, canonical_yaw_boxes
from .columns import row_norms
from .grouped import group_medians, group_percentiles, group_starts, medians, percentiles


def fit_upright_box(points: np.ndarray, trim_percentiles: tuple[float, float] = (2.0, 98.0),
                    pad: float = 0.0) -> np.ndarray:
    """(P, 3) world points (z up) -> (9,) upright box; yaw from the minimum-area rectangle on the floor plane.

    Args:
        points: (P, 3) points, P >= 1, metres.
        trim_percentiles: (low, high) percentiles of the points that bound the box along each of
            its axes (stray points at a silhouette do not stretch it).
        pad: added to every extent: points that are voxel centroids lie half a voxel inside the
            surface.

    Returns:
        (x, y, z, dx, dy, dz, yaw, 0, 0), canonical (dx >= dy, yaw in [-pi/2, pi/2)).
    """
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    lo, hi = trim_percentiles
    xy = points[:, :2]
    # Trim the radial outliers before the rectangle: one stray point would turn it.
    r = row_norms(xy - medians(xy))
    core_xy = xy[r <= percentiles(r[:, None], [hi])[0, 0]] if len(xy) > 10 else xy
    (_, _), (_, _), angle_deg = cv2.minAreaRect(core_xy.astype(np.float32))
    yaw = math.radians(angle_deg)
    c, s = math.cos(yaw), math.sin(yaw)
    local = xy @ np.array([[c, -s], [s, c]])  # (P, 2) coordinates along the box axes
    q = percentiles(np.column_stack([local, points[:, 2]]), [lo, hi])  # (2, 3)
    ext = q[1] - q[0] + pad
    mid = 0.5 * (q[0] + q[1])
    centre_xy = np.array([c * mid[0] - s * mid[1], s * mid[0] + c * mid[1]])
    box = np.array([centre_xy[0], centre_xy[1], mid[2], ext[0], ext[1], ext[2], yaw, 0.0, 0.0])
    return canonical_yaw_box(box)


def fit_upright_boxes(points: np.ndarray, group: np.ndarray, n_groups: int,
                      trim_percentiles: tuple[float, float] = (2.0, 98.0), pad: float = 0.0) -> np.ndarray:
    """``fit_upright_box`` of every group of points at once: (n_groups, 9), the same numbers.

    Args:
        points: (P, 3) points, metres, sorted by group (each group's points in the order the
            single fit would take them: the rectangle's angle may depend on it).
        group: (P,) int64 group of each point, ascending, every group in [0, n_groups) non-empty.
        n_groups: number of groups.
        trim_percentiles, pad: as ``fit_upright_box``.
    """
    lo, hi = trim_percentiles
    xy = points[:, :2]
    # Trim the radial outliers before the rectangle: one stray point would turn it.
    r = row_norms(xy - group_medians(xy, group, n_groups)[group])
    limit = group_percentiles(r, group, n_groups, [hi])[:, 0, 0]
    starts, counts = group_starts(group, n_groups)
    trimmed = (r <= limit[group]) | (counts <= 10)[group]
    yaw = np.zeros(n_groups)
    for g in range(n_groups):  # OpenCV's rectangle, one small C call per group
        part = xy[starts[g]:starts[g] + counts[g]]
        core_xy = part[trimmed[starts[g]:starts[g] + counts[g]]]
        (_, _), (_, _), angle_deg = cv2.minAreaRect(core_xy.astype(np.float32))
        yaw[g] = math.radians(angle_deg)
    c = np.array([math.cos(y) for y in yaw.tolist()])
    s = np.array([math.sin(y) for y in yaw.tolist()])
    # Each group's (P_g, 2) @ (2, 2) rotation as one product with every group's matrix side by side
    # (the same BLAS arithmetic per element), each point keeping its own group's two columns.
    rotations = np.stack([np.stack([c, s], axis=1), np.stack([-s, c], axis=1)], axis=2)  # (G, 2, 2): [[c, -s], [s, c]]
    local_all = xy @ rotations.transpose(1, 0, 2).reshape(2, 2 * n_groups)
    local = np.take_along_axis(local_all, (2 * group)[:, None] + np.arange(2)[None], axis=1)
    q = group_percentiles(np.column_stack([local, points[:, 2]]), group, n_groups, [lo, hi])  # (G, 2, 3)
    ext = q[:, 1] - q[:, 0] + pad
    mid = 0.5 * (q[:, 0] + q[:, 1])
    boxes = np.zeros((n_groups, 9))
    boxes[:, 0] = c * mid[:, 0] - s * mid[:, 1]
    boxes[:, 1] = s * mid[:, 0] + c * mid[:, 1]
    boxes[:, 2] = mid[:, 2]
    boxes[:, 3:6] = ext
    boxes[:, 6] = yaw
    return canonical_yaw_boxes(boxes)

