"""Core values <-> ROS message fields: stamps, headers, poses, quaternions (xyzw), camera info.

The only place where quaternion order is converted: ROS uses (x, y, z, w), which is also
scipy's order; anything else converts through the two functions below.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..geometry.boxes import as_boxes, box_rotations
from ..geometry.transforms import matrix_from_quat_xyzw, quat_xyzw_from_matrix
from ..messages.types import msg_class


def time_msg(stamp_ns: int) -> Any:
    """builtin_interfaces/Time from integer nanoseconds."""
    Time = msg_class("builtin_interfaces/msg/Time")
    return Time(sec=int(stamp_ns // 1_000_000_000), nanosec=int(stamp_ns % 1_000_000_000))


def stamp_ns_from_msg(stamp: Any) -> int:
    """builtin_interfaces/Time (any implementation with sec/nanosec) -> integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def header_msg(frame_id: str, stamp_ns: int) -> Any:
    return msg_class("std_msgs/msg/Header")(stamp=time_msg(stamp_ns), frame_id=frame_id)


def pose_msg(R: np.ndarray, t: np.ndarray) -> Any:
    """geometry_msgs/Pose from a rotation and a translation."""
    Point = msg_class("geometry_msgs/msg/Point")
    Quaternion = msg_class("geometry_msgs/msg/Quaternion")
    q = quat_xyzw_from_matrix(R)
    return msg_class("geometry_msgs/msg/Pose")(
        position=Point(x=float(t[0]), y=float(t[1]), z=float(t[2])),
        orientation=Quaternion(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3])),
    )


def vector3_msg(v: np.ndarray) -> Any:
    return msg_class("geometry_msgs/msg/Vector3")(x=float(v[0]), y=float(v[1]), z=float(v[2]))


def box_pose_msg(box: np.ndarray) -> Any:
    """Pose (centre + orientation) of one 9-DoF box."""
    b = as_boxes(box)
    return pose_msg(box_rotations(b)[0], b[0, 0:3])


def transform_stamped_msg(T: np.ndarray, parent: str, child: str, stamp_ns: int) -> Any:
    """geometry_msgs/TransformStamped of child's pose in parent (T = T_parent_child)."""
    q = quat_xyzw_from_matrix(T[:3, :3])
    Transform = msg_class("geometry_msgs/msg/Transform")
    Quaternion = msg_class("geometry_msgs/msg/Quaternion")
    return msg_class("geometry_msgs/msg/TransformStamped")(
        header=header_msg(parent, stamp_ns),
        child_frame_id=child,
        transform=Transform(
            translation=vector3_msg(T[:3, 3]),
            rotation=Quaternion(x=float(q[0]), y=float(q[1]), z=float(q[2]), w=float(q[3])),
        ),
    )


def matrix_from_transform_msg(transform: Any) -> np.ndarray:
    """geometry_msgs/Transform or Pose (any implementation) -> (4, 4)."""
    t = getattr(transform, "translation", None) or transform.position
    r = getattr(transform, "rotation", None) or transform.orientation
    T = np.eye(4)
    T[:3, :3] = matrix_from_quat_xyzw(np.array([r.x, r.y, r.z, r.w]))
    T[:3, 3] = [t.x, t.y, t.z]
    return T


def camera_info_msg(K: np.ndarray, width: int, height: int, frame_id: str, stamp_ns: int) -> Any:
    """sensor_msgs/CameraInfo of an undistorted pinhole camera."""
    P = np.zeros((3, 4))
    P[:3, :3] = K
    RegionOfInterest = msg_class("sensor_msgs/msg/RegionOfInterest")
    return msg_class("sensor_msgs/msg/CameraInfo")(
        header=header_msg(frame_id, stamp_ns),
        height=int(height),
        width=int(width),
        distortion_model="plumb_bob",
        d=np.zeros(5),
        k=np.asarray(K, dtype=np.float64).reshape(9),
        r=np.eye(3).reshape(9),
        p=P.reshape(12),
        binning_x=0,
        binning_y=0,
        roi=RegionOfInterest(x_offset=0, y_offset=0, height=0, width=0, do_rectify=False),
    )
