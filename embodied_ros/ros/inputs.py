"""Driver topics -> core Frames: exact-stamp colour/depth pairing, camera_info, and camera poses (TF or a topic).

Colour and registered depth from the Azure Kinect driver share the capture stamp, so they are
paired by equal stamps (no message_filters needed); a few unpaired messages are kept per side
and the oldest are discarded. Poses:

- TF (no ``pose_topic``): tf2_ros's Buffer + TransformListener (listener on its own thread, so a
  lookup at the image stamp may wait up to ``tf_timeout``) when tf2_ros is importable; otherwise
  /tf and /tf_static are read into the core's TransformBuffer (needs tf2_msgs; no waiting).
- a PoseStamped or Odometry topic: the optical camera's pose in the message's header frame,
  interpolated at the image stamp (TransformBuffer), used up to ``pose_tolerance`` outside its span.

Every problem with one frame raises FrameError with one line; the node logs it and goes on.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import numpy as np

from ..errors import FrameError
from ..frame import Frame
from ..messages.convert import matrix_from_transform_msg, stamp_ns_from_msg
from ..sources.images import decode_compressed_rgb, depth_to_metres, image_to_rgb
from ..sources.tf_buffer import TransformBuffer, normalise_frame_id
from .config import NodeConfig

_MAX_UNPAIRED = 8  # per side; the driver publishes both within a few ms
_POSE_CHILD = "__pose_topic_camera__"


class PoseLookup:
    """Camera-to-world poses at image stamps, from TF or from a pose topic (see module docstring)."""

    def __init__(self, node: Any, config: NodeConfig, qos: Any) -> None:
        self.config = config
        self.mode = ""
        self._tf2: Any = None
        self._buffer = TransformBuffer(extrapolation_ns=int(config.pose_tolerance * 1e9) if config.pose_topic else 0)
        self._pose_frame = ""
        if config.pose_topic:
            self.mode = f"{config.pose_type} on {config.pose_topic}"
            if config.pose_type == "Odometry":
                from nav_msgs.msg import Odometry as PoseType
            else:
                from geometry_msgs.msg import PoseStamped as PoseType
            node.create_subscription(PoseType, config.pose_topic, self.on_pose, qos)
            return
        try:
            import tf2_ros
        except ImportError:
            self._subscribe_tf_without_tf2_ros(node)
            return
        self._tf2 = tf2_ros.Buffer()
        self._listener = tf2_ros.TransformListener(self._tf2, node, spin_thread=True)
        self.mode = "TF (tf2_ros)"

    def _subscribe_tf_without_tf2_ros(self, node: Any) -> None:
        try:
            from rclpy.qos import DurabilityPolicy, QoSProfile
            from tf2_msgs.msg import TFMessage
        except ImportError:
            self.mode = "none"
            node.get_logger().error("tf2_ros and tf2_msgs are not installed: no camera poses from TF; "
                                    "install ros-$ROS_DISTRO-tf2-ros or set the pose_topic parameter")
            return
        node.get_logger().warning("tf2_ros not installed: reading /tf and /tf_static directly (no waiting for TF)")
        node.create_subscription(TFMessage, "/tf", lambda m: self._on_tf(m, False), 100)
        static_qos = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        node.create_subscription(TFMessage, "/tf_static", lambda m: self._on_tf(m, True), static_qos)
        self.mode = "TF (/tf subscription)"

    def _on_tf(self, msg: Any, static: bool) -> None:
        for t in msg.transforms:
            self._buffer.add(t.header.frame_id, t.child_frame_id, stamp_ns_from_msg(t.header.stamp),
                             matrix_from_transform_msg(t.transform), static=static)

    def on_pose(self, msg: Any) -> None:
        """A PoseStamped or Odometry sample of the camera's pose."""
        pose = msg.pose.pose if hasattr(msg.pose, "pose") else msg.pose
        self._pose_frame = normalise_frame_id(msg.header.frame_id)
        self._buffer.add(self._pose_frame, _POSE_CHILD, stamp_ns_from_msg(msg.header.stamp),
                         matrix_from_transform_msg(pose))

    def lookup(self, camera_frame: str, stamp_ns: int) -> np.ndarray:
        """(4, 4) camera-to-world at ``stamp_ns``; FrameError when it is not (yet) known."""
        world = self.config.world_frame
        if self.config.pose_topic:
            if not self._pose_frame:
                raise FrameError(f"no pose received yet on {self.config.pose_topic}")
            if normalise_frame_id(world) != self._pose_frame:
                raise FrameError(f"poses on {self.config.pose_topic} are in frame {self._pose_frame!r}, "
                                 f"not world_frame {world!r}")
            source = _POSE_CHILD
        else:
            source = camera_frame
        if self._tf2 is not None:
            return self._lookup_tf2(world, source, stamp_ns)
        if self.mode == "none":
            raise FrameError("no pose source: neither tf2_ros nor a pose_topic is available")
        try:
            return self._buffer.lookup(world, source, stamp_ns)
        except LookupError as err:
            raise FrameError(f"no camera pose yet ({self.mode}): {err}") from None

    def _lookup_tf2(self, world: str, camera: str, stamp_ns: int) -> np.ndarray:
        import tf2_ros
        from rclpy.duration import Duration
        from rclpy.time import Time

        try:
            t = self._tf2.lookup_transform(world, camera, Time(nanoseconds=stamp_ns),
                                           timeout=Duration(nanoseconds=int(self.config.tf_timeout * 1e9)))
        except (tf2_ros.LookupException, tf2_ros.ConnectivityException, tf2_ros.ExtrapolationException,
                tf2_ros.TransformException) as err:
            raise FrameError(f"no TF {world} -> {camera} at the image stamp: {err}") from None
        return matrix_from_transform_msg(t.transform)


