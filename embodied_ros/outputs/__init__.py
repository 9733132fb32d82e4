"""Outputs: scene -> ROS messages, the rosbag2/MCAP writer, objects.json and pictures."""

from .bag_writer import OutputTopics, SceneBagWriter
from .objects_json import write_objects_json
from .pictures import draw_boxes_on_frame, save_top_down_map

__all__ = ["OutputTopics", "SceneBagWriter", "write_objects_json", "draw_boxes_on_frame", "save_top_down_map"]
