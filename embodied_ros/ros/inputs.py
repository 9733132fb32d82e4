"""Driver topics -> core Frames: QoS matched to the driver, exact-stamp colour/depth pairing, camera poses.

Colour and registered depth from the Azure Kinect driver share the capture stamp, so they are
paired by equal stamps: ``message_filters.TimeSynchronizer`` where message_filters is installed,
else :class:`StampPairing` (the same rule); both count what goes unpaired, so the node can warn.
Input QoS (``input_qos``, also for a pose topic): "reliable", "best_effort", or "auto" (default):
reliable unless a publisher on the topic offers best effort only, also when such a publisher
appears later (then the subscriptions are made again, with a warning). Best effort drops large images under load
(58 of 100 frames paired on Cyclone DDS, against 100 of 100 reliable). Poses:

- TF (no ``pose_topic``): tf2_ros's Buffer + TransformListener on the node itself (spun by the
  node's executor: no thread of its own, so Ctrl-C and a test's own context work), a lookup at
  the image stamp waiting up to ``tf_timeout``; without tf2_ros, /tf and /tf_static are read
  into the core's TransformBuffer (needs tf2_msgs; no waiting).
- a PoseStamped or Odometry topic: the optical camera's pose in the message's header frame,
  interpolated at the image stamp (TransformBuffer), used up to ``pose_tolerance`` outside its span;
  a pair newer than every sample waits (PoseNotYet; up to ``pose_wait``, never blocking a callback)
  for the sample of its stamp, which may come later on another subscription or be resent.

Every problem with one frame raises FrameError with one line; the node logs it and goes on.
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import FrameError
from ..frame import Frame
from ..messages.convert import matrix_from_transform_msg, stamp_ns_from_msg
from ..sources.images import decode_compressed_depth, decode_compressed_rgb, depth_to_metres, image_to_rgb
from ..sources.tf_buffer import TransformBuffer, normalise_frame_id
from .config import NodeConfig

PAIRING_QUEUE = 8  # unpaired messages kept per side; the driver publishes both within a few ms
_POSE_CHILD = "__pose_topic_camera__"
_POSE_CACHE_NS = 10 * 10**9  # poses kept for lookups, as tf2's Buffer keeps 10 s


def is_compressed(topic: str, flag: bool, suffix: str) -> bool:
    """A topic carries sensor_msgs/CompressedImage: asked for, or named as image_transport names it."""
    return flag or topic.rstrip("/").endswith(suffix)


class PoseNotYet(FrameError):
    """No pose sample at or after the image's stamp has arrived yet: the pair may wait for it."""


class QosMatch:
    """The reliability of a group of subscriptions: ``input_qos``, or for "auto" what the publishers offer.

    "auto" starts reliable (the Azure Kinect driver's and most drivers' default) unless a publisher
    found on ``topics`` offers best effort only; the owner's periodic tick asks :meth:`best_effort_found`
    again, and on True subscribes again after :meth:`fall_back`.

    A subscription that may be re-created carries no event handlers: rclpy's executor can fail on an
    event handler destroyed from a callback while it builds its wait set (InvalidHandle, ros2/rclpy#1284:
    it ended the executor's spin), so incompatible publishers are found by looking, never by the event.
    """

    def __init__(self, node: Any, setting: str, topics: tuple[str, ...]) -> None:
        self.setting = setting
        self.reliability = setting
        self._node, self._topics = node, topics
        if setting == "auto":
            self.reliability = "best_effort" if self._best_effort_offered() else "reliable"

    def _best_effort_offered(self) -> bool:
        from rclpy.qos import ReliabilityPolicy

        node = self._node
        return any(info.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT for topic in self._topics
                   for info in node.get_publishers_info_by_topic(node.resolve_topic_name(topic)))

    def best_effort_found(self) -> bool:
        """While "auto" is reliable: whether a publisher offers best effort only now (subscribe again)."""
        return self.setting == "auto" and self.reliability == "reliable" and self._best_effort_offered()

    def profile(self, depth: int) -> Any:
        from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy

        reliability = ReliabilityPolicy.RELIABLE if self.reliability == "reliable" else ReliabilityPolicy.BEST_EFFORT
        return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=reliability)

    def events(self) -> dict[str, Any]:
        """Keyword arguments of create_subscription: no event handlers while "auto" is reliable (the subscription
        may be destroyed and made again)."""
        if self.setting != "auto" or self.reliability != "reliable":
            return {}
        try:
            from rclpy.event_handler import SubscriptionEventCallbacks
        except ImportError:  # Humble
            from rclpy.qos_event import SubscriptionEventCallbacks
        return {"event_callbacks": SubscriptionEventCallbacks(use_default_callbacks=False)}

    def fall_back(self) -> None:
        self.reliability = "best_effort"


