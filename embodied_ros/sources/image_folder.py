"""Any folder of colour and depth images plus a trajectory file, with intrinsics and depth scale as options."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from .base import FrameSource
from .folders import check_intrinsics, read_intrinsics, read_rgbd
from .registration import Registration, resolve_registration
from .trajectory import MATCH_NS, read_trajectory, stamp_ns
from .tum import associate

COLOR_FOLDERS = ("rgb", "color", "colour", "image", "images")
DEPTH_FOLDERS = ("depth",)
TRAJECTORY_FILES = ("trajectory.txt", "traj.txt", "poses.txt", "groundtruth.txt", "camera_poses.txt")
INTRINSICS_FILES = ("camera-intrinsics.txt", "intrinsics.txt", "intrinsic.txt", "K.txt")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
DEFAULT_FPS = 30  # stamps of frames whose names carry no time


def image_folders(path: Path) -> tuple[Path, Path] | None:
    """(colour folder, depth folder) of an image-folder recording, or None when it is not one."""
    color = next((path / n for n in COLOR_FOLDERS if (path / n).is_dir()), None)
    depth = next((path / n for n in DEPTH_FOLDERS if (path / n).is_dir()), None)
    return (color, depth) if color is not None and depth is not None else None


def _natural_key(path: Path) -> list:
    """frame2 before frame10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path.stem)]


def _images(folder: Path) -> list[Path]:
    return sorted((p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES), key=_natural_key)


def _seconds(stems: list[str]) -> np.ndarray | None:
    """File stems as timestamps in ns when every one is a number of seconds, else None."""
    try:
        return np.array([stamp_ns(s) for s in stems], dtype=np.int64)
    except ValueError:
        return None


