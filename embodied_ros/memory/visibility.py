"""Where objects fall in a frame: seen, hidden behind something nearer, or seen through.

The scene memory asks this of every object near the camera in every frame: an object that is
in view and not hidden should have been detected (if it was not, that counts against it), and
one whose place the camera saw through is not there. The same projection gives the object's
image region, which a detection's 2D box is compared with.

Each object is represented by sample points: voxel centroids of its surface, or points inside
its box when it has no geometry (a network's box). A surface point is seen when the frame's
depth at its pixel equals its depth (within ``margin``), hidden when the depth is nearer, seen
through when it is farther; box samples get half the box's largest extent as extra tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..frame import Frame
from ..geometry.boxes import box_rotations

# Inner sample points of a box without geometry: a 3 x 3 x 3 grid at -1/3, 0, 1/3 of its extents.
_GRID = np.array([(i, j, k) for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)], dtype=np.float64) / 3.0


@dataclass(frozen=True)
class Visibility:
    """How one object's sample points fall in a frame.

    Attributes:
        n: sample points.
        seen: points in the image whose depth the frame observed at their own depth.
        hidden: points in the image behind something nearer.
        through: points in the image where the frame observed something farther (free space).
        box_2d: (4,) float64 xyxy pixel bounds of the seen points, or None when none is seen.
    """

    n: int
    seen: int
    hidden: int
    through: int
    box_2d: np.ndarray | None

    @property
    def seen_fraction(self) -> float:
        return self.seen / self.n if self.n else 0.0

    @property
    def through_fraction(self) -> float:
        return self.through / self.n if self.n else 0.0

    def min_side_px(self) -> float:
        """Shorter side of the seen region, pixels (0 when nothing is seen)."""
        if self.box_2d is None:
            return 0.0
        return float(min(self.box_2d[2] - self.box_2d[0], self.box_2d[3] - self.box_2d[1]))


def box_samples(box: np.ndarray) -> np.ndarray:
    """(27, 3) world points inside a (9,) box (a 3 x 3 x 3 grid at a third of its half extents x 2)."""
    R = box_rotations(np.asarray(box, dtype=np.float64)[None])[0]
    return box[:3] + (_GRID * box[3:6]) @ R.T


@dataclass(frozen=True)
class PointViews:
    """Per point of a set: pixel (u, v) and whether the frame saw it, hid it or saw through it."""

    u: np.ndarray
    v: np.ndarray
    seen: np.ndarray
    hidden: np.ndarray
    through: np.ndarray


def classify_points(points: np.ndarray, tolerance: np.ndarray | float, frame: Frame, margin: float = 0.05,
                    margin_per_m: float = 0.02, max_depth: float = 6.0, border_px: int = 4) -> PointViews:
    """Project (P, 3) world points into ``frame`` and compare their depth with the frame's.

    Args:
        points: (P, 3) world points.
        tolerance: metres added to the depth margin, per point (P,) or for all.
        frame: the posed RGB-D frame.
        margin: depth agreement in metres at 0 m, growing by ``margin_per_m`` per metre of depth
            (sensor noise and colour/depth misregistration grow with distance).
        max_depth: points farther than this along the optical axis are out of range.
        border_px: points within this many pixels of the image's edge count as outside.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    T_cw = np.linalg.inv(frame.T_world_camera)
    cam = pts @ T_cw[:3, :3].T + T_cw[:3, 3]
    z = cam[:, 2]
    H, W = frame.depth.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        u = frame.K[0, 0] * cam[:, 0] / z + frame.K[0, 2]
        v = frame.K[1, 1] * cam[:, 1] / z + frame.K[1, 2]
    inside = (z > 0.1) & (z <= max_depth) & (u >= border_px) & (u < W - border_px) & (v >= border_px)
    inside &= v < H - border_px
    observed = np.zeros(len(pts), dtype=np.float64)
    observed[inside] = frame.depth[v[inside].astype(np.int64), u[inside].astype(np.int64)]
    valid = inside & np.isfinite(observed) & (observed > 0)
    tol = margin + margin_per_m * np.where(inside, z, 0.0) + tolerance
    return PointViews(u, v, valid & (np.abs(observed - z) <= tol), valid & (observed < z - tol),
                      valid & (observed > z + tol))


