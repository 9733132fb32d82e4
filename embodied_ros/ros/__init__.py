"""The ROS 2 edge (the only place that imports rclpy): the ``embodied_perception`` node and its thin helpers.

node.py (the node and ``main``), inputs.py (topics -> Frames, poses from TF or a topic), keyframes.py
(the network's worker thread), scene_state.py (memory/occupancy/maps), services.py, conversions.py
(rosbags messages -> rclpy), params.py (ROS parameters from the config dataclasses), config.py
(NodeConfig), diagnostics.py; interfaces_build.py and harness.py build the interfaces against the
ROS 2 wheels and run the node in-process for tests and benchmarks. Nothing is imported here, so
``import embodied_ros.ros.config`` needs no ROS.
"""

__all__ = ["config", "conversions", "diagnostics", "harness", "inputs", "interfaces_build", "keyframes", "node",
           "params", "scene_state", "services"]
