"""What RViz shows besides the markers: the camera image with its detections, and the point its view follows.

``~/detections_image`` (sensor_msgs/Image, rgb8): the keyframe's colour image with the network's 2D
detections drawn (class and score, from ``image_min_score`` up); built only while someone subscribes.

``view_frame`` (TF child of ``world_frame``, no rotation): the middle of the map's extent
(outputs/scene_messages.py ``view_centre``), which config/embodied.rviz's orbit view takes as its target
frame, so the map stays framed as it grows wherever it lies in the world frame. Sent on /tf_static
(transient local, as tf2_ros's static broadcaster does), so an RViz started later still finds it; a
static transform sent again replaces the old one. Needs tf2_msgs; without it the view frame is off
and the node says so once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..detections import FramePerception
from ..frame import Frame
from ..occupancy.results import OccupiedVoxels
from ..outputs.pictures import draw_detections
from ..outputs.scene_messages import ObjectLike, view_centre
from .cdr import header, serialize

MIN_MOVE = 0.05  # metres: the view frame is sent again when the map's middle moved this far


def detections_image(frame: Frame, perception: FramePerception, min_score: float) -> dict[str, Any]:
    """sensor_msgs/Image fields (rgb8) of the frame's colour image with its 2D detections drawn."""
    rgb = frame.color if perception.detections_2d is None else draw_detections(
        frame.color, perception.detections_2d, min_score)
    h, w = rgb.shape[:2]
    return {"header": header(frame.camera_frame, frame.stamp_ns), "height": h, "width": w, "encoding": "rgb8",
            "is_bigendian": 0, "step": 3 * w, "data": np.ascontiguousarray(rgb, dtype=np.uint8).reshape(-1)}


def view_transform(centre: np.ndarray, world_frame: str, view_frame: str, stamp_ns: int) -> dict[str, Any]:
    """geometry_msgs/TransformStamped fields: ``view_frame`` at ``centre`` in ``world_frame``, unrotated."""
    return {"header": header(world_frame, stamp_ns), "child_frame_id": view_frame,
            "transform": {"translation": dict(zip("xyz", map(float, centre), strict=True)),
                          "rotation": {"w": 1.0}}}


class ViewPublisher:
    """``~/detections_image`` and the ``view_frame`` transform.

    Args:
        node: the rclpy node.
        view_frame: name of the frame RViz's view follows ("" = none).
        min_score: 2D detections drawn from this score up.
    """

    def __init__(self, node: Any, view_frame: str, min_score: float) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from sensor_msgs.msg import Image

        self._image_type, self._min_score = Image, min_score
        self._image = node.create_publisher(Image, "~/detections_image", 2)
        self._view_frame, self._tf, self._sent = view_frame, None, None
        if view_frame:
            try:
                from tf2_msgs.msg import TFMessage
            except ImportError:
                node.get_logger().info(f"tf2_msgs not installed: no view frame {view_frame!r} for RViz")
            else:
                self._tf = node.create_publisher(
                    TFMessage, "/tf_static", QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))
                self._tf_type = TFMessage

    def publish(self, frame: Frame, perception: FramePerception, objects: Sequence[ObjectLike],
                voxels: OccupiedVoxels | None, world_frame: str) -> None:
        """Publish the detections image (when subscribed) and the view frame (when the map's middle moved)."""
        if self._image.get_subscription_count() > 0:
            self._image.publish(serialize(self._image_type, detections_image(frame, perception, self._min_score)))
        if self._tf is None:
            return
        centre = view_centre(objects, voxels)
        if centre is None or (self._sent is not None and np.linalg.norm(centre - self._sent) < MIN_MOVE):
            return
        self._sent = centre
        transform = view_transform(centre, world_frame, self._view_frame, frame.stamp_ns)
        self._tf.publish(serialize(self._tf_type, {"transforms": [transform]}))
