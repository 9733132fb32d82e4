"""A Perceptor made of any 2D detector and depth lifting: useful on real data without 3D training."""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import numpy as np

from ..detections import Detections2D, FramePerception
from ..frame import Frame
from .lifting import LiftingParams, lift_detections

_DEFAULT_PARAMS = LiftingParams()  # frozen, so one shared default is safe


@runtime_checkable
class Detector2D(Protocol):
    """What LiftedPerceptor needs from a 2D detector (e.g. yolo_detector.YoloDetector2D)."""

    class_names: tuple[str, ...]

    def detect(self, rgb: np.ndarray) -> Detections2D:
        """(H, W, 3) uint8 RGB -> image detections in its pixels."""
        ...


class LiftedPerceptor:
    """2D detections lifted through depth to gravity-aligned world boxes (no occupancy).

    Args:
        detector: any object with ``detect(rgb)`` and ``class_names``.
        params: lifting settings (set ``depth_scale``/``depth_offset_px`` for sensors whose
            depth is not registered to colour).
        name: perceptor name, for logs and outputs.
    """

    def __init__(
        self, detector: Detector2D, params: LiftingParams = _DEFAULT_PARAMS, name: str = "yolo-lifted"
    ) -> None:
        self.detector = detector
        self.params = params
        self.name = name
        self.class_names: tuple[str, ...] = tuple(detector.class_names)

    def perceive(self, frame: Frame) -> FramePerception:
        """Detect in the colour image, lift through depth; boxes in ``frame.world_frame``."""
        t0 = time.perf_counter()
        dets2d = self.detector.detect(frame.color)
        return lifted_perception(frame, dets2d, self.params, time.perf_counter() - t0)


def lifted_perception(frame: Frame, dets2d: Detections2D, params: LiftingParams = _DEFAULT_PARAMS,
                      network_s: float = 0.0) -> FramePerception:
    """Image detections of ``frame`` lifted through its depth: the one path from 2D detections to the map's
    input, whether a detector ran here (LiftedPerceptor) or elsewhere (given_detections.GivenDetectionsPerceptor).

    Args:
        frame: the posed frame the detections belong to.
        dets2d: its image detections.
        params: lifting settings.
        network_s: seconds the detector took (reported as the "network" stage).
    """
    t1 = time.perf_counter()
    dets3d = lift_detections(frame, dets2d, params)
    t2 = time.perf_counter()
    return FramePerception(
        frame_index=frame.index,
        stamp_ns=frame.stamp_ns,
        detections=dets3d,
        detections_2d=dets2d,
        occupancy=None,
        timings_s={"network": network_s, "lifting": t2 - t1},
        viewpoint=frame.T_world_camera[:3, 3].copy(),
        frame=frame,
    )
