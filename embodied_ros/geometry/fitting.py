"""Fitting a gravity-aligned box to points: one routine for lifting (one view) and the memory (all views)."""

from __future__ import annotations

import math

import cv2
import numpy as np

from .boxes import canonical_yaw_box


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
    lo, hi = trim_percentiles
    xy = points[:, :2]
    # Trim the radial outliers before the rectangle: one stray point would turn it.
    r = np.linalg.norm(xy - np.median(xy, axis=0), axis=1)
    core_xy = xy[r <= np.percentile(r, hi)] if len(xy) > 10 else xy
    (_, _), (_, _), angle_deg = cv2.minAreaRect(core_xy.astype(np.float32))
    yaw = math.radians(angle_deg)
    c, s = math.cos(yaw), math.sin(yaw)
    local = xy @ np.array([[c, -s], [s, c]])  # (P, 2) coordinates along the box axes
    q = np.percentile(np.column_stack([local, points[:, 2]]), [lo, hi], axis=0)  # (2, 3)
    ext = q[1] - q[0] + pad
    mid = 0.5 * (q[0] + q[1])
    centre_xy = np.array([c * mid[0] - s * mid[1], s * mid[0] + c * mid[1]])
    box = np.array([centre_xy[0], centre_xy[1], mid[2], ext[0], ext[1], ext[2], yaw, 0.0, 0.0])
    return canonical_yaw_box(box)
