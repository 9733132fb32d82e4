"""A Perceptor fed with another detector's image detections (a topic, a bag) instead of running a network.

A detector elsewhere (the ``embodied_detector`` node, isaac_ros, a user's YOLO-World) names what it
sees with its own strings; the detections of one image travel with that image's frame
(frame_detections.py) and are lifted through depth by the same code
as a detector run here (lifted_perceptor.lifted_perception), so both give the same map. Class names
are strings: names never seen before join the vocabulary as they come (in first-seen order), and
that vocabulary is what the memory, and so grounding's "the detector does not know ...", sees.
"""

from __future__ import annotations

import numpy as np

from ..detections import Detections2D, FramePerception
from ..errors import FrameError
from ..frame import Frame
from ..frame_detections import detector_seconds, given_detections
from .lifted_perceptor import lifted_perception
from .lifting import LiftingParams

__all__ = ["GivenDetectionsPerceptor"]


class GivenDetectionsPerceptor:
    """Lifts the image detections each frame carries (frame_detections.with_detections); runs no network.

    Args:
        params: lifting settings (the same as a detector run here would use).
        name: perceptor name, for logs and outputs (e.g. the topic the detections come from).
    """

    def __init__(self, params: LiftingParams | None = None, name: str = "given detections") -> None:
        self.params = params or LiftingParams()
        self.name = name
        self._vocabulary: dict[str, int] = {}

    @property
    def class_names(self) -> tuple[str, ...]:
        """Every class name received so far, in first-seen order."""
        return tuple(self._vocabulary)

    def perceive(self, frame: Frame) -> FramePerception:
        """Lift the frame's given detections (FrameError when it carries none)."""
        given = given_detections(frame)
        if given is None:
            raise FrameError(f"frame {frame.index} (stamp {frame.stamp_ns}) carries no image detections")
        for name in given.class_names:
            self._vocabulary.setdefault(name, len(self._vocabulary))
        vocabulary = self.class_names
        labels = np.array([self._vocabulary[given.class_names[k]] for k in given.labels], dtype=np.int64)
        dets = Detections2D(given.boxes_xyxy, labels, given.scores, vocabulary)
        return lifted_perception(frame, dets, self.params, detector_seconds(frame))
