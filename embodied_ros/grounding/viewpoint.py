"""Viewer-centred words: left and right, in front and behind, near and far, as seen from a camera.

"The monitor on the left" means the left one as the speaker (or the robot) sees the room: from a
camera pose, not from an object's own front (``relations.py``). The viewer's axes are horizontal
(world z up): forward is the camera's optical axis projected on the floor, right is forward x up.
An object's bearing is the horizontal angle from forward to its centre, negative on the left.

Left and right rank the objects the camera can see (bearing within the image's half field of view
plus ``FOV_MARGIN_RAD``, in front of the camera) when any can be seen: "the cup on the left" is the
left one of those in the picture, not one behind the robot's shoulder; when none can be seen, only those
on the asked side count (an object out of the picture on the left is never "the one on the right").
Distances are measured horizontally from the camera to the object's footprint (plus a quarter of the
centre distance, as "near" in ``relations.py``), so the nearest table is the one whose edge is nearest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # not imported at run time: the grounding CLI starts faster without outputs/
    from ..frame import Frame
    from ..outputs.camera_poses import CameraPose

__all__ = ["DEFAULT_HALF_FOV_RAD", "Viewpoint", "viewer_order", "viewer_scores"]

DEFAULT_HALF_FOV_RAD = math.radians(35.0)  # when the camera's intrinsics are unknown
FOV_MARGIN_RAD = math.radians(10.0)  # objects this far outside the image's edge still count as in view


@dataclass(frozen=True)
class Viewpoint:
    """A camera pose that viewer-centred words refer to.

    Attributes:
        T_world_camera: (4, 4) camera-to-world, OpenCV optical camera axes, world z up.
        name: how answers name it, e.g. "the camera of frame 460".
        half_fov: half the horizontal field of view, radians.
    """

    T_world_camera: np.ndarray
    name: str = "the camera"
    half_fov: float = DEFAULT_HALF_FOV_RAD

    def __post_init__(self) -> None:
        T = np.array(self.T_world_camera, dtype=np.float64).reshape(4, 4)
        T.setflags(write=False)
        object.__setattr__(self, "T_world_camera", T)

    @classmethod
    def from_frame(cls, frame: Frame) -> Viewpoint:
        """The camera of a frame (its field of view from its intrinsics)."""
        return cls(frame.T_world_camera, f"the camera of frame {frame.index}",
                   math.atan2(0.5 * frame.width, float(frame.K[0, 0])))

    @classmethod
    def from_camera_pose(cls, pose: CameraPose) -> Viewpoint:
        """The camera of a run's frame (``camera_poses.json``)."""
        return cls(pose.T_world_camera, f"the camera of frame {pose.index}",
                   math.atan2(0.5 * pose.width, float(pose.K[0, 0])))

    @property
    def position(self) -> np.ndarray:
        """(3,) the camera centre in the world."""
        return self.T_world_camera[:3, 3]

    def axes(self) -> tuple[np.ndarray, np.ndarray]:
        """(forward, right): horizontal unit vectors (2,) of the viewer in the world."""
        R = self.T_world_camera[:3, :3]
        forward = R[:2, 2]  # the optical axis on the floor...
        if np.linalg.norm(forward) < 1e-3:
            forward = -R[:2, 1]  # ...or, looking straight down, the image's up
        forward = forward / max(float(np.linalg.norm(forward)), 1e-12)
        return forward, np.array([forward[1], -forward[0]])  # right = forward x up

    def bearings(self, centers: np.ndarray) -> np.ndarray:
        """(N,) horizontal angle from forward to each (N, 3) centre, radians, negative on the left."""
        forward, right = self.axes()
        rel = np.asarray(centers, dtype=np.float64)[:, :2] - self.position[:2]
        return np.arctan2(rel @ right, rel @ forward)

    def in_view(self, centers: np.ndarray) -> np.ndarray:
        """(N,) whether each centre lies within the horizontal field of view (plus the margin)."""
        return np.abs(self.bearings(centers)) <= self.half_fov + FOV_MARGIN_RAD

    def distances(self, centers: np.ndarray, half_local: np.ndarray, axes: np.ndarray) -> np.ndarray:
        """(N,) horizontal distance from the camera to each object, metres: the gap to its oriented
        footprint plus a quarter of the centre distance.

        Args:
            centers: (N, 3) box centres; half_local: (N, 2) half extents along the boxes' own
            horizontal axes; axes: (N, 2, 2) those axes (rows: local x, local y), as in
            ``relations.SceneGeometry``.
        """
        rel = self.position[None, :2] - np.asarray(centers, dtype=np.float64)[:, :2]  # (N, 2)
        local = np.einsum("nij,nj->ni", axes, rel)
        gap = np.linalg.norm(np.maximum(np.abs(local) - half_local, 0.0), axis=1)
        return gap + 0.25 * np.linalg.norm(rel, axis=1)

    def describe(self) -> str:
        """'the camera of frame 460 at (0.60, 0.82, 0.08)'."""
        x, y, z = (float(v) for v in self.position)
        return f"{self.name} at ({x:.2f}, {y:.2f}, {z:.2f})"


