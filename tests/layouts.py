"""Test helper: real redkitchen frames rewritten into the RGB-D layouts people record in.

Each writer takes frame numbers of ../shared/data/redkitchen (0, 10, ..., 990) and writes them,
with plain numpy/OpenCV and independently of embodied_ros, into ``dst`` in one layout. The poses
written are the recorded ones (camera-to-world, metres) unless ``pose_edit`` changes them (the
pose-convention tests write them inverted or in millimetres). Also used by
benchmarks/layout_runs.py to make the recordings of the closing notes.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
from scipy.spatial.transform import Rotation

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"
T0 = 1305031102.175304  # a TUM-like epoch time of the first frame, seconds
PoseEdit = Callable[[np.ndarray], np.ndarray]


def _identity(T: np.ndarray) -> np.ndarray:
    return T


def rigid_pose(n: int) -> np.ndarray:
    """The recorded pose of frame n, made exactly rigid (the text rounds R to 7 digits)."""
    T = np.loadtxt(KITCHEN / f"frame-{n:06d}.pose.txt")
    U, _, Vt = np.linalg.svd(T[:3, :3])
    T[:3, :3] = U @ Vt
    return T


def inverted(T: np.ndarray) -> np.ndarray:
    """World-to-camera instead of camera-to-world."""
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = T[:3, :3].T, -T[:3, :3].T @ T[:3, 3]
    return out


def millimetres(T: np.ndarray) -> np.ndarray:
    out = T.copy()
    out[:3, 3] *= 1000.0
    return out


def color(n: int) -> np.ndarray:
    """Frame n's colour as OpenCV BGR (decoded once from the JPEG)."""
    return cv2.imread(str(KITCHEN / f"frame-{n:06d}.color.jpg"))


def depth_mm(n: int) -> np.ndarray:
    return cv2.imread(str(KITCHEN / f"frame-{n:06d}.depth.png"), cv2.IMREAD_UNCHANGED)


def K() -> np.ndarray:
    return np.loadtxt(KITCHEN / "camera-intrinsics.txt")


def seven_scenes(dst: Path, numbers: list[int], gravity: bool = True, pose_edit: PoseEdit = _identity) -> Path:
    """A 7-Scenes sequence folder: frame-NNNNNN.{color.jpg,depth.png,pose.txt}, camera-intrinsics.txt."""
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(KITCHEN / "camera-intrinsics.txt", dst)
    if gravity:
        shutil.copy(KITCHEN / "gravity-direction.txt", dst)
    for n in numbers:
        for kind in ("color.jpg", "depth.png"):
            shutil.copy(KITCHEN / f"frame-{n:06d}.{kind}", dst)
        np.savetxt(dst / f"frame-{n:06d}.pose.txt", pose_edit(rigid_pose(n)))
    return dst


def threedmatch_scene(dst: Path, sequences: dict[str, list[int]]) -> Path:
    """A 3DMatch scene: camera-intrinsics.txt in the scene, seq-XX/frame-NNNNNN.{color.png,depth.png,pose.txt}
    numbered from 0 in each sequence (colour as PNG, as 3DMatch ships it)."""
    dst.mkdir(parents=True)
    shutil.copy(KITCHEN / "camera-intrinsics.txt", dst)
    for name, numbers in sequences.items():
        seq = dst / name
        seq.mkdir()
        for i, n in enumerate(numbers):
            cv2.imwrite(str(seq / f"frame-{i:06d}.color.png"), color(n))
            shutil.copy(KITCHEN / f"frame-{n:06d}.depth.png", seq / f"frame-{i:06d}.depth.png")
            np.savetxt(seq / f"frame-{i:06d}.pose.txt", rigid_pose(n))
    return dst


def tum_stamp(n: int) -> float:
    return T0 + n / 30.0


def _quaternion_line(t: float, T: np.ndarray) -> str:
    qx, qy, qz, qw = Rotation.from_matrix(T[:3, :3]).as_quat()
    return f"{t:.6f} " + " ".join(f"{v:.9f}" for v in (*T[:3, 3], qx, qy, qz, qw))


