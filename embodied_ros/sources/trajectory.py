"""Camera trajectories in the common text formats: TUM lines, or one matrix per frame.

- TUM RGB-D (``groundtruth.txt``, and what most SLAM systems write): one line per pose,
  ``timestamp tx ty tz qx qy qz qw``, the optical camera's position and orientation (quaternion
  in x y z w order) in the world, seconds; ``#`` lines are comments.
- Matrices, one per frame in frame order: a 4x4 (four lines of 4 numbers, last row 0 0 0 1)
  or 3x4 (three lines of 4 numbers), or the same flattened on one line of 16 or 12 numbers
  (KITTI odometry's form); camera-to-world, OpenCV optical axes.

Poses are taken as camera-to-world in metres; the run's pose check says when they are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation, Slerp

from ..errors import FrameError, InputError
from ..geometry.transforms import matrix_from_quat_xyzw

MATCH_NS = 20_000_000
"""Stamps this close belong together: colour, depth and pose (TUM's associate.py uses 0.02 s)."""
POSE_GAP_NS = 100_000_000
"""Poses are interpolated between samples at most this far apart (TUM's ground truth runs at 100 Hz)."""


@dataclass(frozen=True)
class Trajectory:
    """Camera-to-world poses with their timestamps (TUM lines) or in frame order (matrices).

    Attributes:
        poses: (N, 4, 4) float64 camera-to-world.
        stamps_ns: (N,) int64 ascending, or None for a per-frame matrix file.
        path: the file.
        form: the format found, in words.
    """

    poses: np.ndarray
    stamps_ns: np.ndarray | None
    path: Path
    form: str

    def __len__(self) -> int:
        return len(self.poses)

    def at(self, stamp_ns: int, tolerance_ns: int, max_gap_ns: int) -> np.ndarray | None:
        """(4, 4) pose at ``stamp_ns``, or None when the trajectory does not cover it.

        Between two samples at most ``max_gap_ns`` apart the pose is interpolated (linear
        position, slerp rotation); otherwise the nearest sample is used if it is within
        ``tolerance_ns``.
        """
        if self.stamps_ns is None:
            raise ValueError(f"{self.path} has no timestamps")
        stamps = self.stamps_ns
        i = int(np.searchsorted(stamps, stamp_ns))
        if 0 < i < len(stamps) and stamps[i] - stamps[i - 1] <= max_gap_ns:
            a, b = self.poses[i - 1], self.poses[i]
            w = (stamp_ns - int(stamps[i - 1])) / float(stamps[i] - stamps[i - 1])
            pose = np.eye(4)
            pose[:3, 3] = (1 - w) * a[:3, 3] + w * b[:3, 3]
            pose[:3, :3] = Slerp([0.0, 1.0], Rotation.from_matrix(np.stack([a[:3, :3], b[:3, :3]])))(w).as_matrix()
            return pose
        near = [j for j in (i - 1, i) if 0 <= j < len(stamps)]
        best = min(near, key=lambda j: abs(int(stamps[j]) - stamp_ns))
        return self.poses[best].copy() if abs(int(stamps[best]) - stamp_ns) <= tolerance_ns else None


    def pose_at(self, stamp_ns: int, what: str) -> np.ndarray:
        """``at`` with the module's tolerances, FrameError naming ``what`` when not covered."""
        pose = self.at(stamp_ns, MATCH_NS, POSE_GAP_NS)
        if pose is None:
            raise FrameError(f"{what}: no pose within {MATCH_NS / 1e6:g} ms in {self.path.name}")
        return pose


def stamp_ns(text: str) -> int:
    """Seconds as written ("1305031102.175304") -> integer ns, exact (no float rounding).

    Raises:
        ValueError: not a number.
    """
    try:
        return int((Decimal(text) * 1_000_000_000).to_integral_value())
    except InvalidOperation:
        raise ValueError(f"{text!r} is not a number of seconds") from None


def read_trajectory(path: str | Path) -> Trajectory:
    """Read a trajectory file in any of the module's formats, told apart by its columns.

    Raises:
        InputError: unreadable file, mixed or unknown line lengths, non-numbers, NaN, zero
            quaternions, repeated timestamps, or no pose at all.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"trajectory {path}: cannot read it ({type(err).__name__})") from None
    rows = [(n, line.split()) for n, line in enumerate(lines, start=1)
            if line.strip() and not line.lstrip().startswith("#")]
    if not rows:
        raise InputError(f"trajectory {path} has no poses")
    widths = {len(fields) for _, fields in rows}
    if len(widths) != 1 or widths.pop() not in (4, 8, 12, 16):
        n, fields = next((n, f) for n, f in rows if len(f) not in (4, 8, 12, 16) or len(f) != len(rows[0][1]))
        raise InputError(f"trajectory {path} line {n}: {len(fields)} numbers; expected every line to hold 8 "
                         "(t tx ty tz qx qy qz qw), 16 or 12 (a 4x4 or 3x4 matrix), or 4 (a matrix row)")
    width = len(rows[0][1])
    if width == 8:
        return _tum_lines(path, rows)
    try:
        values = np.array([[float(v) for v in fields] for _, fields in rows], dtype=np.float64)
    except ValueError:
        raise InputError(f"trajectory {path}: a value is not a number") from None
    if width == 4:  # matrix rows: 4x4 when every 4th row is 0 0 0 1, else 3x4
        if len(values) % 4 == 0 and np.allclose(values[3::4], [0, 0, 0, 1]):
            values, form = values.reshape(-1, 16), "one 4x4 matrix per frame"
        elif len(values) % 3 == 0:
            values, form = values.reshape(-1, 12), "one 3x4 matrix per frame"
        else:
            raise InputError(f"trajectory {path}: {len(values)} rows of 4 numbers make neither 4x4 nor 3x4 matrices")
    else:
        form = f"one {'4x4' if width == 16 else '3x4'} matrix per line"
    poses = np.tile(np.eye(4), (len(values), 1, 1))
    poses[:, :3, :] = values[:, :12].reshape(-1, 3, 4)
    return Trajectory(poses, None, path, form)


def _tum_lines(path: Path, rows: list[tuple[int, list[str]]]) -> Trajectory:
    stamps, poses = [], []
    for n, fields in rows:
        try:
            stamps.append(stamp_ns(fields[0]))
            tx, ty, tz, qx, qy, qz, qw = (float(v) for v in fields[1:])
            pose = np.eye(4)
            pose[:3, :3] = matrix_from_quat_xyzw(np.array([qx, qy, qz, qw]))
        except ValueError as err:
            raise InputError(f"trajectory {path} line {n}: {' '.join(str(err).split())}") from None
        pose[:3, 3] = (tx, ty, tz)
        poses.append(pose)
    order = np.argsort(np.asarray(stamps, dtype=np.int64), kind="stable")
    stamps_ns = np.asarray(stamps, dtype=np.int64)[order]
    if np.any(np.diff(stamps_ns) == 0):
        raise InputError(f"trajectory {path}: a timestamp is repeated")
    return Trajectory(np.asarray(poses)[order], stamps_ns, path, "TUM lines (t tx ty tz qx qy qz qw)")