# Scores of viewer-centred attributes (each candidate against the others of the same phrase).
LEFTMOST_SCALE_RAD = math.radians(7.0)  # "leftmost": e^-1 for a candidate this much right of the leftmost
SIDE_SCALE_RAD = math.radians(20.0)  # "on the left": the same, softer (it leans; a relation may outweigh it)
OUT_OF_VIEW = 0.05  # factor of candidates out of the picture when some are in it ("the cup on the left")
NEAREST_SCALE_M = 0.5  # "nearest": e^-1 for a candidate this much farther than the nearest
NEAR_SCALE_M = 1.5  # "near me": e^-1 at this distance
AHEAD_SCALE_M = 3.0  # "in front of me": e^-1 for a candidate this much farther than the nearest in front


def viewer_scores(kind: str, sign: int, viewpoint: Viewpoint, centers: np.ndarray, distances: np.ndarray) -> np.ndarray:
    """(T,) scores in [0, 1] of candidates for a viewer-centred attribute.

    Args:
        kind: "lateral" (sign < 0 left, > 0 right), "distance" (< 0 near, > 0 far) or "ahead"
            (> 0 in front, < 0 behind); |sign| 2 for superlatives (leftmost, nearest), 1 otherwise.
        viewpoint: where the words are meant from.
        centers: (T, 3) the candidates' box centres; distances: (T,) ``Viewpoint.distances`` of them.
    """
    if kind == "lateral":
        key = np.sign(sign) * viewpoint.bearings(centers)  # larger: farther on the asked side
        seen = viewpoint.in_view(centers)
        pool = seen if seen.any() else key > 0  # none in the picture: only those on the asked side
        if not pool.any():
            return np.zeros(len(key))
        scale = LEFTMOST_SCALE_RAD if abs(sign) >= 2 else SIDE_SCALE_RAD
        s = np.exp(-np.maximum(key[pool].max() - key, 0.0) / scale)
        return np.where(pool, s, OUT_OF_VIEW * s)
    if kind == "distance":
        if abs(sign) >= 2:
            lead = distances - distances.min() if sign < 0 else distances.max() - distances
            return np.exp(-lead / NEAREST_SCALE_M)
        near = np.exp(-distances / NEAR_SCALE_M)
        return near if sign < 0 else 1.0 - near
    if kind == "ahead":
        forward, _ = viewpoint.axes()
        rel = np.asarray(centers, dtype=np.float64)[:, :2] - viewpoint.position[:2]
        cos = np.sign(sign) * (rel @ forward) / np.maximum(np.linalg.norm(rel, axis=1), 1e-9)
        facing = np.clip(cos, 0.0, 1.0) ** 2
        if not facing.any():
            return facing
        lead = distances - distances[facing > 0].min()
        return facing * np.exp(-np.maximum(lead, 0.0) / AHEAD_SCALE_M)
    raise ValueError(f"not a viewer-centred attribute kind: {kind!r}")


def viewer_order(kind: str, sign: int, viewpoint: Viewpoint, centers: np.ndarray,
                 distances: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The order an ordinal counts in ("the second chair from the left"): (T,) keys, smallest first,
    and (T,) which candidates take part (left/right: those in view, when any are)."""
    if kind == "lateral":
        seen, key = viewpoint.in_view(centers), -np.sign(sign) * viewpoint.bearings(centers)
        return key, seen if seen.any() else key < 0  # none in the picture: those on the asked side
    if kind == "distance":
        return (-distances if sign > 0 else distances), np.ones(len(distances), dtype=bool)
    raise ValueError(f"no order for viewer-centred attribute kind {kind!r}")
