"""When a frame is worth running the network on: the keyframe policy (a PipelineConfig section, ROS-free).

The node's worker thread (ros/keyframes.py) applies it to each incoming frame; `run --set keyframes.FIELD=...`
and the node's ``keyframe_*`` parameters set its fields.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .frame import Frame


@dataclass(frozen=True)
class KeyframePolicy:
    """When a frame is worth running the network on (any one condition suffices)."""

    # Camera moved at least this far since the last keyframe (metres).
    min_translation: float = 0.05
    # Camera turned at least this much since the last keyframe (radians).
    min_rotation: float = 0.1
    # At least this much time passed since the last keyframe (seconds); 0 = every frame.
    max_interval: float = 1.0
    # A keyframe that arrived while the worker was busy and waited longer than this (seconds) is
    # skipped for the next frame: its markers would come late. 0 = never skip a waiting keyframe.
    max_wait: float = 0.03

    def is_keyframe(self, last: Frame | None, frame: Frame) -> bool:
        if last is None or self.max_interval <= 0.0:
            return True
        if (frame.stamp_ns - last.stamp_ns) * 1e-9 >= self.max_interval:
            return True
        delta = np.linalg.inv(last.T_world_camera) @ frame.T_world_camera
        angle = np.arccos(np.clip((np.trace(delta[:3, :3]) - 1.0) / 2.0, -1.0, 1.0))
        return bool(np.linalg.norm(delta[:3, 3]) >= self.min_translation or angle >= self.min_rotation)
