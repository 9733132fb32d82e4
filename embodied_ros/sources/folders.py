"""Posed RGB-D folders on disk: the 3DMatch/7-Scenes layout and the EmbodiedScan demo layout."""

from __future__ import annotations

import logging
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import cv2
import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from ..geometry.transforms import camera_pose_from_body, gravity_alignment
from ..messages.convert import matrix_from_quat_xyzw
from .base import FrameSource
from .images import read_color_file, read_depth_file

log = logging.getLogger(__name__)

SEVEN_SCENES_FPS = 30

# Kinect v1 colour -> depth pixel mapping of the 7-Scenes recordings (colour is not registered):
# depth_px = c + scale * (colour_px - c) + offset, c = principal point of the depth intrinsics.
# Fitted on colour gradients under depth edges of 50 redkitchen frames (the depth K has
# f = 585; the colour camera behaves like f ~ 529); a pure shift scores worse than none.
SEVEN_SCENES_DEPTH_SCALE = 1.105
SEVEN_SCENES_DEPTH_OFFSET_PX = (7.0, 2.0)
"""Frame rate of the Kinect v1 recordings in 7-Scenes; frame stamps are frame number / 30 s."""

# EmbodiedScan demo: camera (optical) axes expressed in the body frame (x forward, y left, z up).

_FRAME_FILE = re.compile(r"^frame-(\d+)\.(color\.jpg|color\.png|depth\.png|pose\.txt)$")


