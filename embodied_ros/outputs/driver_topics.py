"""Frames as the Azure Kinect ROS driver publishes them, and the pace of a replay: the ROS-free half of the player.

The driver (azure_kinect_ros_driver, depth registered to colour) publishes ``rgb/image_raw``
(bgra8), ``depth_to_rgb/image_raw`` (16UC1 millimetres) and ``rgb/camera_info`` with one stamp,
in the optical frame ``rgb_camera_link``; SLAM or odometry adds TF ``world -> rgb_camera_link``.
:func:`driver_fields` gives those messages as plain fields (dicts, numpy buffers; see ros/cdr.py)
and :class:`Pacer` spaces frames at a rate. ``ros/player.py`` publishes them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..frame import Frame
from ..geometry.transforms import quat_xyzw_from_matrix
from .image_encoding import depth_to_ros, rgb_to_ros

T = TypeVar("T")


@dataclass(frozen=True)
class DriverTopics:
    """Topic names (relative: a namespace applies) and frames of the Azure Kinect ROS driver."""

    color: str = "rgb/image_raw"  # sensor_msgs/Image bgra8
    depth: str = "depth_to_rgb/image_raw"  # sensor_msgs/Image 16UC1 millimetres, registered to colour
    camera_info: str = "rgb/camera_info"  # sensor_msgs/CameraInfo
    camera_frame: str = "rgb_camera_link"  # optical frame of the colour camera


def _stamp(stamp_ns: int) -> dict[str, int]:
    return {"sec": int(stamp_ns // 1_000_000_000), "nanosec": int(stamp_ns % 1_000_000_000)}


def _image(fields: Any, head: dict[str, Any]) -> dict[str, Any]:
    return {"header": head, **fields._asdict()}


def driver_fields(frame: Frame, stamp_ns: int, camera_frame: str, world_frame: str) -> dict[str, dict[str, Any]]:
    """One frame as the driver's messages plus its pose: {"color", "depth", "camera_info", "transform", "pose"}.

    Args:
        frame: the frame (colour RGB, depth metres, K, camera-to-world pose).
        stamp_ns: the stamp of every message (a player stamps with its clock, as a live driver does).
        camera_frame: frame_id of the images (the driver's rgb_camera_link is optical, as the core's camera).
        world_frame: parent frame of the pose.

    Returns:
        sensor_msgs/Image (bgra8), sensor_msgs/Image (16UC1), sensor_msgs/CameraInfo,
        geometry_msgs/TransformStamped (world -> camera) and geometry_msgs/PoseStamped fields.
    """
    head = {"stamp": _stamp(stamp_ns), "frame_id": camera_frame}
    P = np.zeros((3, 4))
    P[:, :3] = frame.K
    info = {"header": head, "height": frame.height, "width": frame.width, "distortion_model": "plumb_bob",
            "d": np.zeros(5), "k": frame.K.reshape(9), "r": np.eye(3).reshape(9), "p": P.reshape(12)}
    t, q = frame.T_world_camera[:3, 3], quat_xyzw_from_matrix(frame.T_world_camera[:3, :3])
    xyz, xyzw = dict(zip("xyz", map(float, t), strict=True)), dict(zip("xyzw", map(float, q), strict=True))
    world = {"stamp": _stamp(stamp_ns), "frame_id": world_frame}
    return {
        "color": _image(rgb_to_ros(frame.color, "bgra8"), head),
        "depth": _image(depth_to_ros(frame.depth, "16UC1"), head),
        "camera_info": info,
        "transform": {"header": world, "child_frame_id": camera_frame,
                      "transform": {"translation": xyz, "rotation": xyzw}},
        "pose": {"header": world, "pose": {"position": xyz, "orientation": xyzw}},
    }


class Pacer:
    """Yields items at ``rate`` per second (0: as fast as they come), holding the schedule, not the gaps.

    Args:
        rate: items per second; 0 or less = no waiting.
        clock: monotonic seconds (time.monotonic); sleep: how to wait (time.sleep).
    """

    def __init__(self, rate: float, clock: Any = time.monotonic, sleep: Any = time.sleep) -> None:
        self.period = 1.0 / rate if rate > 0 else 0.0
        self._clock, self._sleep = clock, sleep
        self.late = 0  # items yielded more than one period behind schedule (the source is slower than rate)
        self.on_schedule_s: float | None = None  # the last item's time on the schedule from the first (None: late)

    def __call__(self, items: Iterable[T]) -> Iterator[T]:
        start = None  # the schedule begins with the first item (its reading is no delay)
        for i, item in enumerate(items):
            start = self._clock() if start is None else start
            due = start + i * self.period
            wait = due - self._clock()
            if wait > 0:
                self._sleep(wait)
            elif -wait > self.period > 0:
                self.late += 1
            self.on_schedule_s = i * self.period if self.period and -wait <= self.period else None
            yield item
