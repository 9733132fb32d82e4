"""One posed RGB-D frame: the unit every source yields and every perceptor consumes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import FrameError

WORLD_FRAME = "world"
"""Default name of the z-up world frame that poses map into."""


def check_rigid(T: np.ndarray, what: str, tol: float = 1e-3) -> None:
    """Raise FrameError unless T is a finite 4x4 rigid transform (rotation + translation).

    Args:
        T: (4, 4) candidate transform.
        what: words naming T in the error message (file or frame).
        tol: tolerance on R^T R = I, det R = 1 and the last row.
    """
    if T.shape != (4, 4):
        raise FrameError(f"{what}: pose has shape {T.shape}, expected (4, 4)")
    if not np.all(np.isfinite(T)):
        raise FrameError(f"{what}: pose contains NaN or inf")
    R = T[:3, :3]
    if (
        np.abs(R.T @ R - np.eye(3)).max() > tol
        or abs(np.linalg.det(R) - 1.0) > tol
        or np.abs(T[3] - [0, 0, 0, 1]).max() > tol
    ):
        raise FrameError(f"{what}: pose is not rigid (rotation not orthonormal or bad last row)")


@dataclass(frozen=True)
class Frame:
    """A colour image, registered depth, intrinsics and camera pose at one instant.

    Attributes:
        color: (H, W, 3) uint8 RGB.
        depth: (H, W) float32 metres, registered to ``color``; 0 or NaN where invalid.
        K: (3, 3) float64 pinhole intrinsics of ``color`` (and so of ``depth``).
        T_world_camera: (4, 4) float64 camera-to-world; camera axes OpenCV optical
            (x right, y down, z forward); world z up where the source knows gravity.
        stamp_ns: capture time, integer nanoseconds.
        index: position of the frame in its source (0-based, counts skipped frames too).
        source_name: file or topic the frame came from, for messages.
        world_frame: name of the frame T_world_camera maps into.
        camera_frame: name of the optical camera frame.
    """

    color: np.ndarray
    depth: np.ndarray
    K: np.ndarray
    T_world_camera: np.ndarray
    stamp_ns: int
    index: int
    source_name: str = ""
    world_frame: str = WORLD_FRAME
    camera_frame: str = "camera"
    extras: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        where = f"frame {self.index}" + (f" ({self.source_name})" if self.source_name else "")
        if self.color.ndim != 3 or self.color.shape[2] != 3 or self.color.dtype != np.uint8:
            raise FrameError(f"{where}: colour must be HxWx3 uint8, got {self.color.shape} {self.color.dtype}")
        if self.depth.ndim != 2 or self.depth.dtype != np.float32:
            raise FrameError(f"{where}: depth must be HxW float32 metres, got {self.depth.shape} {self.depth.dtype}")
        if self.depth.shape != self.color.shape[:2]:
            raise FrameError(
                f"{where}: colour {self.color.shape[1]}x{self.color.shape[0]} and depth "
                f"{self.depth.shape[1]}x{self.depth.shape[0]} differ in size (depth must be registered to colour)"
            )
        if self.K.shape != (3, 3) or not np.all(np.isfinite(self.K)) or self.K[0, 0] <= 0 or self.K[1, 1] <= 0:
            raise FrameError(f"{where}: intrinsics must be a finite 3x3 matrix with positive focal lengths")
        check_rigid(self.T_world_camera, where)
        valid = np.isfinite(self.depth) & (self.depth > 0)
        if not valid.any():
            raise FrameError(f"{where}: depth image has no valid pixel")

    @property
    def height(self) -> int:
        return int(self.color.shape[0])

    @property
    def width(self) -> int:
        return int(self.color.shape[1])

    def valid_depth(self) -> np.ndarray:
        """(H, W) bool mask of finite, positive depth."""
        return np.isfinite(self.depth) & (self.depth > 0)
