"""camera_poses.json: the camera pose of every processed frame of a run, for viewer-centred words later.

`embodied-ros ground DIR "the monitor on the left"` needs to know where "the left" was: the camera
of the run's last frame, or of one chosen with ``--from-frame``. The bag holds the poses too, but
reading them back means opening the whole recording; this small file answers in milliseconds.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError, json_error_line, os_error_line

__all__ = ["CAMERA_POSES_FILE", "CameraPose", "read_camera_poses", "write_camera_poses"]

CAMERA_POSES_FILE = "camera_poses.json"
FORMAT = "embodied_ros/camera_poses"


@dataclass(frozen=True)
class CameraPose:
    """Where one frame's camera was.

    Attributes:
        index: the frame's index in its source.
        stamp_ns: its stamp, nanoseconds.
        T_world_camera: (4, 4) camera-to-world (OpenCV optical camera axes).
        K: (3, 3) colour intrinsics; width, height: image size, pixels.
    """

    index: int
    stamp_ns: int
    T_world_camera: np.ndarray
    K: np.ndarray
    width: int
    height: int


def write_camera_poses(path: str | os.PathLike[str], frame_id: str, poses: Sequence[CameraPose]) -> None:
    """Write the poses (in frame ``frame_id``) as JSON."""
    doc = {"format": FORMAT, "frame_id": frame_id, "frames": [
        {"index": int(p.index), "stamp_ns": int(p.stamp_ns),
         "T_world_camera": [[round(float(v), 6) for v in row] for row in p.T_world_camera],
         "K": [[round(float(v), 4) for v in row] for row in p.K], "width": int(p.width), "height": int(p.height)}
        for p in poses]}
    Path(path).write_text(json.dumps(doc))


def read_camera_poses(path: str | os.PathLike[str]) -> list[CameraPose]:
    """Read ``write_camera_poses``'s file.

    Raises:
        InputError: if the file is unreadable or not a camera poses document.
    """
    try:
        doc = json.loads(Path(path).read_text())
        if doc.get("format") != FORMAT:
            raise ValueError(f"not a camera poses document (format {doc.get('format')!r})")
        return [CameraPose(int(f["index"]), int(f["stamp_ns"]), np.array(f["T_world_camera"], dtype=np.float64),
                           np.array(f["K"], dtype=np.float64), int(f["width"]), int(f["height"]))
                for f in doc["frames"]]
    except OSError as err:
        raise InputError(f"cannot read the camera poses: {os_error_line(err, path)}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        why = json_error_line(err) if isinstance(err, ValueError) else f"not a camera poses document ({err!r})"
        raise InputError(f"{path}: cannot read the camera poses: {why}") from None