class PoseLookup:
    """Camera-to-world poses at image stamps, from TF or from a pose topic (see module docstring)."""

    def __init__(self, node: Any, config: NodeConfig) -> None:
        self.config = config
        self.mode = ""
        self.qos: QosMatch | None = None  # of the pose topic
        self.newest_ns = -1  # stamp of the newest pose sample (pose topic, /tf without tf2_ros)
        self.on_new_pose: Any = None  # called after each new sample (the node retries pairs that wait for one)
        self._node, self._subscription = node, None
        self._tf2: Any = None
        self._buffer = TransformBuffer(extrapolation_ns=int(config.pose_tolerance * 1e9) if config.pose_topic else 0,
                                       cache_ns=_POSE_CACHE_NS)
        self._pose_frame = ""
        if config.pose_topic:
            self.mode = f"{config.pose_type} on {config.pose_topic}"
            self.qos = QosMatch(node, config.input_qos, (config.pose_topic,))
            self.subscribe()
            return
        try:
            import tf2_ros
        except ImportError:
            self._subscribe_tf_without_tf2_ros(node)
            return
        self._tf2 = tf2_ros.Buffer()
        # spin_thread=False: the node's executor spins the listener (its own callback group lets a
        # lookup wait in an image callback while TF arrives on another executor thread)
        self._listener = tf2_ros.TransformListener(self._tf2, node, spin_thread=False)
        self.mode = "TF (tf2_ros)"

    def subscribe(self) -> None:
        """(Re)create the pose topic's subscription with ``self.qos``."""
        if self.config.pose_type == "Odometry":
            from nav_msgs.msg import Odometry as PoseType
        else:
            from geometry_msgs.msg import PoseStamped as PoseType
        if self._subscription is not None:
            self._node.destroy_subscription(self._subscription)
        self._subscription = self._node.create_subscription(PoseType, self.config.pose_topic, self.on_pose,
                                                            self.qos.profile(50), **self.qos.events())

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
            stamp = stamp_ns_from_msg(t.header.stamp)
            self._buffer.add(t.header.frame_id, t.child_frame_id, stamp, matrix_from_transform_msg(t.transform),
                             static=static)
            self._arrived(stamp)

    def _arrived(self, stamp_ns: int) -> None:
        self.newest_ns = max(self.newest_ns, stamp_ns)
        if self.on_new_pose is not None:
            self.on_new_pose()

    def on_pose(self, msg: Any) -> None:
        """A PoseStamped or Odometry sample of the camera's pose."""
        pose = msg.pose.pose if hasattr(msg.pose, "pose") else msg.pose
        self._pose_frame = normalise_frame_id(msg.header.frame_id)
        stamp = stamp_ns_from_msg(msg.header.stamp)
        self._buffer.add(self._pose_frame, _POSE_CHILD, stamp, matrix_from_transform_msg(pose))
        self._arrived(stamp)

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
        if self._tf2 is not None and not self.config.pose_topic:
            return self._lookup_tf2(world, source, stamp_ns)
        if self.mode == "none":
            raise FrameError("no pose source: neither tf2_ros nor a pose_topic is available")
        try:
            return self._buffer.lookup(world, source, stamp_ns)
        except LookupError as err:
            error = PoseNotYet if stamp_ns > self.newest_ns else FrameError  # newer than every sample: may come
            raise error(f"no camera pose yet ({self.mode}): {err}") from None

    def _lookup_tf2(self, world: str, camera: str, stamp_ns: int) -> np.ndarray:
        import tf2_ros
        from rclpy.duration import Duration
        from rclpy.time import Time

        try:
            t = self._tf2.lookup_transform(world, camera, Time(nanoseconds=stamp_ns),
                                           timeout=Duration(nanoseconds=int(self.config.tf_timeout * 1e9)))
        except tf2_ros.TransformException as err:
            raise FrameError(f"no camera pose yet: no TF {world} -> {camera} at the image stamp: {err}") from None
        return matrix_from_transform_msg(t.transform)


