"""Posed RGB-D frames from a rosbag2 recording (sqlite3 or MCAP storage), read through rosbags.

Topics. A requested topic name matches a bag topic when, both without a leading "/", they are
equal, or the bag topic ends with "/" + the requested name (a namespace in front, e.g.
"rgb/image_raw" matches "/k4a/rgb/image_raw"). An exact match wins; otherwise the match must be
unique, or InputError lists the candidates. Defaults are the Azure Kinect ROS driver's topics.

Pairing. Colour and depth are paired by header stamp (the driver gives both the capture stamp),
within ``pair_tolerance_ns``. A colour image whose depth has not arrived within about one
second of recording time is yielded as a FrameError. K comes from the newest CameraInfo seen
(the first one in the bag before any has arrived).

Poses (camera-to-world, camera axes optical). Without ``pose_topic``: /tf and /tf_static are
read into a transform tree and ``world_frame`` -> camera frame is looked up at the image
stamp, composing static and dynamic edges; dynamic edges are interpolated between their two
neighbouring samples (linear translation, slerp rotation). The camera frame is the colour
header's frame_id unless ``camera_frame`` is given; the Azure Kinect driver's
``rgb_camera_link`` is already an optical frame, so no axis change is applied: the frame id
must name an optical frame. With ``pose_topic`` (PoseStamped, PoseWithCovarianceStamped,
Odometry or TransformStamped) the poses are interpolated the same way; a PoseStamped /
PoseWithCovarianceStamped is the pose of the camera's optical frame itself, an Odometry or
TransformStamped is the pose of its child_frame_id, joined to the camera through /tf_static
(and /tf) when it differs. The world frame is then the pose messages' header frame_id.
Before the first or after the last pose sample, the nearest one is used up to
``pose_tolerance_ns``; further out the frame is a FrameError.

Detections (``detections_topic``): the vision_msgs/Detection2DArray another detector recorded beside
the images (the ``embodied_detector`` node's, or any detector's: class names as strings). Each frame
carries the array with exactly its colour stamp (frame_detections.py); a frame without one is a
FrameError saying so, never a frame with nothing detected.

Gravity: by REP-103/105 the map/odom frames are z-up, so ``gravity_aligned`` is True; the bag
itself cannot prove it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from ..frame_detections import named_detections, with_detections
from ..messages.convert import matrix_from_transform_msg, stamp_ns_from_msg
from .base import FrameSource
from .folders import check_intrinsics
from .images import decode_compressed_depth, decode_compressed_rgb, depth_to_metres, image_to_rgb
from .rosbag_open import one_line, open_rosbag
from .tf_buffer import TransformBuffer, normalise_frame_id

log = logging.getLogger(__name__)

IMAGE = "sensor_msgs/msg/Image"
COMPRESSED = "sensor_msgs/msg/CompressedImage"
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
TF_MESSAGE = "tf2_msgs/msg/TFMessage"
POSE_TYPES = (
    "geometry_msgs/msg/PoseStamped",
    "geometry_msgs/msg/PoseWithCovarianceStamped",
    "nav_msgs/msg/Odometry",
    "geometry_msgs/msg/TransformStamped",
)
_PAIR_WINDOW_NS = 1_000_000_000  # recording time to wait for a colour image's depth partner
_POSE_CHILD = "__pose_topic_camera__"  # tree node for a PoseStamped that is the camera itself


def resolve_topic(wanted: str, topics: dict[str, Any], what: str, path: str,
                  transports: tuple[str, ...] = ("compressed",)) -> str:
    """The bag topic that ``wanted`` names (rule in the module docstring).

    image_transport publishes compressed images on ``<topic>/compressed`` (and depth on
    ``<topic>/compressedDepth``): when ``wanted`` itself is not there, ``wanted/<transport>``
    is looked for, in the order of ``transports``.

    Raises:
        InputError: no match (the message lists the bag's topics) or several matches.
    """
    for key in (wanted.strip("/"), *(wanted.strip("/") + "/" + t for t in transports)):
        exact = [t for t in topics if t.strip("/") == key]
        if exact:
            return exact[0]
        matches = [t for t in topics if t.strip("/").endswith("/" + key)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            candidates = ", ".join(sorted(matches))
            raise InputError(f"{path}: {what} topic {wanted!r} is ambiguous ({candidates}); give its full name")
    listed = ", ".join(f"{t} [{topics[t].msgtype}]" for t in sorted(topics)) or "none"
    raise InputError(f"{path}: no {what} topic {wanted!r}; the bag has: {listed}")


@dataclass
class _Pending:
    """A colour message waiting for its depth partner."""

    index: int
    log_ns: int
    stamp_ns: int
    color: Any
    depth: Any = None


class RosbagSource(FrameSource):
    """Streams posed RGB-D frames out of a recorded bag.

    Args:
        path: rosbag2 directory (with metadata.yaml) or a single .mcap/.db3 file.
        color_topic: sensor_msgs/Image (rgb8, rgba8, bgr8, bgra8, mono8, 16-bit variants) or
            CompressedImage (JPEG/PNG).
        depth_topic: Image (16UC1 mm or 32FC1 m) or CompressedImage (16-bit PNG, or
            image_transport's compressedDepth on ``<depth_topic>/compressedDepth``), registered
            to colour.
        info_topic: sensor_msgs/CameraInfo of the colour camera.
        pose_topic: optional pose topic; None reads /tf and /tf_static.
        world_frame: frame the poses map into (tf mode; also the fallback when pose messages
            have an empty header frame_id).
        camera_frame: optical frame of the images; None uses the colour header's frame_id.
        pair_tolerance_ns: largest |colour stamp - depth stamp| that pairs them.
        pose_tolerance_ns: how far outside the recorded pose samples the nearest one is used.
        detections_topic: optional vision_msgs/Detection2DArray topic: each frame carries the detections of
            its stamp (frame_detections.given_detections).
        detections_class_names: names of numeric class ids on that topic (id k -> names[k]).

    Raises:
        InputError: unreadable or corrupt bag, missing or mistyped topics, no pose source, or
            a world/camera frame absent from the transform tree.
    """

    layout = "rosbag2"

    def __init__(
        self,
        path: str | Path,
        color_topic: str = "rgb/image_raw",
        depth_topic: str = "depth_to_rgb/image_raw",
        info_topic: str = "rgb/camera_info",
        pose_topic: str | None = None,
        world_frame: str = "map",
        camera_frame: str | None = None,
        pair_tolerance_ns: int = 1_000_000,
        pose_tolerance_ns: int = 20_000_000,
        detections_topic: str | None = None,
        detections_class_names: tuple[str, ...] = (),
    ) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        self.gravity_aligned = True
        self.gravity_note = f"taken as z-up (REP-103/105: ROS world frames such as {world_frame!r} are z-up)"
        self.world_frame = normalise_frame_id(world_frame)
        self.camera_frame = normalise_frame_id(camera_frame) if camera_frame else None
        self.pair_tolerance_ns = int(pair_tolerance_ns)
        self._tf = TransformBuffer(extrapolation_ns=pose_tolerance_ns)
        self._pose_child: str | None = None
        self._warned_frames = False
        self._reader, self.truncation = open_rosbag(self.path)  # truncation: how a cut .mcap is read, else ""
        try:
            topics = self._reader.topics
            self.color_topic = resolve_topic(color_topic, topics, "colour", self.name)
            self.depth_topic = resolve_topic(depth_topic, topics, "depth", self.name,
                                             transports=("compressedDepth", "compressed"))
            self.info_topic = resolve_topic(info_topic, topics, "camera info", self.name)
            self._check_type(topics, self.color_topic, (IMAGE, COMPRESSED))
            self._check_type(topics, self.depth_topic, (IMAGE, COMPRESSED))
            self._check_type(topics, self.info_topic, (CAMERA_INFO,))
            self._length = int(topics[self.color_topic].msgcount)
            self._load_poses(topics, pose_topic)
            self.detections_topic = self._load_detections(topics, detections_topic, detections_class_names)
            self._K, self._info_size = self._first_camera_info()
            self.intrinsics_note = f"CameraInfo on {self.info_topic}"
            self.details = f"colour {self.color_topic}, depth {self.depth_topic}, poses " + (
                f"{pose_topic}" if pose_topic else f"/tf ({self.world_frame} -> the image frame)") + (
                f", detections {self.detections_topic}" if self.detections_topic else "") + (
                f"; {self.truncation}" if self.truncation else "")
        except BaseException:
            self._reader.close()
            raise

    # ---- whole-bag checks and reads ---------------------------------------------------------------

    def _check_type(self, topics: dict[str, Any], topic: str, allowed: tuple[str, ...]) -> None:
        msgtype = topics[topic].msgtype
        if msgtype not in allowed:
            raise InputError(f"{self.name}: topic {topic} has type {msgtype}, expected {' or '.join(allowed)}")

    def _messages(self, topics: list[str]) -> Iterator[tuple[str, int, Any]]:
        """(topic, log time ns, deserialised message) in recording order.

        Raises:
            InputError: the storage cannot be read (truncated or corrupt file).
        """
        connections = [c for c in self._reader.connections if c.topic in topics]
        if not connections:  # rosbags reads every topic when given none
            return
        stream = self._reader.messages(connections=connections)
        while True:
            try:
                connection, log_ns, raw = next(stream)
            except StopIteration:
                return
            except Exception as err:  # any failure inside the storage reader means a broken file
                raise InputError(f"rosbag {self.path} is truncated or corrupt: {one_line(err)}") from None
            try:
                msg = self._reader.deserialize(raw, connection.msgtype)
            except Exception as err:
                raise InputError(
                    f"rosbag {self.path}: cannot decode a {connection.msgtype} on {connection.topic}: {one_line(err)}"
                ) from None
            yield connection.topic, log_ns, msg

    def _load_poses(self, topics: dict[str, Any], pose_topic: str | None) -> None:
        """Fill the transform tree from /tf, /tf_static and the pose topic (small, read up front)."""
        tf_topics = []
        for name in ("tf_static", "tf"):
            try:
                found = resolve_topic(name, topics, "tf", self.name)
            except InputError:
                continue
            self._check_type(topics, found, (TF_MESSAGE,))
            tf_topics.append(found)
        if pose_topic is None and not tf_topics:
            listed = ", ".join(sorted(topics))
            raise InputError(f"{self.name}: no pose source: no /tf, /tf_static or pose_topic (topics: {listed})")
        resolved_pose = None
        if pose_topic is not None:
            resolved_pose = resolve_topic(pose_topic, topics, "pose", self.name)
            self._check_type(topics, resolved_pose, POSE_TYPES)
        static = {t for t in tf_topics if t.strip("/").endswith("tf_static")}
        world_from_poses = None
        # tf first, then the pose topic, so the pose topic's edge wins where both give one
        for topic, _, msg in self._messages(tf_topics):
            for tr in msg.transforms:
                T = matrix_from_transform_msg(tr.transform)
                stamp = stamp_ns_from_msg(tr.header.stamp)
                self._tf.add(tr.header.frame_id, tr.child_frame_id, stamp, T, static=topic in static)
        if resolved_pose is not None:
            for _, _, msg in self._messages([resolved_pose]):
                parent = normalise_frame_id(msg.header.frame_id) or self.world_frame
                world_from_poses = world_from_poses or parent
                child = normalise_frame_id(getattr(msg, "child_frame_id", "")) or _POSE_CHILD
                body = msg.transform if hasattr(msg, "transform") else msg.pose
                body = getattr(body, "pose", body)  # PoseWithCovariance -> Pose
                self._tf.add(parent, child, stamp_ns_from_msg(msg.header.stamp), matrix_from_transform_msg(body))
                self._pose_child = self._pose_child or child
            if world_from_poses is None:
                raise InputError(f"{self.name}: pose topic {resolved_pose} has no messages")
            self.world_frame = world_from_poses
        known = self._tf.frames
        for what, name in (("world frame", self.world_frame), ("camera frame", self.camera_frame)):
            if name and name not in known and not (what == "camera frame" and self._pose_child == _POSE_CHILD):
                listed = ", ".join(sorted(known)) or "none"
                raise InputError(f"{self.name}: {what} {name!r} is not in the recorded transforms (frames: {listed})")

    def _load_detections(self, topics: dict[str, Any], wanted: str | None, names: tuple[str, ...]) -> str | None:
        """Read every Detection2DArray of ``wanted`` (small) into {stamp: detections}; the resolved topic."""
        from ..messages.detections2d import DETECTION2D_ARRAY, detections_from_msg

        self._detections: dict[int, Any] = {}
        if not wanted:
            return None
        topic = resolve_topic(wanted, topics, "detections", self.name, transports=())
        self._check_type(topics, topic, (DETECTION2D_ARRAY,))
        for _, _, msg in self._messages([topic]):
            found = detections_from_msg(msg, names)
            self._detections[found.stamp_ns] = named_detections(found.names, found.scores, found.boxes_xyxy)
        return topic

    def _first_camera_info(self) -> tuple[np.ndarray, tuple[int, int]]:
        for _, _, msg in self._messages([self.info_topic]):
            K = check_intrinsics(np.asarray(msg.k, dtype=np.float64).reshape(3, 3),
                                 f"{self.name}: camera info on {self.info_topic} (the first one)")
            return K, (int(msg.width), int(msg.height))
        raise InputError(f"{self.name}: camera info topic {self.info_topic} has no messages")

    # ---- streaming -----------------------------------------------------------------------------

    def __len__(self) -> int:
        """Number of colour messages (each becomes a Frame or a FrameError)."""
        return self._length

    def frames(self, stride: int = 1, max_frames: int | None = None) -> Iterator[Frame | FrameError]:
        """Frames in recording order; ``index`` counts colour messages, so stride skips by it."""
        stride = max(1, int(stride))
        if max_frames is not None and max_frames <= 0:
            return
        produced = 0
        for pending in self._paired():
            if pending.index % stride:
                continue
            try:
                yield self._frame(pending)
            except FrameError as err:
                yield err
            produced += 1
            if max_frames is not None and produced >= max_frames:
                return

    def _paired(self) -> Iterator[_Pending]:
        """Colour messages in order, each with its depth partner when one was found."""
        queue: list[_Pending] = []  # colour in arrival order, waiting for depth
        depths: list[tuple[int, int, Any]] = []  # (log ns, stamp ns, msg) without colour yet
        count = 0
        topics = [self.color_topic, self.depth_topic, self.info_topic]
        for topic, log_ns, msg in self._messages(topics):
            if topic == self.info_topic:
                self._K = np.asarray(msg.k, dtype=np.float64).reshape(3, 3)
                self._info_size = (int(msg.width), int(msg.height))
            elif topic == self.color_topic:
                entry = _Pending(count, log_ns, stamp_ns_from_msg(msg.header.stamp), msg)
                count += 1
                match = self._closest(entry.stamp_ns, [d[1] for d in depths])
                if match is not None:
                    entry.depth = depths.pop(match)[2]
                queue.append(entry)
            else:
                stamp = stamp_ns_from_msg(msg.header.stamp)
                waiting = [e for e in queue if e.depth is None]
                match = self._closest(stamp, [e.stamp_ns for e in waiting])
                if match is not None:
                    waiting[match].depth = msg
                else:
                    depths.append((log_ns, stamp, msg))
            # hand out the head of the queue once it is complete or has waited long enough
            while queue and (queue[0].depth is not None or log_ns - queue[0].log_ns > _PAIR_WINDOW_NS):
                yield queue.pop(0)
            depths = [d for d in depths if log_ns - d[0] <= _PAIR_WINDOW_NS]
        yield from queue

    def _closest(self, stamp_ns: int, candidates: list[int]) -> int | None:
        """Index of the candidate stamp nearest ``stamp_ns`` within the pairing tolerance."""
        if not candidates:
            return None
        gaps = np.abs(np.asarray(candidates, dtype=np.int64) - stamp_ns)
        best = int(np.argmin(gaps))
        return best if gaps[best] <= self.pair_tolerance_ns else None

    # ---- one frame -----------------------------------------------------------------------------

    def _frame(self, pending: _Pending) -> Frame:
        """Decode, pair and pose one colour message (FrameError messages name the frame)."""
        try:
            color, depth, camera, T_world_camera = self._decode(pending)
        except FrameError as err:
            raise FrameError(f"frame {pending.index} ({self.name}:{self.color_topic}): {err}") from None
        frame = Frame(
            color=color,
            depth=depth,
            K=self._K.copy(),
            T_world_camera=T_world_camera,
            stamp_ns=pending.stamp_ns,
            index=pending.index,
            source_name=f"{self.name}:{self.color_topic}",
            world_frame=self.world_frame,
            camera_frame=camera,
            extras={"depth_stamp_ns": stamp_ns_from_msg(pending.depth.header.stamp), "log_time_ns": pending.log_ns},
        )
        if not self.detections_topic:
            return frame
        detections = self._detections.get(pending.stamp_ns)
        if detections is None:
            raise FrameError(f"frame {pending.index} ({self.name}:{self.color_topic}): no Detection2DArray on "
                             f"{self.detections_topic} with its stamp {pending.stamp_ns}")
        return with_detections(frame, detections)

    def _decode(self, pending: _Pending) -> tuple[np.ndarray, np.ndarray, str, np.ndarray]:
        """(RGB, depth metres, camera frame, T_world_camera) of one pair; FrameError on any problem."""
        color_msg, depth_msg = pending.color, pending.depth
        if depth_msg is None:
            raise FrameError(
                f"no depth on {self.depth_topic} within {self.pair_tolerance_ns / 1e6:g} ms of stamp {pending.stamp_ns}"
            )
        if color_msg.__msgtype__ == COMPRESSED:
            color = decode_compressed_rgb(color_msg.format, color_msg.data)
        else:
            color = image_to_rgb(color_msg.encoding, color_msg.height, color_msg.width, color_msg.step,
                                 color_msg.data, bool(color_msg.is_bigendian))
        if depth_msg.__msgtype__ == COMPRESSED:
            depth = decode_compressed_depth(depth_msg.format, depth_msg.data)
        else:
            depth = depth_to_metres(depth_msg.encoding, depth_msg.height, depth_msg.width, depth_msg.step,
                                    depth_msg.data, bool(depth_msg.is_bigendian))
        height, width = color.shape[:2]
        if self._info_size[0] and self._info_size != (width, height):
            raise FrameError(
                f"camera info on {self.info_topic} is {self._info_size[0]}x{self._info_size[1]} "
                f"but the colour image is {width}x{height}"
            )
        camera = self.camera_frame or normalise_frame_id(color_msg.header.frame_id)
        if not camera:
            raise FrameError("colour header has an empty frame_id; pass camera_frame")
        depth_frame = normalise_frame_id(depth_msg.header.frame_id)
        if depth_frame and depth_frame != normalise_frame_id(color_msg.header.frame_id) and not self._warned_frames:
            self._warned_frames = True
            log.warning("%s: depth frame %r differs from colour frame %r; is %s registered to colour?",
                        self.name, depth_frame, color_msg.header.frame_id, self.depth_topic)
        source = self._pose_child if self._pose_child == _POSE_CHILD else camera
        try:
            T_world_camera = self._tf.lookup(self.world_frame, source, pending.stamp_ns)
        except LookupError as err:
            raise FrameError(f"no camera pose: {err}") from None
        return color, depth, camera, T_world_camera

    def close(self) -> None:
        """Close the bag (safe to call twice)."""
        if self._reader.stack is not None:
            self._reader.close()
