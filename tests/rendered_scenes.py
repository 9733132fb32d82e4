"""A ray-cast renderer of boxes on a floor: exact depth frames for lifting and memory tests."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embodied_ros.frame import Frame
from embodied_ros.geometry.boxes import box_corners, box_rotations
from embodied_ros.geometry.transforms import make_transform, transform_points

W, H = 640, 480
K_SYN = np.array([[585.0, 0.0, 320.0], [0.0, 585.0, 240.0], [0.0, 0.0, 1.0]])


def look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """(4, 4) camera-to-world pose of an OpenCV camera at ``eye`` looking at ``target`` (world z up)."""
    z = target - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, [0.0, 0.0, 1.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return make_transform(np.stack([x, y, z], axis=1), eye)


def _rays(T_world_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Ray origin (3,) and (H*W, 3) world directions scaled so that t along a ray is camera depth."""
    u, v = np.meshgrid(np.arange(W) + 0.0, np.arange(H) + 0.0)
    d_cam = np.stack([(u - K_SYN[0, 2]) / K_SYN[0, 0], (v - K_SYN[1, 2]) / K_SYN[1, 1], np.ones_like(u)], axis=-1)
    return T_world_camera[:3, 3], d_cam.reshape(-1, 3) @ T_world_camera[:3, :3].T


def _hit_box(origin: np.ndarray, dirs: np.ndarray, box: np.ndarray) -> np.ndarray:
    """(N,) ray parameter of the first hit of an oriented box (slab test), inf where missed."""
    R = box_rotations(box)[0]
    o = R.T @ (origin - box[:3])
    d = dirs @ R  # rows R^T d
    half = 0.5 * box[3:6]
    with np.errstate(divide="ignore", invalid="ignore"):
        t1, t2 = (-half - o) / d, (half - o) / d
    t_near = np.nanmax(np.minimum(t1, t2), axis=1)
    t_far = np.nanmin(np.maximum(t1, t2), axis=1)
    hit = (t_near <= t_far) & (t_near > 0)
    return np.where(hit, t_near, np.inf)


def _hit_plane(origin: np.ndarray, dirs: np.ndarray, point: np.ndarray, normal: np.ndarray) -> np.ndarray:
    """(N,) ray parameter of the hit of a plane, inf where missed or behind."""
    with np.errstate(divide="ignore", invalid="ignore"):
        t = ((point - origin) @ normal) / (dirs @ normal)
    return np.where(t > 0, t, np.inf)


Colour = tuple[int, int, int] | Callable[[np.ndarray], np.ndarray]


def render_frame(T_world_camera: np.ndarray, boxes: list[np.ndarray], wall_y: float | None = None,
                 index: int = 0, colors: list[Colour] | None = None) -> Frame:
    """Depth of boxes on the floor z = 0 (and optionally a wall at y = wall_y facing +y); ``colors``: per box an
    RGB, or a texture: a function of the (N, 3) world points a box shows to their (N, 3) RGB (the floor and the
    wall stay grey 128)."""
    origin, dirs = _rays(T_world_camera)
    t = _hit_plane(origin, dirs, np.zeros(3), np.array([0.0, 0.0, 1.0]))
    if wall_y is not None:
        t = np.minimum(t, _hit_plane(origin, dirs, np.array([0.0, wall_y, 0.0]), np.array([0.0, 1.0, 0.0])))
    color = np.full((H * W, 3), 128, dtype=np.uint8)
    for k, box in enumerate(boxes):
        hit = _hit_box(origin, dirs, box)
        if colors is not None:
            seen = hit < t
            paint = colors[k]
            color[seen] = paint(origin + dirs[seen] * hit[seen, None]) if callable(paint) else paint
        t = np.minimum(t, hit)
    depth = np.where(np.isfinite(t) & (t < 8.0), t, 0.0).reshape(H, W).astype(np.float32)
    color = color.reshape(H, W, 3)
    return Frame(color, depth, K_SYN.copy(), T_world_camera, stamp_ns=index * 100_000_000, index=index,
                 source_name="rendered")


def project_box(T_world_camera: np.ndarray, box: np.ndarray, margin: float = 3.0) -> np.ndarray:
    """(4,) pixel box (x0, y0, x1, y1) around the projection of a 3D box, like a detector's."""
    corners = transform_points(np.linalg.inv(T_world_camera), box_corners(box)[0])
    uv = corners[:, :2] / corners[:, 2:3] * [K_SYN[0, 0], K_SYN[1, 1]] + K_SYN[:2, 2]
    return np.array(
        [uv[:, 0].min() - margin, uv[:, 1].min() - margin, uv[:, 0].max() + margin, uv[:, 1].max() + margin]
    )