def may_be_in_view(lo: np.ndarray, hi: np.ndarray, frame: Frame, max_depth: float = 6.0,
                   border_px: int = 4) -> np.ndarray:
    """(N,) bool: False where no point of the axis-aligned world box [lo, hi] (each (N, 3)) can be
    ``inside`` the frame as ``classify_points`` sees it (in front, in range, within the border).

    Inside is an intersection of half-spaces in camera coordinates (z > 0.1, z <= max_depth and
    the four image edges as planes through the camera), so a box all of whose 8 corners lie
    outside one of them holds no point inside: objects behind or beside the camera are skipped
    without projecting their points.
    """
    lo, hi = np.asarray(lo, dtype=np.float64).reshape(-1, 3), np.asarray(hi, dtype=np.float64).reshape(-1, 3)
    pick = np.indices((2, 2, 2)).reshape(3, -1).T.astype(bool)  # (8, 3): take hi where True
    corners = np.where(pick[None], hi[:, None], lo[:, None])  # (N, 8, 3)
    T_cw = np.linalg.inv(frame.T_world_camera)
    cam = corners @ T_cw[:3, :3].T + T_cw[:3, 3]
    x, y, z = cam[..., 0], cam[..., 1], cam[..., 2]
    (fx, cx), (fy, cy) = frame.K[0, [0, 2]], frame.K[1, [1, 2]]
    H, W = frame.depth.shape
    outside = ((z <= 0.1).all(axis=1) | (z > max_depth).all(axis=1)
               | (fx * x + (cx - border_px) * z < 0).all(axis=1)
               | (fx * x + (cx - W + border_px) * z >= 0).all(axis=1)
               | (fy * y + (cy - border_px) * z < 0).all(axis=1)
               | (fy * y + (cy - H + border_px) * z >= 0).all(axis=1))
    return ~outside


def visibility(samples: list[np.ndarray], tolerances: np.ndarray, frame: Frame, **margins: float) -> list[Visibility]:
    """How every object's sample points fall in ``frame`` (one projection for all).

    Args:
        samples: per object, (P_i, 3) world points.
        tolerances: (len(samples),) metres added to the depth margin for each object (0 for
            surface points, half the largest extent for box samples).
        frame: the posed RGB-D frame.
        margins: ``classify_points``' margin settings.

    Returns:
        One Visibility per object, in order.
    """
    counts = np.array([len(s) for s in samples], dtype=np.int64)
    if counts.sum() == 0:
        return [Visibility(0, 0, 0, 0, None) for _ in samples]
    owner = np.repeat(np.arange(len(samples)), counts)
    pts = np.concatenate([np.asarray(s, dtype=np.float64).reshape(-1, 3) for s in samples])
    pv = classify_points(pts, np.asarray(tolerances, dtype=np.float64)[owner], frame, **margins)
    n_obj = len(samples)
    n_seen = np.bincount(owner[pv.seen], minlength=n_obj)
    n_hidden = np.bincount(owner[pv.hidden], minlength=n_obj)
    n_through = np.bincount(owner[pv.through], minlength=n_obj)
    boxes: list[np.ndarray | None] = [None] * n_obj
    idx = np.flatnonzero(pv.seen)
    if len(idx):  # each object's seen points are one run of idx (owners ascend): their bounds, run by run
        first = np.flatnonzero(np.r_[True, owner[idx][1:] != owner[idx][:-1]])
        u, v = pv.u[idx], pv.v[idx]
        bounds = np.stack([np.minimum.reduceat(u, first), np.minimum.reduceat(v, first),
                           np.maximum.reduceat(u, first), np.maximum.reduceat(v, first)], axis=1)
        for o, box in zip(owner[idx][first].tolist(), bounds, strict=True):
            boxes[o] = box
    return [Visibility(int(counts[o]), int(n_seen[o]), int(n_hidden[o]), int(n_through[o]), boxes[o])
            for o in range(n_obj)]
