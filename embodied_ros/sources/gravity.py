"""Gravity for recordings that do not give it: upward-facing planes in the depth, or the cameras' "down".

A floor or table top seen from above has its surface normal pointing straight up. Per frame,
the depth's surface normals that point roughly up (within 35 degrees of the cameras' mean "up",
the opposite of the image's down axis) are averaged, narrowing in on the dominant direction;
frames that see enough of such surfaces each give an estimate, and the estimates must agree
with each other. When no frame sees one, the cameras' mean image-down axis is the estimate:
right for a camera held level on average, and said to be uncertain.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..frame import Frame

_CONE_DEG = 35.0  # an "upward" normal is within this of the cameras' mean up
_NARROWING_DEG = (15.0, 8.0, 4.0)
_MIN_SUPPORT = 0.05  # fraction of a frame's normals that must lie on the dominant direction
_MIN_NORMALS = 200
_AGREE_DEG = 5.0  # per-frame estimates further than this from the consensus are outliers
_STEP_PX = 4


@dataclass(frozen=True)
class GravityEstimate:
    """Gravity estimated in the world of the poses it was computed from.

    Attributes:
        down: (3,) unit vector, gravity's direction (pointing down).
        method: "horizontal surfaces" or "camera down".
        frames_used: frames whose estimate agreed (surfaces) or that were averaged (camera down).
        frames_total: frames looked at.
        spread_deg: largest angle between a used frame's estimate and ``down``.
    """

    down: np.ndarray
    method: str
    frames_used: int
    frames_total: int
    spread_deg: float

    @property
    def sure(self) -> bool:
        return self.method == "horizontal surfaces" and self.frames_used >= 2 and self.spread_deg <= 3.0

    def summary(self) -> str:
        """One line: what was estimated, from what, and how sure it is."""
        g = ", ".join(f"{c:+.3f}" for c in self.down)
        if self.method == "horizontal surfaces":
            how = (f"from the upward-facing surfaces (floor, tables) in the depth of {self.frames_used} of "
                   f"{self.frames_total} frames, which agree within {self.spread_deg:.1f} deg")
            verdict = "sure" if self.sure else "unsure (few frames or they disagree; --gravity X,Y,Z gives it)"
        else:
            how = (f"as the mean image-down axis of {self.frames_used} cameras (no floor or table seen), "
                   f"spread {self.spread_deg:.0f} deg")
            verdict = "unsure: right only if the camera was held level on average (--gravity X,Y,Z gives it)"
        return f"gravity ({g}) estimated {how}: {verdict}"


def _angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip(np.dot(a, b), -1.0, 1.0))))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _world_normals(frame: Frame) -> tuple[np.ndarray, np.ndarray]:
    """(N, 3) unit surface normals of the frame's depth facing the camera, and their (N, 3) points; world frame."""
    step = _STEP_PX
    z = np.nan_to_num(frame.depth[::step, ::step].astype(np.float64))
    h, w = z.shape
    v, u = np.mgrid[0:h, 0:w] * step
    K = frame.K
    P = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=-1)
    dx = P[1:-1, 2:] - P[1:-1, :-2]  # central differences over two grid cells
    dy = P[2:, 1:-1] - P[:-2, 1:-1]
    centre = P[1:-1, 1:-1]
    n = np.cross(dx, dy)
    norm = np.linalg.norm(n, axis=-1)
    valid = cv2.erode((z > 0.1).astype(np.uint8), np.ones((3, 3), np.uint8))[1:-1, 1:-1].astype(bool)
    # no depth edges: neighbours on the same surface (differences small against the distance)
    smooth = (np.linalg.norm(dx, axis=-1) < 0.2 * centre[..., 2]) & (np.linalg.norm(dy, axis=-1) < 0.2 * centre[..., 2])
    keep = valid & smooth & (norm > 1e-12)
    n = n[keep] / norm[keep][:, None]
    n[np.einsum("ij,ij->i", n, centre[keep]) > 0] *= -1  # face the camera
    R, t = frame.T_world_camera[:3, :3], frame.T_world_camera[:3, 3]
    return n @ R.T, centre[keep] @ R.T + t


def _plane_normal(points: np.ndarray, direction: np.ndarray) -> np.ndarray | None:
    """Normal of the largest plane across ``direction`` among the points (a floor or table top).

    Heights along ``direction`` are binned at 3 cm; the fullest bin's points are fitted by
    least squares (twice, keeping points within 2 cm of the first fit). Much sharper than the
    mean of noisy per-pixel normals.
    """
    heights = points @ direction
    bins = np.floor(heights / 0.03).astype(np.int64)
    values, counts = np.unique(bins, return_counts=True)
    peak = (values[np.argmax(counts)] + 0.5) * 0.03
    on_plane = np.abs(heights - peak) < 0.03
    normal = direction
    for _ in range(2):
        if on_plane.sum() < _MIN_NORMALS:
            return None
        centred = points[on_plane] - points[on_plane].mean(axis=0)
        normal = np.linalg.svd(centred, full_matrices=False)[2][-1]
        normal = normal if normal @ direction > 0 else -normal
        on_plane = np.abs((points - points[on_plane].mean(axis=0)) @ normal) < 0.02
    return normal


def _dominant_up(normals: np.ndarray, points: np.ndarray, up_guess: np.ndarray) -> np.ndarray | None:
    """The up direction of a frame: normals near ``up_guess`` narrowed step by step, then a plane fit."""
    if len(normals) < _MIN_NORMALS:
        return None
    m = up_guess
    chosen = normals @ m > np.cos(np.radians(_CONE_DEG))
    for limit in _NARROWING_DEG:
        if chosen.sum() < _MIN_NORMALS:
            return None
        m = _unit(normals[chosen].mean(axis=0))
        chosen = normals @ m > np.cos(np.radians(limit))
    if chosen.sum() < _MIN_NORMALS or chosen.mean() < _MIN_SUPPORT:
        return None
    m = _unit(normals[chosen].mean(axis=0))
    return _plane_normal(points[normals @ m > np.cos(np.radians(_NARROWING_DEG[0]))], m)


def estimate_gravity(frames: list[Frame]) -> GravityEstimate | None:
    """Estimate gravity from the frames' depth and poses (module docstring); None without frames."""
    if not frames:
        return None
    downs = np.array([f.T_world_camera[:3, 1] for f in frames])  # optical +y: the image's down
    camera_down = _unit(downs.mean(axis=0))
    ups = [up for f in frames if (up := _dominant_up(*_world_normals(f), -camera_down)) is not None]
    if ups:
        consensus = _unit(np.mean(ups, axis=0))
        for _ in range(3):  # drop the frames that disagree, re-average the rest
            agreeing = [u for u in ups if _angle_deg(u, consensus) <= _AGREE_DEG]
            if not agreeing:
                break
            consensus = _unit(np.mean(agreeing, axis=0))
        agreeing = [u for u in ups if _angle_deg(u, consensus) <= _AGREE_DEG]
        if len(agreeing) >= max(2, len(ups) // 2) or (len(frames) == 1 and agreeing):
            spread = max(_angle_deg(u, consensus) for u in agreeing)
            return GravityEstimate(-consensus, "horizontal surfaces", len(agreeing), len(frames), spread)
    spread = max(_angle_deg(_unit(d), camera_down) for d in downs)
    return GravityEstimate(camera_down, "camera down", len(frames), len(frames), spread)
