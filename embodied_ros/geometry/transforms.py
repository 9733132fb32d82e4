"""Rigid transforms and the alignment of a world frame to gravity (z up)."""

from __future__ import annotations

import numpy as np

BODY_TO_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
"""EmbodiedScan's body frame (x forward, y left, z up) -> OpenCV optical axes (x right, y down,
z forward): a body pose ``R_body`` gives the camera rotation ``R_body @ BODY_TO_OPTICAL``."""


def camera_pose_from_body(R_body: np.ndarray, position: np.ndarray) -> np.ndarray:
    """(4, 4) camera-to-world from an EmbodiedScan-style body pose (rotation (3, 3), position (3,))."""
    return make_transform(np.asarray(R_body) @ BODY_TO_OPTICAL, position)


def make_transform(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """(3, 3) rotation and (3,) translation -> (4, 4) homogeneous transform."""
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = np.asarray(t, dtype=np.float64).reshape(3)
    return T


def invert_transform(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid (4, 4) transform without a general matrix inverse."""
    R, t = T[:3, :3], T[:3, 3]
    return make_transform(R.T, -R.T @ t)


def transform_points(T: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Apply (4, 4) T to (N, 3) points."""
    return points @ T[:3, :3].T + T[:3, 3]


def gravity_alignment(gravity: np.ndarray) -> np.ndarray:
    """(4, 4) rotation that maps a world whose gravity is ``gravity`` to a z-up world.

    Args:
        gravity: (3,) direction of gravity (pointing down) in the original world frame.

    Returns:
        T such that ``T[:3, :3] @ gravity`` is parallel to (0, 0, -1). The rotation is the
        smallest one that does so (no yaw is added).
    """
    g = np.asarray(gravity, dtype=np.float64).reshape(3)
    norm = np.linalg.norm(g)
    if not np.isfinite(norm) or norm < 1e-9:
        raise ValueError("gravity vector must be finite and non-zero")
    from scipy.spatial.transform import Rotation  # late: scipy.spatial takes 0.3 s to import

    R, _ = Rotation.align_vectors([[0.0, 0.0, -1.0]], [g / norm])
    return make_transform(R.as_matrix(), np.zeros(3))


def quat_xyzw_from_matrix(R: np.ndarray) -> np.ndarray:
    """(..., 3, 3) rotations -> (..., 4) quaternions in ROS order (x, y, z, w), w >= 0."""
    from scipy.spatial.transform import Rotation  # here, not at import: `embodied-ros ground` needs no scipy.spatial

    R = np.asarray(R, dtype=np.float64)
    q = Rotation.from_matrix(R.reshape(-1, 3, 3)).as_quat()  # scipy: (x, y, z, w)
    q[q[:, 3] < 0] *= -1.0
    return q.reshape(R.shape[:-2] + (4,))


def matrix_from_quat_xyzw(q: np.ndarray) -> np.ndarray:
    """(4,) quaternion in ROS order (x, y, z, w) -> (3, 3) rotation (normalises q)."""
    q = np.asarray(q, dtype=np.float64).reshape(4)
    n = np.linalg.norm(q)
    if not np.isfinite(n) or n < 1e-9:
        raise ValueError(f"quaternion {q.tolist()} is zero or not finite")
    from scipy.spatial.transform import Rotation

    return Rotation.from_quat(q / n).as_matrix()
