"""Posed RGB-D folders on disk: the 3DMatch/7-Scenes layout and the EmbodiedScan demo layout."""

from __future__ import annotations

import logging
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from ..geometry.transforms import camera_pose_from_body, gravity_alignment, matrix_from_quat_xyzw
from .base import FrameSource
from .camera_checks import check_intrinsics
from .images import read_color_file, read_depth_file
from .registration import (
    SEVEN_SCENES_AFFINE_OFFSET_PX,
    SEVEN_SCENES_AFFINE_SCALE,
    Registration,
    is_seven_scenes_intrinsics,
    register_color,
    resolve_registration,
)

log = logging.getLogger(__name__)

SEVEN_SCENES_FPS = 30
"""Frame rate of the Kinect v1 recordings in 7-Scenes; frame stamps are frame number / 30 s."""

# The 7-Scenes affine colour -> depth mapping under its older names (lifting's tests use them).
SEVEN_SCENES_DEPTH_SCALE = SEVEN_SCENES_AFFINE_SCALE
SEVEN_SCENES_DEPTH_OFFSET_PX = SEVEN_SCENES_AFFINE_OFFSET_PX

_FRAME_FILE = re.compile(r"^frame-(\d+)\.(color\.jpg|color\.png|depth\.png|pose\.txt)$")


def read_matrix(path: Path, shapes: tuple[tuple[int, int], ...], what: str) -> np.ndarray:
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


def read_intrinsics(path: Path, shapes: tuple[tuple[int, int], ...], what: str = "intrinsics") -> np.ndarray:
    """The (3, 3) K of a 3x3 or 4x4 matrix file, checked (``check_intrinsics``)."""
    return check_intrinsics(read_matrix(path, shapes, what)[:3, :3].copy(), f"{what} file {path}")


def _here_or_above(folder: Path, name: str) -> Path:
    """``folder/name``, else ``folder/../name`` when only that exists (3DMatch scene files)."""
    here, above = folder / name, folder.parent / name
    return above if not here.is_file() and above.is_file() else here


def read_rgbd(color_path: Path, depth_path: Path, K: np.ndarray, registration: Registration,
              units_per_metre: float = 1000.0) -> tuple[np.ndarray, np.ndarray]:
    """Colour and depth image files -> (RGB on the depth grid, depth in metres); FrameError names the file."""
    color = read_color_file(color_path)
    depth = read_depth_file(depth_path, units_per_metre=units_per_metre)
    check_sizes(color, depth, color_path, depth_path)
    return register_color(registration, color, depth, K), depth


def check_sizes(color: np.ndarray, depth: np.ndarray, color_path: Path, depth_path: Path) -> None:
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

    3DMatch scenes keep ``camera-intrinsics.txt`` (and ``gravity-direction.txt``) in the scene
    folder above their ``seq-XX`` folders: both are looked for here, then one folder up.

    Registration (``registration``, see sources.registration): AUTO gives 7-Scenes recordings
    (their depth intrinsics f 585, c (320, 240)) the 7-Scenes Kinect v1 colour correction, so
    frames meet the Frame contract (depth registered to colour, one K); any other folder of
    this layout is taken as registered.

    Raises:
        InputError: missing folder or intrinsics, a bad gravity file, no frame files, or a
            registration model this layout cannot apply.
    """

    layout = "7-Scenes / 3DMatch sequence folder"

    def __init__(self, path: str | Path, gravity_align: bool = True,
                 registration: Registration | str = Registration.AUTO) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        if not self.path.is_dir():
            raise InputError(f"7-Scenes folder {self.path} does not exist or is not a folder")
        intrinsics = _here_or_above(self.path, "camera-intrinsics.txt")
        if not intrinsics.is_file():
            raise InputError(f"7-Scenes folder {self.path}: no camera-intrinsics.txt in it or in its parent folder")
        self.K = read_intrinsics(intrinsics, ((3, 3),))
        self.intrinsics_note = str(intrinsics)
        stems: dict[int, str] = {}  # frame number -> "frame-NNNNNN" as the files spell it
        for entry in self.path.iterdir():
            match = _FRAME_FILE.match(entry.name)
            if match:
                stems.setdefault(int(match.group(1)), f"frame-{match.group(1)}")
        if not stems:
            raise InputError(f"7-Scenes folder {self.path} has no frame-NNNNNN.color.jpg/depth.png/pose.txt files")
        self._numbers = sorted(stems)
        self._stems = stems
        self.registration, self.registration_note = resolve_registration(
            registration, self.name, seven_scenes=is_seven_scenes_intrinsics(self.K))
        self.T_align = np.eye(4)
        self.gravity_aligned = False
        gravity_file = _here_or_above(self.path, "gravity-direction.txt")
        if gravity_align and gravity_file.is_file():
            gravity = read_matrix(gravity_file, ((3, 1), (1, 3)), "gravity").reshape(3)
            try:
                self.T_align = gravity_alignment(gravity)
            except ValueError as err:
                raise InputError(f"gravity file {gravity_file}: {err}") from None
            self.gravity_aligned = True
            self.gravity_note = f"given by {gravity_file}"
        else:
            self.gravity_note = "not given (no gravity-direction.txt)" if gravity_align else "alignment turned off"
            log.info("%s: %s: the world frame is not known to be z-up", self.path, self.gravity_note)

    def __len__(self) -> int:
        return len(self._numbers)

    @property
    def frame_numbers(self) -> list[int]:
        """The frame numbers of the files, ascending (position = frame index)."""
        return self._numbers

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
        check_sizes(color, depth, color_path, depth_path)
        color = register_color(self.registration, color, depth, self.K)
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

    layout = "EmbodiedScan demo folder"

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
        self.K = read_intrinsics(self.path / "intrinsic.txt", ((4, 4), (3, 3)))
        self.intrinsics_note = str(self.path / "intrinsic.txt")
        align_file = self.path / "axis_align_matrix.txt"
        if align_file.is_file():
            self.T_align = read_matrix(align_file, ((4, 4),), "axis-align")
            self.gravity_aligned = True
            self.gravity_note = f"given by {align_file}"
        else:
            self.gravity_note = "not given (no axis_align_matrix.txt)"
            log.info("%s: %s: the world frame is not known to be z-up", self.path, self.gravity_note)
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
        check_sizes(color, depth, color_path, depth_path)
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
