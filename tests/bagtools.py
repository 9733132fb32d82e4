"""Test helper: write rosbag2 recordings of posed RGB-D frames with rosbags (no ROS needed).

The pixel buffers are packed here with plain numpy/OpenCV, independently of
embodied_ros.sources.images, so a reader test does not check the decoders against themselves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore
from scipy.spatial.transform import Rotation

STORE = get_typestore(Stores.ROS2_HUMBLE)
T_ = STORE.types


@dataclass
class BagFrame:
    """One frame to record: RGB uint8, depth metres (float), K 3x3, T_world_camera 4x4, stamp."""

    rgb: np.ndarray
    depth_m: np.ndarray
    K: np.ndarray
    T_world_camera: np.ndarray
    stamp_ns: int


def header(frame_id: str, stamp_ns: int):
    stamp = T_["builtin_interfaces/msg/Time"](sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
    return T_["std_msgs/msg/Header"](stamp=stamp, frame_id=frame_id)


def _quat_xyzw(R: np.ndarray):
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return T_["geometry_msgs/msg/Quaternion"](x=float(x), y=float(y), z=float(z), w=float(w))


def transform_stamped(T: np.ndarray, parent: str, child: str, stamp_ns: int):
    t = T[:3, 3]
    return T_["geometry_msgs/msg/TransformStamped"](
        header=header(parent, stamp_ns),
        child_frame_id=child,
        transform=T_["geometry_msgs/msg/Transform"](
            translation=T_["geometry_msgs/msg/Vector3"](x=float(t[0]), y=float(t[1]), z=float(t[2])),
            rotation=_quat_xyzw(T[:3, :3]),
        ),
    )


def pose(T: np.ndarray):
    t = T[:3, 3]
    return T_["geometry_msgs/msg/Pose"](
        position=T_["geometry_msgs/msg/Point"](x=float(t[0]), y=float(t[1]), z=float(t[2])),
        orientation=_quat_xyzw(T[:3, :3]),
    )


def color_image(rgb: np.ndarray, encoding: str, frame_id: str, stamp_ns: int, pad: int = 0):
    """sensor_msgs/Image of ``rgb`` packed by hand; ``pad`` extra bytes per row test ``step``."""
    h, w = rgb.shape[:2]
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "bgr8":
        pixels = rgb[:, :, [2, 1, 0]]
    elif encoding == "bgra8":
        pixels = np.concatenate([rgb[:, :, [2, 1, 0]], np.full((h, w, 1), 255, np.uint8)], axis=2)
    elif encoding == "rgba8":
        pixels = np.concatenate([rgb, np.full((h, w, 1), 7, np.uint8)], axis=2)
    elif encoding == "mono8":
        pixels = rgb[:, :, :1]
    else:  # an encoding the reader does not know: any bytes will do
        pixels = rgb[:, :, :2]
    rows = np.ascontiguousarray(pixels, dtype=np.uint8).reshape(h, -1)
    rows = np.concatenate([rows, np.zeros((h, pad), np.uint8)], axis=1)
    return T_["sensor_msgs/msg/Image"](
        header=header(frame_id, stamp_ns), height=h, width=w, encoding=encoding,
        is_bigendian=0, step=rows.shape[1], data=rows.reshape(-1),
    )


def depth_image(depth_m: np.ndarray, encoding: str, frame_id: str, stamp_ns: int, bigendian: bool = False):
    h, w = depth_m.shape
    if encoding == "16UC1":
        values = np.rint(depth_m * 1000.0).astype(">u2" if bigendian else "<u2")
    else:
        values = np.where(depth_m > 0, depth_m, np.nan).astype(">f4" if bigendian else "<f4")
    return T_["sensor_msgs/msg/Image"](
        header=header(frame_id, stamp_ns), height=h, width=w, encoding=encoding,
        is_bigendian=int(bigendian), step=w * values.itemsize, data=values.reshape(-1).view(np.uint8),
    )


def compressed_image(rgb: np.ndarray, fmt: str, frame_id: str, stamp_ns: int):
    ok, buf = cv2.imencode(".png" if fmt == "png" else ".jpg", rgb[:, :, ::-1])
    assert ok
    return T_["sensor_msgs/msg/CompressedImage"](
        header=header(frame_id, stamp_ns), format=f"rgb8; {fmt} compressed bgr8", data=buf.reshape(-1)
    )


def camera_info(K: np.ndarray, width: int, height: int, frame_id: str, stamp_ns: int):
    P = np.zeros((3, 4))
    P[:3, :3] = K
    return T_["sensor_msgs/msg/CameraInfo"](
        header=header(frame_id, stamp_ns), height=height, width=width, distortion_model="plumb_bob",
        d=np.zeros(5), k=K.reshape(9).astype(np.float64), r=np.eye(3).reshape(9), p=P.reshape(12),
        binning_x=0, binning_y=0,
        roi=T_["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0, do_rectify=False),
    )


class BagBuilder:
    """Collects (topic, msgtype, log time, message) and writes one rosbag2 (version 8)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, str, int, object]] = []

    def add(self, topic: str, msg: object, log_ns: int) -> None:
        self.messages.append((topic, msg.__msgtype__, int(log_ns), msg))

    def write(self, path: Path, storage: str = "sqlite3") -> Path:
        plugin = StoragePlugin.MCAP if storage == "mcap" else StoragePlugin.SQLITE3
        with Writer(path, version=8, storage_plugin=plugin) as writer:
            connections = {}
            for topic, msgtype, log_ns, msg in sorted(self.messages, key=lambda m: m[2]):
                if topic not in connections:
                    connections[topic] = writer.add_connection(topic, msgtype, typestore=STORE)
                writer.write(connections[topic], log_ns, STORE.serialize_cdr(msg, msgtype))
        return path