class FrameAssembler:
    """Pairs colour and depth by exact stamp and builds posed Frames."""

    def __init__(self, config: NodeConfig, poses: PoseLookup) -> None:
        self.config = config
        self.poses = poses
        self._K: np.ndarray | None = None
        self._info_size = (0, 0)
        self._colors: OrderedDict[int, Any] = OrderedDict()
        self._depths: OrderedDict[int, Any] = OrderedDict()
        self.n_frames = 0
        self.n_unpaired = 0  # messages discarded without a partner

    def on_camera_info(self, msg: Any) -> None:
        K = np.asarray(msg.k, dtype=np.float64).reshape(3, 3)
        if K[0, 0] > 0 and K[1, 1] > 0:
            self._K, self._info_size = K, (int(msg.width), int(msg.height))

    def on_color(self, msg: Any) -> Frame | None:
        """Store a colour message; returns the Frame when its depth is already here."""
        return self._add(msg, self._colors, self._depths, color_first=True)

    def on_depth(self, msg: Any) -> Frame | None:
        return self._add(msg, self._depths, self._colors, color_first=False)

    def _add(self, msg: Any, mine: OrderedDict, other: OrderedDict, color_first: bool) -> Frame | None:
        stamp = stamp_ns_from_msg(msg.header.stamp)
        partner = other.pop(stamp, None)
        if partner is None:
            mine[stamp] = msg
            while len(mine) > _MAX_UNPAIRED:
                mine.popitem(last=False)
                self.n_unpaired += 1
            return None
        color, depth = (msg, partner) if color_first else (partner, msg)
        return self.frame(color, depth, stamp)

    def frame(self, color_msg: Any, depth_msg: Any, stamp_ns: int) -> Frame:
        """Decode one colour/depth pair into a posed Frame (FrameError with one line on any problem)."""
        index = self.n_frames
        self.n_frames += 1
        where = f"frame at stamp {stamp_ns}"
        try:
            if self._K is None:
                raise FrameError(f"no camera_info received yet on {self.config.camera_info_topic}")
            if hasattr(color_msg, "format"):
                color = decode_compressed_rgb(color_msg.format, color_msg.data)
            else:
                color = image_to_rgb(color_msg.encoding, color_msg.height, color_msg.width, color_msg.step,
                                     color_msg.data, bool(color_msg.is_bigendian))
            depth = depth_to_metres(depth_msg.encoding, depth_msg.height, depth_msg.width, depth_msg.step,
                                    depth_msg.data, bool(depth_msg.is_bigendian))
            h, w = color.shape[:2]
            if self._info_size != (w, h):
                raise FrameError(f"camera_info is {self._info_size[0]}x{self._info_size[1]} but the colour "
                                 f"image is {w}x{h}")
            camera = normalise_frame_id(color_msg.header.frame_id)
            if not camera and not self.config.pose_topic:
                raise FrameError("colour image has an empty frame_id, so TF cannot place it")
            pose = self.poses.lookup(camera, stamp_ns)
            return Frame(color=color, depth=depth, K=self._K.copy(), T_world_camera=pose, stamp_ns=stamp_ns,
                         index=index, source_name=self.config.color_topic, world_frame=self.config.world_frame,
                         camera_frame=camera or "camera")
        except FrameError as err:
            raise FrameError(f"{where}: {err}") from None


def start_k4a(node: Any, config: NodeConfig, poses: PoseLookup, submit: Any, report: Any) -> Any:
    """Read a pyk4a camera on a daemon thread and ``submit`` its frames, posed from TF at capture time.

    Frames are restamped with the node clock (the device clock is not ROS time), so markers and TF agree.
    Returns the thread; pyk4a or the SDK missing is reported with what to install, and nothing starts.
    """
    import dataclasses
    import threading

    from ..errors import InputError
    from ..sources.kinect_live import KinectLiveSource

    def pose_now(_device_ns: int) -> np.ndarray | None:
        try:
            return poses.lookup(config.k4a_camera_frame, node.get_clock().now().nanoseconds)
        except FrameError as err:
            report(f"k4a frame without pose: {err}")
            return None

    try:
        source = KinectLiveSource(pose_provider=pose_now)
    except InputError as err:
        report(f"source k4a: {err}")
        return None

    def run() -> None:
        for item in source.frames():
            if isinstance(item, FrameError):
                report(str(item))
                continue
            now = node.get_clock().now().nanoseconds
            submit(dataclasses.replace(item, stamp_ns=now, world_frame=config.world_frame,
                                       camera_frame=config.k4a_camera_frame))

    thread = threading.Thread(target=run, name="embodied-k4a", daemon=True)
    thread.start()
    return thread
