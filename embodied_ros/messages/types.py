"""ROS 2 message types for writing and reading bags without ROS: one typestore for the project.

The base is rosbags' Humble store (std/geometry/sensor/visualization msgs); vision_msgs and
this package's own messages (msg/*.msg) are registered from their .msg text, so bags we write
carry full definitions that `ros2 bag`, Foxglove and mcap-ros2-support can decode.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

PACKAGE = "embodied_ros"

# vision_msgs 4.x (Humble and Jazzy), the message definitions as released.
VISION_MSGS: dict[str, str] = {
    "vision_msgs/msg/ObjectHypothesis": "string class_id\nfloat64 score\n",
    "vision_msgs/msg/ObjectHypothesisWithPose": (
        "vision_msgs/ObjectHypothesis hypothesis\ngeometry_msgs/PoseWithCovariance pose\n"
    ),
    "vision_msgs/msg/BoundingBox3D": "geometry_msgs/Pose center\ngeometry_msgs/Vector3 size\n",
    "vision_msgs/msg/Detection3D": (
        "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\n"
        "vision_msgs/BoundingBox3D bbox\nstring id\n"
    ),
    "vision_msgs/msg/Detection3DArray": "std_msgs/Header header\nvision_msgs/Detection3D[] detections\n",
    "vision_msgs/msg/Point2D": "float64 x\nfloat64 y\n",
    "vision_msgs/msg/Pose2D": "vision_msgs/Point2D position\nfloat64 theta\n",
    "vision_msgs/msg/BoundingBox2D": "vision_msgs/Pose2D center\nfloat64 size_x\nfloat64 size_y\n",
    "vision_msgs/msg/Detection2D": (
        "std_msgs/Header header\nvision_msgs/ObjectHypothesisWithPose[] results\n"
        "vision_msgs/BoundingBox2D bbox\nstring id\n"
    ),
    "vision_msgs/msg/Detection2DArray": "std_msgs/Header header\nvision_msgs/Detection2D[] detections\n",
}

OWN_MSGS = ("SceneObject", "SceneObjectArray", "SceneChange")


def own_msg_text(name: str) -> str:
    """The .msg text of one of this package's messages (shipped under resources/msg)."""
    return resources.files(PACKAGE).joinpath("resources", "msg", f"{name}.msg").read_text()


@lru_cache(maxsize=1)
def typestore() -> Typestore:
    """The project's typestore: Humble base + vision_msgs + embodied_ros messages."""
    store = get_typestore(Stores.ROS2_HUMBLE)
    types: dict[str, Any] = {}
    for name, text in VISION_MSGS.items():
        types.update(get_types_from_msg(text, name))
    for name in OWN_MSGS:
        types.update(get_types_from_msg(own_msg_text(name), f"{PACKAGE}/msg/{name}"))
    store.register(types)
    return store


def msg_class(msgtype: str) -> Any:
    """The rosbags dataclass of a message type, e.g. ``msg_class("visualization_msgs/msg/Marker")``."""
    return typestore().types[msgtype]
