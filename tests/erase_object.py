"""Test helper: a constructed change on real data, an object erased from redkitchen frames (depth and colour).

The object is given as a 9-DoF box in the run's world (gravity-aligned: the recorded world turned by the
source's ``T_align``). In each frame, the depth pixels whose points lie in the box (grown a little) are the
object; their depth becomes what the camera would have seen without it: the ray's meeting with the plane
it stands on (the box's bottom, the table top) where that lies farther, else the farthest depth around
it. The same pixels, mapped into the colour image (7-Scenes' colour is not registered to depth:
depth_px = c + 1.105 (colour_px - c) + (7, 2)) and widened, are inpainted in the colour (OpenCV Telea), so
no detector finds what is not there. Written with numpy and OpenCV, independently of embodied_ros.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
from layouts import KITCHEN
from scipy.spatial.transform import Rotation

K_DEPTH = np.array([[585.0, 0.0, 320.0], [0.0, 585.0, 240.0], [0.0, 0.0, 1.0]])
_SCALE, _OFFSET = 1.105, np.array([7.0, 2.0])


def _box_frame(box: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, half extents) of a 9-DoF box (R = Rz(alpha) Rx(beta) Ry(gamma))."""
    R = Rotation.from_euler("ZXY", box[6:9]).as_matrix()
    return R, 0.5 * np.asarray(box[3:6])


def erase_in_frame(color_bgr: np.ndarray, depth_mm: np.ndarray, T_world_camera: np.ndarray, box: np.ndarray,
                   grow: float = 0.04, colour_widen_px: int = 12) -> tuple[np.ndarray, np.ndarray, int]:
    """The frame without the object in ``box`` (world of ``T_world_camera``); also the pixels erased."""
    h, w = depth_mm.shape
    z = depth_mm.astype(np.float64) / 1000.0
    u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
    rays = np.stack([(u - K_DEPTH[0, 2]) / K_DEPTH[0, 0], (v - K_DEPTH[1, 2]) / K_DEPTH[1, 1], np.ones_like(u)], -1)
    world = (rays * z[..., None]) @ T_world_camera[:3, :3].T + T_world_camera[:3, 3]
    R, half = _box_frame(box)
    local = (world - box[:3]) @ R
    mask = (z > 0) & np.all(np.abs(local) <= half + grow, axis=-1)
    mask = cv2.dilate(mask.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
    if not mask.any():
        return color_bgr, depth_mm, 0
    # Where the ray meets the plane the object stands on (world z up at the box's bottom).
    d = rays @ T_world_camera[:3, :3].T  # world ray direction per unit of depth
    support = box[2] - half[2]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (support - T_world_camera[2, 3]) / d[..., 2]
    ring = (cv2.dilate(mask.astype(np.uint8), np.ones((15, 15), np.uint8)) > 0) & ~mask & (z > 0)
    far = np.percentile(z[ring], 90) if ring.any() else 0.0
    new = np.where(np.isfinite(t) & (t > z) & (t < 6.0), t, np.maximum(far, z))
    depth = depth_mm.copy()
    depth[mask] = np.round(1000.0 * new[mask]).astype(depth_mm.dtype)
    # The same pixels in the colour image, widened, inpainted.
    ys, xs = np.nonzero(mask)
    c = K_DEPTH[:2, 2]
    colour_px = c + (np.stack([xs, ys], 1) - c - _OFFSET) / _SCALE
    cmask = np.zeros(color_bgr.shape[:2], np.uint8)
    cx = np.clip(np.round(colour_px[:, 0]).astype(int), 0, color_bgr.shape[1] - 1)
    cy = np.clip(np.round(colour_px[:, 1]).astype(int), 0, color_bgr.shape[0] - 1)
    cmask[cy, cx] = 1
    cmask = cv2.dilate(cmask, np.ones((2 * colour_widen_px + 1, 2 * colour_widen_px + 1), np.uint8))
    color = cv2.inpaint(color_bgr, cmask, 7, cv2.INPAINT_TELEA)
    return color, depth, int(mask.sum())


def write_erased_kitchen(dst: Path, numbers: list[int], box_world: np.ndarray, T_align: np.ndarray) -> int:
    """A 7-Scenes folder of the redkitchen frames ``numbers`` with the object of ``box_world`` (the run's
    gravity-aligned world, ``T_align`` the source's alignment) erased; returns the pixels erased in all."""
    dst.mkdir()
    for name in ("camera-intrinsics.txt", "gravity-direction.txt"):
        shutil.copy(KITCHEN / name, dst / name)
    erased = 0
    for n in numbers:
        stem = f"frame-{n:06d}"
        shutil.copy(KITCHEN / f"{stem}.pose.txt", dst / f"{stem}.pose.txt")
        T = T_align @ np.loadtxt(KITCHEN / f"{stem}.pose.txt")
        color = cv2.imread(str(KITCHEN / f"{stem}.color.jpg"))
        depth = cv2.imread(str(KITCHEN / f"{stem}.depth.png"), cv2.IMREAD_UNCHANGED)
        color, depth, k = erase_in_frame(color, depth, T, box_world)
        erased += k
        cv2.imwrite(str(dst / f"{stem}.color.jpg"), color, [cv2.IMWRITE_JPEG_QUALITY, 95])
        cv2.imwrite(str(dst / f"{stem}.depth.png"), depth)
    return erased
