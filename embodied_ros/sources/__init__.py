"""Frame sources: posed RGB-D folders, Azure Kinect recordings and live cameras, rosbag2.

Which source a path, camera or generated scene opens as is decided one level up, in
``embodied_ros.recordings.open_source`` (it knows the synthetic world too, which is built on these sources).
"""

from __future__ import annotations

from .base import FrameSource
from .preflight import RecordingOptions

__all__ = ["FrameSource", "RecordingOptions"]
