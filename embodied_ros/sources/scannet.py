"""ScanNet-style exports (what ScanNet's SensReader writes): ``color/``, ``depth/``, ``pose/``, ``intrinsic/``."""

from __future__ import annotations

import re
from pathlib import Path

import cv2
import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from ..geometry.transforms import invert_transform
from .base import FrameSource
from .folders import check_sizes, read_intrinsics, read_matrix
from .images import read_color_file, read_depth_file
from .registration import CameraPair, Registration, register_color, resolve_registration

SCANNET_FPS = 30  # the Structure sensor's rate; frame file numbers are capture numbers
_NUMBERED = re.compile(r"^(\d+)\.(jpg|jpeg|png)$", re.IGNORECASE)


class ScanNetExport(FrameSource):
    """Frames of a ScanNet export folder.

    Layout: ``color/<n>.jpg`` (e.g. 1296x968), ``depth/<n>.png`` (uint16 mm, e.g. 640x480),
    ``pose/<n>.txt`` (4x4 camera-to-world, OpenCV axes; ``-inf`` where tracking was lost: that
    frame is skipped), ``intrinsic/intrinsic_color.txt`` and ``intrinsic_depth.txt`` (4x4 or
    3x3), optionally ``extrinsic_color.txt`` / ``extrinsic_depth.txt`` (4x4, camera to the
    sensor rig; identity when absent).

    Frames live on the depth camera's grid with its K. Registration (AUTO: CALIBRATED) puts
    colour there by reprojecting each depth pixel into the colour camera; NONE resizes the
    colour image to the depth size instead (the usual shortcut, exact only when both cameras
    share a centre and field of view). Stamps: frame number / 30 fps.

    Raises:
        InputError: missing folders or intrinsics, or no numbered colour image.
    """

    layout = "ScanNet export (color/, depth/, pose/, intrinsic/)"

    def __init__(self, path: str | Path, registration: Registration | str = Registration.AUTO,
                 depth_factor: float | None = None) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        for sub in ("color", "depth", "pose", "intrinsic"):
            if not (self.path / sub).is_dir():
                raise InputError(f"ScanNet export {self.path} has no {sub}/ folder")
        colors = {int(m.group(1)): p for p in (self.path / "color").iterdir() if (m := _NUMBERED.match(p.name))}
        if not colors:
            raise InputError(f"ScanNet export {self.path}: color/ holds no numbered images (0.jpg, 1.jpg, ...)")
        self._numbers = sorted(colors)
        self._colors = colors
        intrinsic = self.path / "intrinsic"
        self.K = read_intrinsics(intrinsic / "intrinsic_depth.txt", ((4, 4), (3, 3)), "depth intrinsics")
        K_color = read_intrinsics(intrinsic / "intrinsic_color.txt", ((4, 4), (3, 3)), "colour intrinsics")
        extrinsics = [read_matrix(intrinsic / name, ((4, 4),), "extrinsics")
                      if (intrinsic / name).is_file() else np.eye(4)
                      for name in ("extrinsic_color.txt", "extrinsic_depth.txt")]
        self.pair = CameraPair(K_color, invert_transform(extrinsics[0]) @ extrinsics[1])
        self.intrinsics_note = "intrinsic/intrinsic_depth.txt (frames are on the depth camera's grid)"
        self.depth_factor = float(depth_factor or 1000.0)
        self.registration, self.registration_note = resolve_registration(registration, self.name, calibrated=True)
        if self.registration is Registration.NONE:
            self.registration_note += ", resized to the depth image's size"
        self.details = f"depth factor {self.depth_factor:g} per metre"

    def __len__(self) -> int:
        return len(self._numbers)

    def read(self, index: int) -> Frame:
        """Frame at position ``index`` of the sorted frame numbers.

        Raises:
            IndexError: index out of range.
            FrameError: missing or unreadable files, an invalid pose.
        """
        if not 0 <= index < len(self._numbers):
            raise IndexError(f"frame index {index} out of range (0..{len(self._numbers) - 1})")
        number = self._numbers[index]
        color_path = self._colors[number]
        depth_path, pose_path = self.path / "depth" / f"{number}.png", self.path / "pose" / f"{number}.txt"
        missing = [f"{p.parent.name}/{p.name}" for p in (depth_path, pose_path) if not p.is_file()]
        if missing:
            raise FrameError(f"frame {index} ({color_path}): missing {', '.join(missing)}")
        try:
            pose = np.loadtxt(pose_path, dtype=np.float64, ndmin=2)
        except ValueError:
            raise FrameError(f"{pose_path}: not a numeric 4x4 matrix") from None
        if pose.shape != (4, 4):
            raise FrameError(f"{pose_path}: pose has shape {pose.shape}, expected (4, 4)")
        color = read_color_file(color_path)
        depth = read_depth_file(depth_path, units_per_metre=self.depth_factor)
        if self.registration is Registration.NONE and color.shape[:2] != depth.shape:
            color = cv2.resize(color, depth.shape[::-1], interpolation=cv2.INTER_AREA)
        elif self.registration is not Registration.NONE:
            color = register_color(self.registration, color, depth, self.K, self.pair)
        check_sizes(color, depth, color_path, depth_path)
        return Frame(color=color, depth=depth, K=self.K.copy(), T_world_camera=pose,
                     stamp_ns=(number * 1_000_000_000 + SCANNET_FPS // 2) // SCANNET_FPS, index=index,
                     source_name=str(color_path), extras={"frame_number": number})