def _read_matrix(path: Path, shapes: tuple[tuple[int, int], ...], what: str) -> np.ndarray:
    """A whitespace-separated matrix file of one of ``shapes``; InputError when unusable."""
    if not path.is_file():
        raise InputError(f"{what} file {path} is missing")
    try:
        values = np.loadtxt(path, dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise InputError(f"{what} file {path} is not a numeric matrix ({' '.join(str(err).split())})") from None
    if values.shape not in shapes or not np.all(np.isfinite(values)):
        wanted = " or ".join(f"{r}x{c}" for r, c in shapes)
        raise InputError(f"{what} file {path} must hold a finite {wanted} matrix, found shape {values.shape}")
    return values


def register_color_to_depth(
    color: np.ndarray, K: np.ndarray, scale: float, offset_px: tuple[float, float]
) -> np.ndarray:
    """Resample a colour image into the depth camera's pixels (an affine colour/depth mapping).

    Args:
        color: (H, W, 3) uint8 colour image.
        K: (3, 3) depth intrinsics; its principal point is the centre of the scale.
        scale, offset_px: depth_px = c + scale * (colour_px - c) + offset_px.

    Returns:
        (H, W, 3) uint8 colour aligned with depth; pixels that fall outside the colour image
        are black.
    """
    c = K[:2, 2]
    # Inverse map, depth pixel -> colour pixel: colour = c + (depth - c - offset) / scale.
    shift = c - (c + np.asarray(offset_px, dtype=np.float64)) / scale
    M = np.array([[1.0 / scale, 0.0, shift[0]], [0.0, 1.0 / scale, shift[1]]])
    h, w = color.shape[:2]
    return cv2.warpAffine(color, M, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def _check_sizes(color: np.ndarray, depth: np.ndarray, color_path: Path, depth_path: Path) -> None:
    if color.shape[:2] != depth.shape:
        raise FrameError(
            f"{depth_path.name} is {depth.shape[1]}x{depth.shape[0]} but {color_path.name} is "
            f"{color.shape[1]}x{color.shape[0]} in {depth_path.parent} (depth must be registered to colour)"
        )


class SevenScenesFolder(FrameSource):
    """Frames of a 3DMatch / 7-Scenes sequence folder.

    Layout: ``frame-NNNNNN.color.jpg`` (or .png), ``frame-NNNNNN.depth.png`` (uint16 mm;
    0 and 65535 mean no depth), ``frame-NNNNNN.pose.txt`` (4x4 camera-to-world, OpenCV camera
    axes), ``camera-intrinsics.txt`` (3x3) and, optionally, ``gravity-direction.txt`` (gravity
    in the world frame). With ``gravity_align`` and that file, the world is rotated so z is up
    (``T_world_camera = T_align @ pose``, the smallest such rotation, so no yaw is added).

    Stamps: frame number / 30 fps, in integer nanoseconds (the files carry no time).
    Index: position in the sorted list of frame numbers (frame numbers may skip, e.g. every
    10th frame).

    The 7-Scenes colour images are NOT registered to depth (separate Kinect v1 colour and
    depth cameras). With ``register_color`` (default) the colour image is resampled into the
    depth camera with SEVEN_SCENES_DEPTH_SCALE / _OFFSET_PX, so frames meet the Frame contract
    (depth registered to colour, one K); without it colour is delivered as recorded.

    Raises:
        InputError: missing folder or intrinsics, a bad gravity file, or no frame files.
    """

    def __init__(self, path: str | Path, gravity_align: bool = True, register_color: bool = True) -> None:
        self.path = Path(path)
        self.register_color = register_color
        self.name = str(self.path)
        if not self.path.is_dir():
            raise InputError(f"7-Scenes folder {self.path} does not exist or is not a folder")
        self.K = _read_matrix(self.path / "camera-intrinsics.txt", ((3, 3),), "intrinsics")
        stems: dict[int, str] = {}  # frame number -> "frame-NNNNNN" as the files spell it
        for entry in self.path.iterdir():
            match = _FRAME_FILE.match(entry.name)
            if match:
                stems.setdefault(int(match.group(1)), f"frame-{match.group(1)}")
        if not stems:
            raise InputError(f"7-Scenes folder {self.path} has no frame-NNNNNN.color.jpg/depth.png/pose.txt files")
        self._numbers = sorted(stems)
        self._stems = stems
        self.T_align = np.eye(4)
        self.gravity_aligned = False
        gravity_file = self.path / "gravity-direction.txt"
        if gravity_align and gravity_file.is_file():
            gravity = _read_matrix(gravity_file, ((3, 1), (1, 3)), "gravity").reshape(3)
            try:
                self.T_align = gravity_alignment(gravity)
            except ValueError as err:
                raise InputError(f"gravity file {gravity_file}: {err}") from None
            self.gravity_aligned = True
        elif gravity_align:
            log.warning("%s has no gravity-direction.txt: the world frame is not known to be z-up", self.path)

    def __len__(self) -> int:
        return len(self._numbers)

    def stamp_ns(self, number: int) -> int:
        """Capture time of frame ``number``: number / 30 fps, rounded to the nanosecond."""
        return (number * 1_000_000_000 + SEVEN_SCENES_FPS // 2) // SEVEN_SCENES_FPS

    def read(self, index: int) -> Frame:
        """Frame at position ``index`` (0-based).

        Raises:
            IndexError: index out of range.
            FrameError: a file of this frame is missing or unreadable, sizes differ, or the
                pose is not a finite rigid transform.
        """
        if not 0 <= index < len(self._numbers):
            raise IndexError(f"frame index {index} out of range (0..{len(self._numbers) - 1})")
        number = self._numbers[index]
        stem = self.path / self._stems[number]
        color_path = stem.parent / f"{stem.name}.color.jpg"
        if not color_path.is_file() and (stem.parent / f"{stem.name}.color.png").is_file():
            color_path = stem.parent / f"{stem.name}.color.png"
        depth_path, pose_path = stem.parent / f"{stem.name}.depth.png", stem.parent / f"{stem.name}.pose.txt"
        missing = [p.name for p in (color_path, depth_path, pose_path) if not p.is_file()]
        if missing:
            raise FrameError(f"frame {index} ({stem}): missing {', '.join(missing)}")
        color = read_color_file(color_path)
        depth = read_depth_file(depth_path, invalid_values=(65535,))
        _check_sizes(color, depth, color_path, depth_path)
        if self.register_color:
            color = register_color_to_depth(color, self.K, SEVEN_SCENES_DEPTH_SCALE, SEVEN_SCENES_DEPTH_OFFSET_PX)
        try:
            pose = np.loadtxt(pose_path, dtype=np.float64, ndmin=2)
        except ValueError as err:
            raise FrameError(f"{pose_path}: not a numeric 4x4 matrix ({' '.join(str(err).split())})") from None
        if pose.shape != (4, 4):
            raise FrameError(f"{pose_path}: pose has shape {pose.shape}, expected (4, 4)")
        return Frame(
            color=color,
            depth=depth,
            K=self.K.copy(),
            T_world_camera=self.T_align @ pose,
            stamp_ns=self.stamp_ns(number),
            index=index,
            source_name=str(stem),
            extras={"frame_number": number},
        )


def _stamp_ns(text: str) -> int:
    """Seconds as written (e.g. "1700000000.123456") -> integer ns, without float rounding."""
    return int((Decimal(text) * 1_000_000_000).to_integral_value())


class EmbodiedScanDemoFolder(FrameSource):
    """Frames of a recording in the EmbodiedScan in-the-wild demo layout.

    Layout: ``poses.txt`` (first line is a header and skipped; then one line per frame,
    ``timestamp x y z qx qy qz qw``: the body pose in the recording's world, body axes
    x forward, y left, z up, quaternion in x y z w order), ``rgb/<timestamp>.jpg``,
    ``depth/<timestamp>.png`` (uint16 mm, registered to colour), ``intrinsic.txt`` (4x4,
    top-left 3x3 used; a 3x3 file is accepted) and optionally ``axis_align_matrix.txt`` (4x4
    world -> z-up world). As in the demo, camera rotation = R(q) @ BODY_TO_OPTICAL,
    ``T_world_camera = axis_align @ [R | xyz]``; without the matrix it is the identity, a
    warning is logged and ``gravity_aligned`` is False.

    File matching: ``<timestamp>`` is the first token of the poses.txt line, as written. When
    no file has that exact name, a file whose name is the same number written differently
    (e.g. "12.50" vs "12.5") is used. Stamps are that number in seconds, as integer ns.

    Raises:
        InputError: missing folder, poses.txt or intrinsic.txt, a bad axis-align matrix, or
            no pose lines.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        if not self.path.is_dir():
            raise InputError(f"EmbodiedScan demo folder {self.path} does not exist or is not a folder")
        poses_file = self.path / "poses.txt"
        if not poses_file.is_file():
            raise InputError(f"EmbodiedScan demo folder {self.path} has no poses.txt")
        lines = poses_file.read_text().splitlines()[1:]
        # (line number in poses.txt, tokens); blank lines are not frames
        self._lines = [(n, line.split()) for n, line in enumerate(lines, start=2) if line.strip()]
        if not self._lines:
            raise InputError(f"{poses_file} has no pose lines after its header line")
        self.K = _read_matrix(self.path / "intrinsic.txt", ((4, 4), (3, 3)), "intrinsics")[:3, :3].copy()
        align_file = self.path / "axis_align_matrix.txt"
        if align_file.is_file():
            self.T_align = _read_matrix(align_file, ((4, 4),), "axis-align")
            self.gravity_aligned = True
        else:
            log.warning("%s has no axis_align_matrix.txt: the world frame is not known to be z-up", self.path)
            self.T_align = np.eye(4)
            self.gravity_aligned = False
        self._rgb = self._index_files(self.path / "rgb")
        self._depth = self._index_files(self.path / "depth")

    @staticmethod
    def _index_files(folder: Path) -> dict[str, Path]:
        """{file stem: path} of a folder (empty when the folder is missing)."""
        if not folder.is_dir():
            return {}
        return {p.stem: p for p in sorted(folder.iterdir()) if p.is_file()}

    @staticmethod
    def _find(files: dict[str, Path], timestamp: str, suffixes: tuple[str, ...]) -> Path | None:
        exact = files.get(timestamp)
        if exact is not None and exact.suffix.lower() in suffixes:
            return exact
        try:
            wanted = Decimal(timestamp)
        except InvalidOperation:
            return None
        for stem, p in files.items():
            if p.suffix.lower() not in suffixes:
                continue
            try:
                if Decimal(stem) == wanted:
                    return p
            except InvalidOperation:
                continue
        return None

    def __len__(self) -> int:
        return len(self._lines)

    def read(self, index: int) -> Frame:
        """Frame of the ``index``-th pose line (0-based, header excluded).

        Raises:
            IndexError: index out of range.
            FrameError: a malformed pose line, missing or unreadable images, sizes that
                differ, or a pose that is not a finite rigid transform.
        """
        if not 0 <= index < len(self._lines):
            raise IndexError(f"frame index {index} out of range (0..{len(self._lines) - 1})")
        line_no, tokens = self._lines[index]
        where = f"{self.path / 'poses.txt'} line {line_no}"
        if len(tokens) != 8:
            raise FrameError(f"{where}: expected 'timestamp x y z qx qy qz qw', found {len(tokens)} fields")
        timestamp = tokens[0]
        try:
            stamp_ns = _stamp_ns(timestamp)
            x, y, z, qx, qy, qz, qw = (float(v) for v in tokens[1:])
            R_body = matrix_from_quat_xyzw(np.array([qx, qy, qz, qw]))
        except (InvalidOperation, ValueError) as err:
            raise FrameError(f"{where}: {' '.join(str(err).split()) or 'not a number'}") from None
        T_pose = camera_pose_from_body(R_body, np.array([x, y, z]))
        color_path = self._find(self._rgb, timestamp, (".jpg", ".jpeg", ".png"))
        depth_path = self._find(self._depth, timestamp, (".png",))
        if color_path is None or depth_path is None:
            missing = [f"{sub}/{timestamp}{ext}" for sub, ext, found in
                       (("rgb", ".jpg", color_path), ("depth", ".png", depth_path)) if found is None]
            raise FrameError(f"frame {index} ({self.path}): missing {', '.join(missing)}")
        color = read_color_file(color_path)
        depth = read_depth_file(depth_path)
        _check_sizes(color, depth, color_path, depth_path)
        return Frame(
            color=color,
            depth=depth,
            K=self.K.copy(),
            T_world_camera=self.T_align @ T_pose,
            stamp_ns=stamp_ns,
            index=index,
            source_name=str(color_path),
            extras={"timestamp": timestamp},
        )
