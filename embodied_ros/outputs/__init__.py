"""Outputs: scene -> ROS messages, the rosbag2/MCAP writer, objects.json and pictures.

The names below load their module on first use: the bag writer imports rosbags (most of a second),
which commands that only read a run's small files (``embodied-ros ground``) do not need.
"""

from importlib import import_module
from typing import Any

__all__ = ["OutputTopics", "SceneBagWriter", "write_objects_json", "draw_boxes_on_frame", "save_top_down_map"]
_MODULES = {"OutputTopics": "bag_writer", "SceneBagWriter": "bag_writer", "write_objects_json": "objects_json",
            "draw_boxes_on_frame": "pictures", "save_top_down_map": "pictures"}


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return getattr(import_module(f".{_MODULES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