class StampPairing:
    """Colour/depth pairing by equal stamps (message_filters' TimeSynchronizer rule, for when it is absent).

    ``add(0, msg)`` for colour, ``add(1, msg)`` for depth; ``on_pair(color, depth)`` is called with
    each pair. At most ``queue_size`` messages wait per side; older ones are dropped.
    """

    def __init__(self, on_pair: Callable[[Any, Any], None], queue_size: int = PAIRING_QUEUE) -> None:
        self.on_pair = on_pair
        self.queue_size = queue_size
        self.queues: list[OrderedDict[int, Any]] = [OrderedDict(), OrderedDict()]

    def add(self, side: int, msg: Any) -> None:
        stamp = stamp_ns_from_msg(msg.header.stamp)
        partner = self.queues[1 - side].pop(stamp, None)
        if partner is None:
            mine = self.queues[side]
            mine[stamp] = msg
            while len(mine) > self.queue_size:
                mine.popitem(last=False)
            return
        self.on_pair(*((msg, partner) if side == 0 else (partner, msg)))


class InputSubscriptions:
    """The colour, depth and camera_info subscriptions, their QoS, pairing and counts.

    Args:
        node: the rclpy node.
        config: topics, compression flags and ``input_qos``.
        on_pair: called with (colour msg, depth msg) of equal stamp.
        on_camera_info: called with every CameraInfo.
        callback_group: rclpy callback group of the subscriptions.
    """

    def __init__(self, node: Any, config: NodeConfig, on_pair: Callable[[Any, Any], None],
                 on_camera_info: Callable[[Any], None], callback_group: Any = None) -> None:
        self.node, self.config, self.group = node, config, callback_group
        self._on_pair, self._on_camera_info = on_pair, on_camera_info
        self.received = [0, 0]  # colour, depth messages
        self.paired = 0
        self._subscriptions: list[Any] = []
        self._pairing: Any = None
        self.synchronizer = "message_filters" if _message_filters() is not None else "stamp pairing"
        self.qos = QosMatch(node, config.input_qos, (config.color_topic, config.depth_topic))
        self.subscribe()

    # ---- subscriptions ------------------------------------------------------------------------

    def subscribe(self) -> None:
        """(Re)create the subscriptions with ``self.qos``."""
        from sensor_msgs.msg import CameraInfo, CompressedImage, Image

        for sub in self._subscriptions:
            self.node.destroy_subscription(sub)
        c = self.config
        color_type = CompressedImage if is_compressed(c.color_topic, c.color_compressed, "/compressed") else Image
        depth_type = CompressedImage if is_compressed(c.depth_topic, False, "/compressedDepth") else Image
        qos, extra = self.qos.profile(PAIRING_QUEUE), {"callback_group": self.group, **self.qos.events()}
        filters = _message_filters()
        if filters is not None:
            subs = [filters.Subscriber(self.node, t, topic, qos_profile=qos, **extra)
                    for t, topic in ((color_type, c.color_topic), (depth_type, c.depth_topic))]
            for side, sub in enumerate(subs):
                sub.registerCallback(self._count, side)
            self._pairing = filters.TimeSynchronizer(subs, PAIRING_QUEUE)
            self._pairing.registerCallback(self._paired)
            self._subscriptions = [s.sub for s in subs]
        else:
            self._pairing = StampPairing(self._paired)
            self._subscriptions = [
                self.node.create_subscription(t, topic, lambda m, side=side: self._add(side, m), qos, **extra)
                for side, (t, topic) in enumerate(((color_type, c.color_topic), (depth_type, c.depth_topic)))]
        self._subscriptions.append(self.node.create_subscription(CameraInfo, c.camera_info_topic,
                                                                 self._on_camera_info, qos, **extra))

    def _count(self, _msg: Any, side: int) -> None:
        self.received[side] += 1

    def _add(self, side: int, msg: Any) -> None:
        self._count(msg, side)
        self._pairing.add(side, msg)

    def _paired(self, color: Any, depth: Any) -> None:
        self.paired += 1
        self._on_pair(color, depth)

    @property
    def unpaired(self) -> int:
        """Colour and depth messages dropped without a partner (those still waiting are not counted)."""
        waiting = sum(len(q) for q in self._pairing.queues)
        return max(0, sum(self.received) - 2 * self.paired - waiting)


