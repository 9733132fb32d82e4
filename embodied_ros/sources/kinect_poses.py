"""Camera poses for a recording, read from a text file beside it and looked up by timestamp.

Two line formats, told apart by the number of columns; the first line is always skipped (as
in the EmbodiedScan demo, whose first line is a header), as are blank lines and ``#`` comments:

- EmbodiedScan demo (8 columns): ``timestamp x y z qx qy qz qw`` -- the pose of a body frame
  (x forward, y left, z up) in the world; the camera rotation is
  ``R_quat @ [[0, 0, 1], [-1, 0, 0], [0, -1, 0]]`` and its position is (x, y, z).
- Matrix (17 columns): ``timestamp`` then the 4x4 camera-to-world matrix row-major, OpenCV
  optical camera axes, metres.

Timestamps are the recording's device time: seconds (float), or integer nanoseconds when every
timestamp is written as an integer larger than 1e6.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..geometry.transforms import camera_pose_from_body, matrix_from_quat_xyzw

_NS_THRESHOLD = 1_000_000  # integer stamps above this read as nanoseconds (1e6 s would be 11 days)


@dataclass(frozen=True)
class PoseTrack:
    """Timestamped camera-to-world poses.

    Attributes:
        stamps_ns: (N,) int64 device timestamps, ascending.
        poses: (N, 4, 4) float64 camera-to-world, OpenCV optical camera axes.
        path: file the poses came from.
    """

    stamps_ns: np.ndarray
    poses: np.ndarray
    path: Path

    def lookup(self, stamp_ns: int, tolerance_ns: int) -> np.ndarray | None:
        """(4, 4) pose nearest to ``stamp_ns`` if within ``tolerance_ns``, else None."""
        i = int(np.searchsorted(self.stamps_ns, stamp_ns))
        candidates = [j for j in (i - 1, i) if 0 <= j < len(self.stamps_ns)]
        best = min(candidates, key=lambda j: abs(int(self.stamps_ns[j]) - stamp_ns))
        if abs(int(self.stamps_ns[best]) - stamp_ns) > tolerance_ns:
            return None
        return self.poses[best].copy()


def find_pose_file(recording: Path) -> Path | None:
    """``<name>.poses.txt`` beside the recording, else ``poses.txt`` in its folder, else None."""
    for candidate in (recording.with_name(recording.stem + ".poses.txt"), recording.with_name("poses.txt")):
        if candidate.is_file():
            return candidate
    return None


def _parse_stamps(tokens: list[str]) -> np.ndarray:
    """Timestamp tokens -> (N,) int64 nanoseconds (see the module docstring for the units rule)."""
    if all(t.lstrip("+-").isdigit() for t in tokens):
        values = [int(t) for t in tokens]
        if max(abs(v) for v in values) > _NS_THRESHOLD:
            return np.asarray(values, dtype=np.int64)
    # Decimal keeps long epoch-second stamps exact to the nanosecond (a float would not).
    return np.asarray([int((Decimal(t) * 1_000_000_000).to_integral_value()) for t in tokens], dtype=np.int64)


def read_pose_file(path: str | Path) -> PoseTrack:
    """Read a pose file in either format (module docstring); InputError on anything malformed.

    Raises:
        InputError: unreadable file, a line with the wrong column count or a non-number, no
            poses at all, or a repeated timestamp.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()[1:]
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read poses ({err.__class__.__name__}: {err})") from None
    stamps: list[str] = []
    rows: list[list[float]] = []
    width = None
    for lineno, line in enumerate(lines, start=2):
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        if len(fields) not in (8, 17) or (width is not None and len(fields) != width):
            raise InputError(
                f"{path}:{lineno}: expected 8 (timestamp x y z qx qy qz qw) or 17 (timestamp + 4x4) columns, "
                f"got {len(fields)}"
            )
        width = len(fields)
        try:
            rows.append([float(f) for f in fields[1:]])
        except ValueError:
            raise InputError(f"{path}:{lineno}: non-numeric value in {line.strip()!r}") from None
        stamps.append(fields[0])
    if not rows:
        raise InputError(f"{path}: no poses after the header line")
    try:
        stamps_ns = _parse_stamps(stamps)
    except (ValueError, InvalidOperation):
        raise InputError(f"{path}: timestamps must be numbers (seconds, or integer nanoseconds)") from None
    values = np.asarray(rows, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise InputError(f"{path}: poses contain NaN or inf")
    poses = np.tile(np.eye(4), (len(rows), 1, 1))
    if width == 8:
        q = values[:, 3:7]
        if np.any(np.linalg.norm(q, axis=1) < 1e-9):
            raise InputError(f"{path}: a quaternion is zero")
        for i in range(len(values)):
            poses[i] = camera_pose_from_body(matrix_from_quat_xyzw(q[i]), values[i, :3])
    else:
        poses[:] = values.reshape(-1, 4, 4)
    order = np.argsort(stamps_ns, kind="stable")
    stamps_ns, poses = stamps_ns[order], poses[order]
    if np.any(np.diff(stamps_ns) == 0):
        raise InputError(f"{path}: repeated timestamp")
    return PoseTrack(stamps_ns=stamps_ns, poses=poses, path=path)
