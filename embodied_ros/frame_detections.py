"""Image detections that travel with their frame: another detector's output (a topic, a bag) for this image.

The one place that knows how a Frame carries them (``Frame.extras``): the sources that read them
(a bag's Detection2DArray topic), the node that pairs them by stamp and the perceptor that lifts
them (network/given_detections.py) all go through these three functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .detections import Detections2D
from .frame import Frame

_KEY = "detections_2d"  # Frame.extras key of the frame's given detections
_DETECTOR_S = "detector_s"  # ... and of the seconds the detector reported, if any

__all__ = ["detector_seconds", "given_detections", "named_detections", "with_detections"]


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


def detector_seconds(frame: Frame) -> float:
    """The seconds the frame's detector reported for it (0 when unknown)."""
    return float(frame.extras.get(_DETECTOR_S, 0.0))
