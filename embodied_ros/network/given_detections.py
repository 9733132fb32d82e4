"""A Perceptor fed with another detector's image detections (a topic, a bag) instead of running a network.

A detector elsewhere (the ``embodied_detector`` node, isaac_ros, a user's YOLO-World) names what it
sees with its own strings; the detections of one image travel with that image's frame
(:func:`with_detections`, the one place that knows how) and are lifted through depth by the same code
as a detector run here (lifted_perceptor.lifted_perception), so both give the same map. Class names
are strings: names never seen before join the vocabulary as they come (in first-seen order), and
that vocabulary is what the memory, and so grounding's "the detector does not know ...", sees.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..detections import Detections2D, FramePerception
from ..errors import FrameError
from ..frame import Frame
from .lifted_perceptor import lifted_perception
from .lifting import LiftingParams

_KEY = "detections_2d"  # Frame.extras key of the frame's given detections
_DETECTOR_S = "detector_s"  # ... and of the seconds the detector reported, if any

__all__ = ["GivenDetectionsPerceptor", "given_detections", "named_detections", "with_detections"]


def named_detections(names: Sequence[str], scores: np.ndarray, boxes_xyxy: np.ndarray) -> Detections2D:
    """Detections2D of named detections: (N,) names, (N,) scores, (N, 4) pixel corners; the vocabulary
    is the names in first-seen order."""
    vocabulary = tuple(dict.fromkeys(names))
    index = {name: k for k, name in enumerate(vocabulary)}
    return Detections2D(np.asarray(boxes_xyxy, dtype=np.float64).reshape(-1, 4),
                        np.array([index[n] for n in names], dtype=np.int64),
                        np.asarray(scores, dtype=np.float64).reshape(-1), vocabulary)


def with_detections(frame: Frame, detections: Detections2D, detector_s: float = 0.0) -> Frame:
    """``frame`` carrying the image detections another detector made of it (``detector_s``: its seconds)."""
    return dataclasses.replace(frame, extras={**frame.extras, _KEY: detections, _DETECTOR_S: float(detector_s)})


def given_detections(frame: Frame) -> Detections2D | None:
    """The image detections ``frame`` carries (None: none were given)."""
    return frame.extras.get(_KEY)


class GivenDetectionsPerceptor:
    """Lifts the image detections each frame carries (:func:`with_detections`); runs no network.

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
        return lifted_perception(frame, dets, self.params, frame.extras.get(_DETECTOR_S, 0.0))
