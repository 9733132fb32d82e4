"""The offline runner's rosbag2 (MCAP, bag format 8 for Humble): inputs and scene outputs on ROS topics.

Small on disk: the inputs go in compressed as image_transport would publish them (colour JPEG on
``.../compressed``, depth lossless PNG on ``.../compressedDepth``), and MCAP chunks are zstd
compressed (what ``ros2 bag record --storage-preset-profile zstd_fast`` writes; every MCAP
reader, rosbag2's included, decompresses them).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rosbags.rosbag2 import CompressionFormat, CompressionMode, StoragePlugin, Writer

from ..frame import Frame
from ..frame_detections import given_detections
from ..memory.change_events import ChangeEvent
from ..messages.convert import camera_info_msg, header_msg, transform_stamped_msg
from ..messages.detections2d import detection2d_array_msg
from ..messages.types import msg_class, typestore
from ..occupancy.results import OccupiedVoxels
from .change_messages import change_markers, scene_change_msg
from .image_encoding import depth_to_compressed, rgb_to_compressed
from .scene_messages import (
    ObjectLike,
    detection3d_array,
    marker_array,
    occupancy_cloud,
    scene_object_array,
)

# topics the bag holds only when there is something on them: the room changed, a detector's image detections
_WHEN_USED = ("changes", "change_markers", "detections_2d")
BAG_VERSION = 8  # rosbag2 metadata version Humble reads; Jazzy reads it too
BAG_FILE = "scene.mcap"


@dataclass(frozen=True)
class OutputTopics:
    """Topic names of a written bag (outputs match the node's; inputs match the Azure Kinect driver's)."""

    markers: str = "/embodied/markers"  # visualization_msgs/MarkerArray
    detections: str = "/embodied/detections"  # vision_msgs/Detection3DArray
    objects: str = "/embodied/objects"  # embodied_ros/SceneObjectArray
    occupancy: str = "/embodied/occupancy"  # sensor_msgs/PointCloud2
    color: str = "/rgb/image_raw/compressed"  # sensor_msgs/CompressedImage (JPEG)
    depth: str = "/depth_to_rgb/image_raw/compressedDepth"  # sensor_msgs/CompressedImage, 16UC1 mm in PNG
    camera_info: str = "/rgb/camera_info"  # sensor_msgs/CameraInfo
    tf: str = "/tf"  # tf2_msgs/TFMessage: world -> camera at every frame
    detections_2d: str = "/embodied_detector/detections"  # vision_msgs/Detection2DArray: the detector's, per frame
    changes: str = "/embodied/changes"  # embodied_ros/SceneChange: each change event, when it was made
    change_markers: str = "/embodied/change_markers"  # visualization_msgs/MarkerArray: the recent changes


_TYPES = {
    "markers": "visualization_msgs/msg/MarkerArray",
    "detections": "vision_msgs/msg/Detection3DArray",
    "objects": "embodied_ros/msg/SceneObjectArray",
    "occupancy": "sensor_msgs/msg/PointCloud2",
    "color": "sensor_msgs/msg/CompressedImage",
    "depth": "sensor_msgs/msg/CompressedImage",
    "camera_info": "sensor_msgs/msg/CameraInfo",
    "tf": "tf2_msgs/msg/TFMessage",
    "detections_2d": "vision_msgs/msg/Detection2DArray",
    "changes": "embodied_ros/msg/SceneChange",
    "change_markers": "visualization_msgs/msg/MarkerArray",
}
_INPUTS = ("color", "depth", "camera_info", "tf", "detections_2d")


class SceneBagWriter:
    """Writes DIR/scene.mcap + DIR/metadata.yaml, so DIR is a rosbag2 folder and the .mcap opens in Foxglove.

    rosbags writes a bag into a fresh folder named like its file; we write into DIR/scene/
    and move the two files up on close.
    """

    def __init__(self, out_dir: Path, topics: OutputTopics = OutputTopics(), write_inputs: bool = True,
                 jpeg_quality: int = 90) -> None:
        self.out_dir = Path(out_dir)
        self.topics = topics
        self.write_inputs = write_inputs
        self.jpeg_quality = jpeg_quality
        self._store = typestore()
        self._tmp = self.out_dir / "scene"
        if self._tmp.exists():
            shutil.rmtree(self._tmp)
        self._writer = Writer(self._tmp, version=BAG_VERSION, storage_plugin=StoragePlugin.MCAP)
        self._writer.set_compression(CompressionMode.STORAGE, CompressionFormat.ZSTD)  # MCAP chunk compression
        self._writer.open()
        self._conns: dict[str, Any] = {
            key: self._writer.add_connection(getattr(topics, key), msgtype, typestore=self._store)
            for key, msgtype in _TYPES.items()
            if (write_inputs or key not in _INPUTS) and key not in _WHEN_USED
        }
        self.messages_written = 0

    def _write(self, key: str, stamp_ns: int, msg: Any) -> None:
        if key not in self._conns:  # a topic written only when there is something to say (what changed)
            topic = getattr(self.topics, key)
            self._conns[key] = self._writer.add_connection(topic, _TYPES[key], typestore=self._store)
        data = self._store.serialize_cdr(msg, _TYPES[key])
        self._writer.write(self._conns[key], int(stamp_ns), data)
        self.messages_written += 1

    def write_inputs_of(self, frame: Frame) -> None:
        """The frame as the Azure Kinect driver would publish it, plus its pose on /tf and the image detections
        it carries (frame_detections.py: the detector's, as the embodied_detector node publishes them)."""
        if not self.write_inputs:
            return
        stamp, cam = frame.stamp_ns, frame.camera_frame
        fmt, jpeg = rgb_to_compressed(frame.color, "jpeg", self.jpeg_quality)
        CompressedImage = msg_class("sensor_msgs/msg/CompressedImage")
        self._write("color", stamp, CompressedImage(header=header_msg(cam, stamp), format=fmt, data=jpeg))
        fmt, png = depth_to_compressed(frame.depth)
        self._write("depth", stamp, CompressedImage(header=header_msg(cam, stamp), format=fmt, data=png))
        self._write("camera_info", stamp, camera_info_msg(frame.K, frame.width, frame.height, cam, stamp))
        tf = transform_stamped_msg(frame.T_world_camera, frame.world_frame, cam, stamp)
        self._write("tf", stamp, msg_class("tf2_msgs/msg/TFMessage")(transforms=[tf]))
        found = given_detections(frame)
        if found is not None:
            names = [found.class_names[k] for k in found.labels]
            self._write("detections_2d", stamp,
                        detection2d_array_msg(names, found.scores, found.boxes_xyxy, cam, stamp))

    def write_scene(self, stamp_ns: int, frame_id: str, objects: Sequence[ObjectLike],
                    occupancy: OccupiedVoxels | None, structure: Sequence[ObjectLike] = ()) -> None:
        """The scene outputs at one instant (all objects as published: at most N per class; the room's
        structure in its own marker namespace and message field)."""
        self._write("markers", stamp_ns, marker_array(objects, occupancy, frame_id, stamp_ns, structure=structure))
        self._write("detections", stamp_ns, detection3d_array(objects, frame_id, stamp_ns))
        self._write("objects", stamp_ns, scene_object_array(objects, frame_id, stamp_ns, structure))
        self._write("occupancy", stamp_ns, occupancy_cloud(occupancy, frame_id, stamp_ns))

    def write_changes(self, stamp_ns: int, frame_id: str, new: Sequence[ChangeEvent],
                      shown: Sequence[ChangeEvent] | None) -> None:
        """The change events made at this instant, and (``shown`` not None) the markers of the recent changes."""
        for event in new:
            self._write("changes", stamp_ns, scene_change_msg(event, frame_id))
        if shown is not None:
            self._write("change_markers", stamp_ns, change_markers(shown, frame_id, stamp_ns))

    def close(self) -> Path:
        """Finish the bag; returns the path of scene.mcap."""
        self._writer.close()
        for name in (BAG_FILE, "metadata.yaml"):
            target = self.out_dir / name
            if target.exists():
                target.unlink()
            shutil.move(str(self._tmp / name), target)
        self._tmp.rmdir()
        return self.out_dir / BAG_FILE

    def abort(self) -> None:
        """Stop without finishing the bag, after a failure (a full disk): never raises a second error.

        The unfinished file stays in ``DIR/scene/``, for the caller to remove.
        """
        with suppress(Exception):
            self._writer.abort()

    def __enter__(self) -> SceneBagWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
