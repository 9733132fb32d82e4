"""ROS 2 message types and conversions without ROS (rosbags dataclasses): used by sources and outputs."""