def tum(dst: Path, numbers: list[int], depth_lag_s: float = 0.012, pose_edit: PoseEdit = _identity) -> Path:
    """A TUM RGB-D sequence: rgb/<t>.png, depth/<t>.png (5000 per metre), rgb.txt, depth.txt, groundtruth.txt.

    Depth is stamped ``depth_lag_s`` after colour (as TUM's Kinect delivers it); ground truth
    holds two samples around each frame, 4 ms before and 6 ms after, with the frame's pose.
    """
    (dst / "rgb").mkdir(parents=True)
    (dst / "depth").mkdir()
    rgb_lines, depth_lines, gt = ["# color images"], ["# depth maps"], ["# timestamp tx ty tz qx qy qz qw"]
    for n in numbers:
        t = tum_stamp(n)
        cv2.imwrite(str(dst / "rgb" / f"{t:.6f}.png"), color(n))
        raw = depth_mm(n).astype(np.int64)
        cv2.imwrite(str(dst / "depth" / f"{t + depth_lag_s:.6f}.png"), np.clip(raw * 5, 0, 65535).astype(np.uint16))
        rgb_lines.append(f"{t:.6f} rgb/{t:.6f}.png")
        depth_lines.append(f"{t + depth_lag_s:.6f} depth/{t + depth_lag_s:.6f}.png")
        T = pose_edit(rigid_pose(n))
        gt += [_quaternion_line(t - 0.004, T), _quaternion_line(t + 0.006, T)]
    for name, lines in (("rgb.txt", rgb_lines), ("depth.txt", depth_lines), ("groundtruth.txt", gt)):
        (dst / name).write_text("\n".join(lines) + "\n")
    return dst


def scannet(dst: Path, numbers: list[int], color_scale: float = 2.025) -> Path:
    """A ScanNet export: color/<i>.jpg at ``color_scale`` x the depth size (1296x972 by default, like
    ScanNet's 1296x968), depth/<i>.png, pose/<i>.txt, intrinsic/{intrinsic,extrinsic}_{color,depth}.txt."""
    for sub in ("color", "depth", "pose", "intrinsic"):
        (dst / sub).mkdir(parents=True)
    K4 = np.eye(4)
    K4[:3, :3] = K()
    Kc = K4.copy()
    Kc[:2, :3] *= color_scale
    Kc[:2, 2] += (color_scale - 1) / 2  # pixel centres: u' + 0.5 = s (u + 0.5)
    np.savetxt(dst / "intrinsic" / "intrinsic_depth.txt", K4)
    np.savetxt(dst / "intrinsic" / "intrinsic_color.txt", Kc)
    for name in ("extrinsic_color.txt", "extrinsic_depth.txt"):
        np.savetxt(dst / "intrinsic" / name, np.eye(4))
    for i, n in enumerate(numbers):
        big = cv2.resize(color(n), None, fx=color_scale, fy=color_scale, interpolation=cv2.INTER_CUBIC)
        cv2.imwrite(str(dst / "color" / f"{i}.jpg"), big, [cv2.IMWRITE_JPEG_QUALITY, 95])
        shutil.copy(KITCHEN / f"frame-{n:06d}.depth.png", dst / "depth" / f"{i}.png")
        np.savetxt(dst / "pose" / f"{i}.txt", rigid_pose(n))
    return dst


def image_folder(dst: Path, numbers: list[int], trajectory: str = "matrices", pose_edit: PoseEdit = _identity) -> Path:
    """rgb/ and depth/ images plus trajectory.txt: ``matrices`` (one 4x4 per frame, names 000000.jpg ...)
    or ``tum`` (TUM lines, names are the frames' times in seconds)."""
    (dst / "rgb").mkdir(parents=True)
    (dst / "depth").mkdir()
    lines = []
    for i, n in enumerate(numbers):
        name = f"{tum_stamp(n):.6f}" if trajectory == "tum" else f"{i:06d}"
        shutil.copy(KITCHEN / f"frame-{n:06d}.color.jpg", dst / "rgb" / f"{name}.jpg")
        shutil.copy(KITCHEN / f"frame-{n:06d}.depth.png", dst / "depth" / f"{name}.png")
        T = pose_edit(rigid_pose(n))
        if trajectory == "tum":
            lines.append(_quaternion_line(tum_stamp(n), T))
        else:
            lines += [" ".join(f"{v:.9f}" for v in row) for row in T]
    (dst / "trajectory.txt").write_text("\n".join(lines) + "\n")
    return dst