def record_frames(
    frames: list[BagFrame],
    *,
    ns: str = "",
    color: str = "rgb8",
    depth: str = "16UC1",
    pose_mode: str = "tf",
    camera_frame: str = "rgb_camera_link",
    world_frame: str = "map",
    depth_bigendian: bool = False,
) -> BagBuilder:
    """The messages an Azure-Kinect-like driver plus a localiser would publish for ``frames``.

    Args:
        ns: topic namespace prefix, e.g. "/k4a".
        color: Image encoding, or "png"/"jpeg" for a CompressedImage on ``.../compressed``.
        depth: "16UC1" or "32FC1".
        pose_mode: "tf" (dynamic map->base_link on /tf, static base_link->camera_base->camera
            on /tf_static), "pose" (PoseStamped of the camera on /camera_pose), "odom"
            (Odometry of base_link on /odom plus the static chain on /tf_static) or "none".
    """
    bag = BagBuilder()
    # A fixed, non-trivial mounting: base_link -> camera_base -> rgb_camera_link (optical).
    T_base_cambase = np.eye(4)
    T_base_cambase[:3, :3] = Rotation.from_euler("xyz", [0.02, -0.1, 0.3]).as_matrix()
    T_base_cambase[:3, 3] = [0.2, -0.05, 1.1]
    T_cambase_cam = np.eye(4)
    T_cambase_cam[:3, :3] = Rotation.from_euler("xyz", [-np.pi / 2, 0, -np.pi / 2]).as_matrix()
    T_base_cam = T_base_cambase @ T_cambase_cam
    first = frames[0].stamp_ns
    if pose_mode in ("tf", "odom"):
        static = T_["tf2_msgs/msg/TFMessage"](transforms=[
            transform_stamped(T_base_cambase, "base_link", "camera_base", first),
            transform_stamped(T_cambase_cam, "camera_base", camera_frame, first),
        ])
        bag.add("/tf_static", static, first - 1)
    color_topic = f"{ns}/rgb/image_raw" + ("/compressed" if color in ("png", "jpeg") else "")
    for f in frames:
        h, w = f.depth_m.shape
        t = f.stamp_ns
        if color in ("png", "jpeg"):
            bag.add(color_topic, compressed_image(f.rgb, color, camera_frame, t), t + 3_000_000)
        else:
            bag.add(color_topic, color_image(f.rgb, color, camera_frame, t, pad=8), t + 3_000_000)
        bag.add(f"{ns}/depth_to_rgb/image_raw", depth_image(f.depth_m, depth, camera_frame, t, depth_bigendian),
                t + 4_000_000)
        bag.add(f"{ns}/rgb/camera_info", camera_info(f.K, w, h, camera_frame, t), t + 2_000_000)
        T_world_base = f.T_world_camera @ np.linalg.inv(T_base_cam)
        if pose_mode == "tf":
            # a leading slash on a frame id, as some ROS 1 era drivers write
            tf = T_["tf2_msgs/msg/TFMessage"](transforms=[transform_stamped(T_world_base, "/" + world_frame,
                                                                             "base_link", t)])
            bag.add("/tf", tf, t + 1_000_000)
        elif pose_mode == "odom":
            odom = T_["nav_msgs/msg/Odometry"](
                header=header(world_frame, t), child_frame_id="base_link",
                pose=T_["geometry_msgs/msg/PoseWithCovariance"](pose=pose(T_world_base), covariance=np.zeros(36)),
                twist=T_["geometry_msgs/msg/TwistWithCovariance"](
                    twist=T_["geometry_msgs/msg/Twist"](
                        linear=T_["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0),
                        angular=T_["geometry_msgs/msg/Vector3"](x=0.0, y=0.0, z=0.0)),
                    covariance=np.zeros(36)),
            )
            bag.add("/odom", odom, t + 1_000_000)
        elif pose_mode == "pose":
            msg = T_["geometry_msgs/msg/PoseStamped"](header=header(world_frame, t), pose=pose(f.T_world_camera))
            bag.add("/camera_pose", msg, t + 1_000_000)
    return bag
