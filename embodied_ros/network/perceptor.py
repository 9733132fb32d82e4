"""The Perceptor contract: every network, on every backend, turns a frame into FramePerception."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..detections import FramePerception
from ..frame import Frame


@runtime_checkable
class Perceptor(Protocol):
    """Turns one posed RGB-D frame into world-frame detections (and maybe occupancy).

    Implementations keep their own window of past frames if they need one; the caller
    hands frames in order and never waits on anything but ``perceive``. A perceptor whose perceptions do not
    carry their frame (the memory then never looks at its depth) says so with ``carries_frame = False``
    (SceneMapper then does no discovery ahead).
    """

    name: str
    class_names: tuple[str, ...]

    def perceive(self, frame: Frame) -> FramePerception:
        """Detect objects in ``frame``; boxes come back in ``frame.world_frame``."""
        ...
