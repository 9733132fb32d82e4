"""TUM RGB-D sequences: ``rgb.txt``, ``depth.txt``, ``groundtruth.txt`` and the images they list."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from .base import FrameSource
from .folders import check_intrinsics, read_rgbd
from .registration import Registration, resolve_registration
from .trajectory import MATCH_NS, read_trajectory, stamp_ns

log = logging.getLogger(__name__)

TUM_DEPTH_FACTOR = 5000.0
"""Depth PNG value of one metre in TUM RGB-D (16-bit, 0 = no depth)."""

TUM_INTRINSICS = {
    "freiburg1": (517.3, 516.5, 318.6, 255.3),
    "freiburg2": (520.9, 521.0, 325.1, 249.7),
    "freiburg3": (535.4, 539.2, 320.1, 247.6),
}
"""Published colour intrinsics (fx, fy, cx, cy) of the three TUM Kinects, by sequence name."""

ROS_DEFAULT_INTRINSICS = (525.0, 525.0, 319.5, 239.5)
"""What TUM recommends when the camera is unknown (the OpenNI default of the pre-registered depth)."""



def _read_list(path: Path) -> list[tuple[int, str]]:
    """``timestamp filename`` lines of rgb.txt / depth.txt -> [(stamp ns, filename)] in file order."""
    if not path.is_file():
        raise InputError(f"TUM sequence {path.parent} has no {path.name}")
    entries = []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        try:
            if len(fields) != 2:
                raise ValueError(f"expected 'timestamp filename', found {len(fields)} fields")
            entries.append((stamp_ns(fields[0]), fields[1]))
        except ValueError as err:
            raise InputError(f"{path} line {n}: {err}") from None
    if not entries:
        raise InputError(f"{path} lists no images")
    return entries


def associate(a_ns: np.ndarray, b_ns: np.ndarray, tolerance_ns: int) -> dict[int, int]:
    """Pair stamps of two streams, closest pairs first, each used once (as TUM's associate.py does).

    Returns:
        {index into a: index into b} for the pairs within ``tolerance_ns``.
    """
    pairs = []
    for i, t in enumerate(a_ns):
        lo, hi = np.searchsorted(b_ns, [t - tolerance_ns, t + tolerance_ns + 1])
        pairs += [(abs(int(b_ns[j]) - int(t)), i, int(j)) for j in range(lo, hi)]
    matched: dict[int, int] = {}
    used: set[int] = set()
    for _, i, j in sorted(pairs):
        if i not in matched and j not in used:
            matched[i] = j
            used.add(j)
    return matched


class TumFolder(FrameSource):
    """Frames of a TUM RGB-D sequence folder.

    One frame per line of ``rgb.txt``; its depth is the ``depth.txt`` image nearest in time
    (within 20 ms, each used once), its pose ``groundtruth.txt`` (or ``poses``, TUM lines)
    interpolated at the colour stamp. Depth is 16-bit PNG at 5000 per metre unless
    ``depth_factor`` says otherwise. Intrinsics: ``intrinsics`` (fx, fy, cx, cy), else the
    published ones of the Kinect the folder name names (freiburg1/2/3), else the ROS default
    TUM recommends. TUM's depth is registered to colour (AUTO registration: none).

    Raises:
        InputError: missing lists or trajectory, a trajectory without timestamps, or no
            colour image.
    """

    layout = "TUM RGB-D sequence"

    def __init__(self, path: str | Path, intrinsics: tuple[float, float, float, float] | None = None,
                 depth_factor: float | None = None, registration: Registration | str = Registration.AUTO,
                 poses: Path | None = None) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        self._rgb = _read_list(self.path / "rgb.txt")
        depth = _read_list(self.path / "depth.txt")
        trajectory_file = Path(poses) if poses is not None else self.path / "groundtruth.txt"
        if not trajectory_file.is_file():
            raise InputError(f"TUM sequence {self.path}: no trajectory {trajectory_file.name} (or pass --poses FILE)")
        self.trajectory = read_trajectory(trajectory_file)
        if self.trajectory.stamps_ns is None:
            raise InputError(f"TUM sequence {self.path}: {trajectory_file} has no timestamps ({self.trajectory.form}); "
                             "expected lines 't tx ty tz qx qy qz qw'")
        self.depth_factor = float(depth_factor or TUM_DEPTH_FACTOR)
        self._depth = sorted(depth)
        self._pairs = associate(np.array([t for t, _ in self._rgb]), np.array([t for t, _ in self._depth]),
                                MATCH_NS)
        if intrinsics is not None:
            fx, fy, cx, cy, why = *intrinsics, "given (--intrinsics)"
        else:
            kinect = next((k for k in TUM_INTRINSICS if k in self.path.resolve().name.lower()), None)
            fx, fy, cx, cy = TUM_INTRINSICS[kinect] if kinect else ROS_DEFAULT_INTRINSICS
            why = (f"published TUM {kinect} intrinsics (from the folder name)" if kinect else
                   "ROS default, as TUM recommends when the Kinect is unknown (the folder name says no "
                   "freiburg1/2/3); --intrinsics FX FY CX CY gives others")
        self.K = check_intrinsics(np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]]), "--intrinsics")
        self.intrinsics_note = why
        self.registration, self.registration_note = resolve_registration(registration, self.name)
        self.details = (f"depth factor {self.depth_factor:g} per metre; {len(self._pairs)} of {len(self._rgb)} colour "
                        f"images have a depth image within {MATCH_NS / 1e6:g} ms; poses: "
                        f"{self.trajectory.path.name} ({len(self.trajectory)} poses)")

    def __len__(self) -> int:
        return len(self._rgb)

    def read(self, index: int) -> Frame:
        """Frame of the ``index``-th line of rgb.txt.

        Raises:
            IndexError: index out of range.
            FrameError: no depth or pose near its stamp, unreadable images, sizes that differ.
        """
        if not 0 <= index < len(self._rgb):
            raise IndexError(f"frame index {index} out of range (0..{len(self._rgb) - 1})")
        stamp, rgb_name = self._rgb[index]
        color_path = self.path / rgb_name
        if index not in self._pairs:
            raise FrameError(f"frame {index} ({color_path}): no depth image within "
                             f"{MATCH_NS / 1e6:g} ms in depth.txt")
        pose = self.trajectory.pose_at(stamp, f"frame {index} ({color_path})")
        color, depth = read_rgbd(color_path, self.path / self._depth[self._pairs[index]][1], self.K,
                                 self.registration, self.depth_factor)
        return Frame(color=color, depth=depth, K=self.K.copy(), T_world_camera=pose, stamp_ns=stamp, index=index,
                     source_name=str(color_path))
