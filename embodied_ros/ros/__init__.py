"""The ROS 2 edge (the only place that imports rclpy): the ``embodied_perception`` node, the player and their helpers.

node.py (the node and ``main``), inputs.py (topics -> Frames: QoS, pairing, poses from TF or a topic),
keyframes.py (the network's worker thread on the keyframes ..keyframe_policy picks; the per-frame step is
..mapper.SceneMapper), services.py (map names and atomic saves: ..map_files), scene_publisher.py + cdr.py
(outputs serialised from numpy arrays),
conversions.py (rosbags messages -> rclpy, for service answers), params.py (ROS parameters from the
config dataclasses), config.py (NodeConfig), diagnostics.py, player.py (``embodied-ros play``), detector_node.py (the
``embodied_detector`` node: images in, vision_msgs/Detection2DArray out) and detections_input.py (the map
node's ``detections_topic``: frames paired with those detections by stamp). The
in-process harness of the tests and benchmarks is tests/ros_harness.py. Nothing is imported here, so
``import embodied_ros.ros.config`` needs no ROS.
"""

__all__ = ["cdr", "config", "conversions", "detections_input", "detector_node", "diagnostics", "inputs", "keyframes",
           "node", "params", "player", "scene_publisher", "services"]
