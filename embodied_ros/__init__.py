"""embodied_ros: continuous 3D scene understanding from posed RGB-D frames (ROS-free core)."""

__version__ = "0.1.0"
