"""A perceptor that returns a synthetic scene's ground truth: the upper bound of any network, and a
way to run the whole pipeline (memory, occupancy, outputs) on a generated scene with no weights."""

from __future__ import annotations

import time

import numpy as np

from ..detections import FramePerception
from ..errors import FrameError
from ..frame import Frame
from .classes import OBJECT_CLASSES
from .scene import SyntheticScene


class GroundTruthPerceptor:
    """Perfect per-frame perception of a SyntheticScene (implements network.perceptor.Perceptor).

    For frame i of the scene it returns the objects visible in that frame (see
    ``SyntheticScene.visible_objects``) as world-frame detections with a fixed score, and the
    frame's ground-truth occupancy grid.

    Args:
        scene: the scene whose frames will be perceived (frames are matched by index).
        score: confidence given to every detection.
        min_fraction, min_pixels: visibility needed for an object to be detected.
        occupancy: also return the ground-truth local occupancy grid.
    """

    name = "synthetic-oracle"
    class_names: tuple[str, ...] = OBJECT_CLASSES

    def __init__(self, scene: SyntheticScene, score: float = 0.9, min_fraction: float = 0.1,
                 min_pixels: int = 100, occupancy: bool = True) -> None:
        self.scene = scene
        self.score = float(score)
        self.min_fraction = float(min_fraction)
        self.min_pixels = int(min_pixels)
        self.occupancy = bool(occupancy)

    def perceive(self, frame: Frame) -> FramePerception:
        """Ground truth of the scene frame with the same index (the pose must match too).

        Raises:
            FrameError: if the frame is not one of the scene's frames.
        """
        t = time.perf_counter()
        i = frame.index
        if not 0 <= i < len(self.scene) or not np.allclose(frame.T_world_camera, self.scene.poses[i], atol=1e-9):
            raise FrameError(f"frame {i}: not a frame of synthetic scene seed {self.scene.seed}")
        truth = self.scene.render(i)
        ids = self.scene.visible_objects(truth, self.min_fraction, self.min_pixels)
        det = self.scene.as_detections(ids, self.score)
        occ = self.scene.occupancy(i) if self.occupancy else None
        return FramePerception(i, frame.stamp_ns, det, occupancy=occ, timings_s={"oracle": time.perf_counter() - t})