class ImageFolder(FrameSource):
    """Frames of a folder with ``rgb/`` (or color/, colour/, image/, images/), ``depth/`` and a trajectory.

    Colour and depth images are paired by equal file names, else by order when both folders
    hold as many, else by time when the names are seconds (within 20 ms). Poses come from
    ``poses`` or the first of TRAJECTORY_FILES in the folder (formats in sources.trajectory):
    timestamped lines are looked up at each colour image's time (its name in seconds, e.g.
    ``1305031102.175304.png``), or taken in order when the names are not times and there are as
    many poses as images; matrices are taken in frame order.

    Intrinsics ``intrinsics`` (fx, fy, cx, cy), else a 3x3/4x4 matrix file of INTRINSICS_FILES
    in the folder; depth ``depth_factor`` per metre (default 1000: millimetres). Colour and
    depth are taken as registered (AUTO registration: none).

    Raises:
        InputError: no colour/depth folders, no trajectory or intrinsics, images that cannot
            be paired, or a trajectory that does not fit the images.
    """

    layout = "image folder + trajectory"

    def __init__(self, path: str | Path, intrinsics: tuple[float, float, float, float] | None = None,
                 depth_factor: float | None = None, poses: Path | None = None,
                 registration: Registration | str = Registration.AUTO) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        folders = image_folders(self.path)
        if folders is None:
            raise InputError(f"image folder {self.path} needs a colour folder ({', '.join(COLOR_FOLDERS)}) "
                             "and a depth/ folder")
        colors, depths = _images(folders[0]), _images(folders[1])
        if not colors:
            raise InputError(f"image folder {self.path}: {folders[0].name}/ holds no .jpg/.png images")
        self._pairs, pairing = self._pair(colors, depths)
        trajectory = Path(poses) if poses is not None else next(
            (self.path / n for n in TRAJECTORY_FILES if (self.path / n).is_file()), None)
        if trajectory is None:
            raise InputError(f"image folder {self.path} has no trajectory ({', '.join(TRAJECTORY_FILES)}); "
                             "pass --poses FILE")
        self.trajectory = read_trajectory(trajectory)
        self._stamps = self._name_times()
        if self._stamps is None and len(self.trajectory) != len(self._pairs):
            why = "image names are not times in its span, so" if self.trajectory.stamps_ns is not None else ""
            raise InputError(f"image folder {self.path}: {len(self.trajectory)} poses in {trajectory.name} for "
                             f"{len(self._pairs)} images ({why} one pose per image in order expected)")
        self.K, self.intrinsics_note = self._intrinsics(intrinsics)
        self.depth_factor = float(depth_factor or 1000.0)
        self.registration, self.registration_note = resolve_registration(registration, self.name)
        self.details = (f"colour {folders[0].name}/ and depth {folders[1].name}/ paired {pairing}; depth factor "
                        f"{self.depth_factor:g} per metre" + ("" if depth_factor else " (millimetres; --depth-factor "
                        "for others)") + f"; poses: {trajectory.name}, {self.trajectory.form}")

    def _pair(self, colors: list[Path], depths: list[Path]) -> tuple[list[tuple[Path, Path | None]], str]:
        by_stem = {d.stem: d for d in depths}
        if all(c.stem in by_stem for c in colors):
            return [(c, by_stem[c.stem]) for c in colors], "by file name"
        if len(colors) == len(depths):
            return list(zip(colors, depths, strict=True)), "in order"
        c_ns, d_ns = _seconds([c.stem for c in colors]), _seconds([d.stem for d in depths])
        if c_ns is None or d_ns is None:
            raise InputError(f"image folder {self.path}: {len(colors)} colour and {len(depths)} depth images whose "
                             "names neither match nor are times: cannot pair them")
        order = np.argsort(d_ns)
        matched = associate(c_ns, d_ns[order], MATCH_NS)
        return [(c, depths[order[matched[i]]] if i in matched else None) for i, c in enumerate(colors)], \
            f"by time (names in seconds, within {MATCH_NS / 1e6:g} ms)"

    def _name_times(self) -> np.ndarray | None:
        """Colour images' times from their names, when the trajectory is timestamped and they fall in its span."""
        track = self.trajectory.stamps_ns
        stamps = _seconds([c.stem for c, _ in self._pairs]) if track is not None else None
        if stamps is None or track is None:
            return None
        inside = (stamps >= track[0] - 1_000_000_000) & (stamps <= track[-1] + 1_000_000_000)
        return stamps if inside.mean() > 0.5 else None  # frame numbers, not times

    def _intrinsics(self, given: tuple[float, float, float, float] | None) -> tuple[np.ndarray, str]:
        if given is not None:
            fx, fy, cx, cy = given
            return check_intrinsics(np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]]),
                                    "--intrinsics"), "given (--intrinsics)"
        for name in INTRINSICS_FILES:
            if (self.path / name).is_file():
                return read_intrinsics(self.path / name, ((3, 3), (4, 4))), name
        raise InputError(f"image folder {self.path}: no intrinsics file ({', '.join(INTRINSICS_FILES)}); "
                         "pass --intrinsics FX FY CX CY")

    def __len__(self) -> int:
        return len(self._pairs)

    def read(self, index: int) -> Frame:
        """Frame of the ``index``-th colour image in name order.

        Raises:
            IndexError: index out of range.
            FrameError: no depth image or pose for it, unreadable images, sizes that differ.
        """
        if not 0 <= index < len(self._pairs):
            raise IndexError(f"frame index {index} out of range (0..{len(self._pairs) - 1})")
        color_path, depth_path = self._pairs[index]
        if depth_path is None:
            raise FrameError(f"frame {index} ({color_path}): no depth image within {MATCH_NS / 1e6:g} ms")
        if self._stamps is not None:
            stamp = int(self._stamps[index])
            pose = self.trajectory.pose_at(stamp, f"frame {index} ({color_path})")
        else:
            pose = self.trajectory.poses[index].copy()
            stamp = (int(self.trajectory.stamps_ns[index]) if self.trajectory.stamps_ns is not None
                     else (index * 1_000_000_000 + DEFAULT_FPS // 2) // DEFAULT_FPS)
        color, depth = read_rgbd(color_path, depth_path, self.K, self.registration, self.depth_factor)
        return Frame(color=color, depth=depth, K=self.K.copy(), T_world_camera=pose, stamp_ns=stamp, index=index,
                     source_name=str(color_path))
