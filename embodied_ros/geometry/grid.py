"""Where a local occupancy grid sits in the world (EmbodiedScan's 40 x 40 x 16 at 0.16 m).

The grid frame is gravity-aligned: x along the camera's heading (its optical axis projected on
the floor), y to the left, z up. Its origin is the grid's voxel (0, 0, 0) corner, which
LocalOccupancy.T_world_grid and the network's projections use. Horizontally the grid is
centred on the camera (shifted by ``forward_offset`` along the heading); vertically it spans
``z_min`` .. ``z_min + Z * voxel_size`` above the floor (-0.78 .. 1.78 m by default).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .transforms import invert_transform, transform_points


@dataclass(frozen=True)
class GridSpec:
    """Shape and placement of a local occupancy grid."""

    shape: tuple[int, int, int] = (40, 40, 16)  # voxels along x (forward), y (left), z (up)
    voxel_size: float = 0.16  # voxel edge, metres
    z_min: float = -0.78  # bottom of the grid relative to the floor, metres
    forward_offset: float = 0.0  # shift of the grid centre along the camera heading, metres

    @property
    def extent(self) -> np.ndarray:
        """(3,) grid size in metres."""
        return np.asarray(self.shape, dtype=np.float64) * self.voxel_size

    def voxel_centres(self) -> np.ndarray:
        """(X * Y * Z, 3) float64 voxel centres in the grid frame, x slowest, z fastest."""
        return (np.indices(self.shape).reshape(3, -1).T + 0.5) * self.voxel_size


def aligned_grid_pose(T_world_camera: np.ndarray, spec: GridSpec = GridSpec(), floor_z: float = 0.0) -> np.ndarray:
    """(4, 4) world pose of the grid's voxel (0, 0, 0) corner for a camera pose in a z-up world.

    The heading is the optical axis projected on the floor (pitch and roll ignored); a camera
    looking straight down takes the heading of its image's up direction.
    """
    R = np.asarray(T_world_camera, dtype=np.float64)[:3, :3]
    heading = R[:, 2].copy()
    if np.hypot(heading[0], heading[1]) < 1e-6:
        heading = -R[:, 1]
    yaw = np.arctan2(heading[1], heading[0])
    c, s = np.cos(yaw), np.sin(yaw)
    Rz = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    ext = spec.extent
    corner = np.array([-ext[0] / 2 + spec.forward_offset, -ext[1] / 2, spec.z_min])
    T = np.eye(4)
    T[:3, :3] = Rz
    T[:3, 3] = np.array([T_world_camera[0, 3], T_world_camera[1, 3], floor_z]) + Rz @ corner
    return T


def voxels_in_view(T_world_grid: np.ndarray, T_world_camera: np.ndarray, K: np.ndarray, width: int, height: int,
                   spec: GridSpec = GridSpec(), near: float = 0.1) -> np.ndarray:
    """(X, Y, Z) bool: voxels whose centre lies in the camera's view frustum.

    In front of the camera (beyond ``near`` metres) and projecting inside the ``width`` x
    ``height`` image, occluded or not. A centred grid is mostly behind or beside the camera; this
    is the part one frame can speak for, the region semantic scene completion is scored on
    (SSCNet's NYU practice).
    """
    p = transform_points(invert_transform(np.asarray(T_world_camera, float)) @ np.asarray(T_world_grid, float),
                         spec.voxel_centres())
    z = p[:, 2]
    in_front = z > near
    uv = (np.asarray(K, float) @ p.T).T[:, :2] / np.where(in_front, z, 1.0)[:, None]
    inside = in_front & (uv[:, 0] >= 0) & (uv[:, 0] < width) & (uv[:, 1] >= 0) & (uv[:, 1] < height)
    return inside.reshape(spec.shape)