def _message_filters() -> Any:
    try:
        import message_filters
    except ImportError:
        return None
    return message_filters


class FrameAssembler:
    """Decodes a colour/depth pair with the latest camera_info into a posed Frame."""

    def __init__(self, config: NodeConfig, poses: PoseLookup) -> None:
        self.config = config
        self.poses = poses
        self._K: np.ndarray | None = None
        self._info_size = (0, 0)
        self.n_frames = 0

    @property
    def has_camera_info(self) -> bool:
        return self._K is not None

    def on_camera_info(self, msg: Any) -> None:
        K = np.asarray(msg.k, dtype=np.float64).reshape(3, 3)
        if K[0, 0] > 0 and K[1, 1] > 0:
            self._K, self._info_size = K, (int(msg.width), int(msg.height))

    def frame(self, color_msg: Any, depth_msg: Any) -> Frame:
        """Decode one colour/depth pair into a Frame, not yet posed (FrameError with one line on any problem)."""
        stamp_ns = stamp_ns_from_msg(color_msg.header.stamp)
        index = self.n_frames
        self.n_frames += 1
        try:
            if self._K is None:
                raise FrameError(f"no camera_info received yet on {self.config.camera_info_topic}")
            if hasattr(color_msg, "format"):
                color = decode_compressed_rgb(color_msg.format, color_msg.data)
            else:
                color = image_to_rgb(color_msg.encoding, color_msg.height, color_msg.width, color_msg.step,
                                     color_msg.data, bool(color_msg.is_bigendian))
            if hasattr(depth_msg, "format"):
                depth = decode_compressed_depth(depth_msg.format, depth_msg.data)
            else:
                depth = depth_to_metres(depth_msg.encoding, depth_msg.height, depth_msg.width, depth_msg.step,
                                        depth_msg.data, bool(depth_msg.is_bigendian))
            h, w = color.shape[:2]
            if self._info_size != (w, h):
                raise FrameError(f"camera_info is {self._info_size[0]}x{self._info_size[1]} but the colour "
                                 f"image is {w}x{h}")
            camera = normalise_frame_id(color_msg.header.frame_id)
            if not camera and not self.config.pose_topic:
                raise FrameError("colour image has an empty frame_id, so TF cannot place it")
        except FrameError as err:
            raise FrameError(f"frame at stamp {stamp_ns}: {err}") from None
        return Frame(color=color, depth=depth, K=self._K.copy(), T_world_camera=np.eye(4), stamp_ns=stamp_ns,
                     index=index, source_name=self.config.color_topic, world_frame=self.config.world_frame,
                     camera_frame=camera or "camera")

    def posed(self, frame: Frame) -> Frame:
        """``frame`` with its camera pose at its stamp (PoseNotYet: not arrived yet; FrameError: not to be had)."""
        try:
            pose = self.poses.lookup(frame.camera_frame, frame.stamp_ns)
        except FrameError as err:
            raise type(err)(f"frame at stamp {frame.stamp_ns}: {err}") from None
        return dataclasses.replace(frame, T_world_camera=pose)


def start_k4a(node: Any, config: NodeConfig, poses: PoseLookup, submit: Any, report: Any) -> Any:
    """Read a pyk4a camera on a daemon thread and ``submit`` its frames, posed from TF at capture time.

    Frames are restamped with the node clock (the device clock is not ROS time), so markers and TF agree.
    Returns the thread. Raises InputError (one line: what to install) when pyk4a, the SDK or the
    camera is missing.
    """
    import dataclasses
    import threading

    from ..sources.kinect_live import KinectLiveSource

    def pose_now(_device_ns: int) -> np.ndarray | None:
        try:
            return poses.lookup(config.k4a_camera_frame, node.get_clock().now().nanoseconds)
        except FrameError as err:
            report(f"k4a frame without pose: {err}")
            return None

    source = KinectLiveSource(pose_provider=pose_now)

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
