"""Pose sanity before a run: does each frame's depth land on the other frames' depth under the poses?

Poses in the wrong convention (world-to-camera read as camera-to-world) or in millimetres run
without any error and scatter every object over the room. Both are easy to tell from the data:
under the right poses, the depth points of one frame, moved into another frame's camera, land
on that frame's depth where the views overlap; under the wrong ones they land nowhere. The check
scores the poses as given against the other conventions on a few frames and names the one
that fits.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from itertools import combinations

import numpy as np

from ..frame import Frame
from ..geometry.transforms import invert_transform


class PoseConvention(str, Enum):
    """What the recorded 4x4 poses map."""

    CAMERA_TO_WORLD = "camera-to-world"
    WORLD_TO_CAMERA = "world-to-camera"


class PoseUnits(str, Enum):
    """The unit of the recorded translations."""

    METRES = "m"
    MILLIMETRES = "mm"


def correct_pose(T: np.ndarray, convention: PoseConvention, units: PoseUnits) -> np.ndarray:
    """A recorded pose -> camera-to-world in metres."""
    T = np.array(T, dtype=np.float64)
    if units is PoseUnits.MILLIMETRES:
        T[:3, 3] /= 1000.0
    return invert_transform(T) if convention is PoseConvention.WORLD_TO_CAMERA else T


# The alternatives tried against the poses as given: (convention flipped?, translation / 1000?)
_ALTERNATIVES = {"inverted": (True, False), "millimetres": (False, True), "inverted, millimetres": (True, True)}
MIN_AGREEMENT = 0.3  # fraction of overlapping depth that must land for poses to count as fitting
_SAMPLE_STEP_PX = 8
_MOVE_M, _TURN_RAD = 0.02, np.radians(1.0)  # less motion than this between frames tells nothing


@dataclass(frozen=True)
class PoseCheck:
    """How well each pose convention explains the depth of frame pairs.

    Attributes:
        agreement: {"as given" or an alternative: mean fraction of a frame's depth points that
            land on the other frame's depth}, over the pairs some convention makes overlap.
        pairs: pairs of frames scored.
        frames: frames used.
        moving: the camera moves between the frames (else nothing can be told).
    """

    agreement: dict[str, float]
    pairs: int
    frames: int
    moving: bool

    @property
    def best(self) -> str:
        return max(self.agreement, key=lambda k: self.agreement[k])

    @property
    def mismatch(self) -> str | None:
        """The alternative that fits clearly better than the poses as given, or None."""
        given, best = self.agreement.get("as given", 0.0), self.best
        if best == "as given" or not self.moving:
            return None
        score = self.agreement[best]
        return best if score >= MIN_AGREEMENT and score > given + 0.2 and score > 1.5 * given else None

    @property
    def fits(self) -> bool:
        return self.mismatch is None and (not self.moving or self.agreement.get("as given", 0.0) >= MIN_AGREEMENT)

    def summary(self) -> str:
        """One line: the agreement of each convention and what it means."""
        if not self.frames:
            return "not checked (no readable frame)"
        if not self.moving:
            return f"not decidable: the camera barely moves over the {self.frames} frames checked"
        figures = ", ".join(f"{k} {100 * v:.0f} %" for k, v in self.agreement.items())
        head = f"depth of {self.pairs} frame pairs lands on itself: {figures}"
        if self.mismatch:
            return f"{head}: the poses look {self.mismatch}"
        if not self.fits:
            return (f"{head}: no convention fits; do the poses, intrinsics and depth scale belong to these images "
                    "(--pose-check off to run anyway)?")
        return f"{head}: the poses fit"


def _relative_moves(poses: list[np.ndarray], i: int, j: int) -> bool:
    rel = invert_transform(poses[j]) @ poses[i]
    angle = np.arccos(np.clip((np.trace(rel[:3, :3]) - 1) / 2, -1.0, 1.0))
    return bool(np.linalg.norm(rel[:3, 3]) > _MOVE_M or angle > _TURN_RAD)


def _landing_fraction(a: Frame, b: Frame, T_a: np.ndarray, T_b: np.ndarray) -> float:
    """Fraction of frame a's sampled depth points that land on frame b's depth (within noise)."""
    step = _SAMPLE_STEP_PX
    v, u = np.mgrid[step // 2 : a.height : step, step // 2 : a.width : step]
    z = a.depth[v, u].astype(np.float64)
    ok = np.isfinite(z) & (z > 0.1)
    if not ok.any():
        return 0.0
    u, v, z = u[ok], v[ok], z[ok]
    K = a.K
    points = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=1)
    rel = invert_transform(T_b) @ T_a
    seen = points @ rel[:3, :3].T + rel[:3, 3]
    front = seen[:, 2] > 0.05
    ub = np.full(len(seen), -1, dtype=np.int64)
    vb = np.full(len(seen), -1, dtype=np.int64)
    ub[front] = np.rint(b.K[0, 0] * seen[front, 0] / seen[front, 2] + b.K[0, 2]).astype(np.int64)
    vb[front] = np.rint(b.K[1, 1] * seen[front, 1] / seen[front, 2] + b.K[1, 2]).astype(np.int64)
    inside = front & (ub >= 0) & (ub < b.width) & (vb >= 0) & (vb < b.height)
    d = np.zeros(len(seen))
    d[inside] = b.depth[vb[inside], ub[inside]]
    d = np.nan_to_num(d)
    lands = inside & (d > 0) & (np.abs(seen[:, 2] - d) < 0.05 + 0.03 * d)
    return float(lands.sum()) / len(z)


def check_poses(frames: list[Frame], alignment: np.ndarray | None = None) -> PoseCheck:
    """Score the frames' poses as given against the other conventions.

    Args:
        frames: a few frames, preferably spread over the first seconds of the recording.
        alignment: (4, 4) the source's own world alignment already in the poses
            (FrameSource.T_align); the alternatives are applied to the recorded poses under it.

    Returns:
        PoseCheck over every pair of frames that some convention makes overlap.
    """
    A = np.eye(4) if alignment is None else alignment
    A_inv = invert_transform(A)
    given = [f.T_world_camera for f in frames]
    hypotheses = {"as given": given}
    for name, (invert, millimetres) in _ALTERNATIVES.items():
        convention = PoseConvention.WORLD_TO_CAMERA if invert else PoseConvention.CAMERA_TO_WORLD
        units = PoseUnits.MILLIMETRES if millimetres else PoseUnits.METRES
        hypotheses[name] = [A @ correct_pose(A_inv @ T, convention, units) for T in given]
    pairs = list(combinations(range(len(frames)), 2))
    moving = any(_relative_moves(poses, i, j) for poses in hypotheses.values() for i, j in pairs)
    scores = {name: np.array([_landing_fraction(frames[i], frames[j], poses[i], poses[j]) for i, j in pairs])
              for name, poses in hypotheses.items()}
    informative = np.max(np.stack(list(scores.values())), axis=0) >= 0.1 if pairs else np.zeros(0, bool)
    agreement = {name: float(s[informative].mean()) if informative.any() else 0.0 for name, s in scores.items()}
    return PoseCheck(agreement, int(informative.sum()), len(frames), moving)
