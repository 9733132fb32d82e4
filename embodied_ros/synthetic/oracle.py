"""A perceptor that returns a synthetic scene's ground truth: the upper bound of any network, and a
way to run the whole pipeline (memory, occupancy, outputs) on a generated scene with no weights."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..detections import Detections3D, FramePerception
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
    carries_frame = False  # its perceptions carry no frame: the memory never looks at their depth
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


class LiftedGroundTruthPerceptor:
    """A detector that is the scene's truth, giving 3D detections with points as a real lifted detector does.

    Each object with at least ``min_pixels`` pixels in the frame's instance image (``frame.extras``: its
    ``instance`` image, object id + 1 per pixel, and each object's ``classes`` and ``boxes``, as
    synthetic/revisit.py's frames carry them) is detected:

    * ``masks=False``: its 2D box (around its pixels) is lifted through the frame's depth by
      network/lifting.py, as a COCO detector's boxes are on real recordings (with what else the box holds);
    * ``masks=True``: a perfect segmenting detector: its own depth pixels are its points, its box the truth.

    Either way the memory keeps the objects' geometry and sees their surfaces, not their boxes.
    ``miss_rate`` drops detections (drawn per frame and object from ``seed``) and scores vary in ``scores``:
    a detector is not perfect.
    """

    name = "synthetic-oracle-2d"
    class_names: tuple[str, ...] = OBJECT_CLASSES

    def __init__(self, min_pixels: int = 150, miss_rate: float = 0.0, scores: tuple[float, float] = (0.6, 0.95),
                 seed: int = 0, masks: bool = False, lifting: Any = None) -> None:
        from ..network.lifting import LiftingParams

        self.min_pixels = int(min_pixels)
        self.miss_rate = float(miss_rate)
        self.scores = scores
        self.seed = int(seed)
        self.masks = bool(masks)
        self.params = lifting if lifting is not None else LiftingParams()

    def perceive(self, frame: Frame) -> FramePerception:
        """The frame's objects as detections with their points.

        Raises:
            FrameError: if the frame carries no instance image.
        """
        from scipy import ndimage

        from ..detections import Detections2D
        from ..network.lifting import lift_detections

        t = time.perf_counter()
        instance, classes = frame.extras.get("instance"), frame.extras.get("classes")
        if instance is None or classes is None:
            raise FrameError(f"frame {frame.index}: no instance image to detect from (synthetic revisit frames only)")
        counts = np.bincount(instance.reshape(-1), minlength=len(classes) + 1)
        found, boxes, labels, scores = [], [], [], []
        for k, region in enumerate(ndimage.find_objects(instance), start=1):
            if region is None or k > len(classes) or counts[k] < self.min_pixels:
                continue
            rng = np.random.default_rng([self.seed, frame.index, k])
            if rng.random() < self.miss_rate:
                continue
            ys, xs = region
            found.append(k)
            boxes.append([xs.start, ys.start, xs.stop - 1, ys.stop - 1])
            labels.append(OBJECT_CLASSES.index(classes[k - 1]))
            scores.append(rng.uniform(*self.scores))
        dets = Detections2D(np.array(boxes, dtype=np.float64).reshape(-1, 4), np.array(labels, dtype=np.int64),
                            np.array(scores, dtype=np.float64), OBJECT_CLASSES)
        t1 = time.perf_counter()
        lifted = self._segmented(frame, found, dets) if self.masks else lift_detections(frame, dets, self.params)
        return FramePerception(frame.index, frame.stamp_ns, lifted, dets, timings_s={"network": t1 - t,
                               "lifting": time.perf_counter() - t1}, viewpoint=frame.T_world_camera[:3, 3].copy(),
                               frame=frame)

    @staticmethod
    def _segmented(frame: Frame, found: list[int], dets: Any) -> Detections3D:
        """The objects ``found`` (instance ids + 1) with their own depth points (every second pixel) and true boxes."""
        instance, truth = frame.extras["instance"], frame.extras["boxes"]
        points, pixels = [], []
        sub = instance[::2, ::2]
        for k in found:
            v, u = np.nonzero(sub == k)
            u, v = 2 * u, 2 * v
            z = frame.depth[v, u]
            ok = np.isfinite(z) & (z > 0)
            u, v, z = u[ok], v[ok], z[ok].astype(np.float64)
            cam = np.stack([(u - frame.K[0, 2]) / frame.K[0, 0] * z, (v - frame.K[1, 2]) / frame.K[1, 1] * z, z], 1)
            points.append(cam @ frame.T_world_camera[:3, :3].T + frame.T_world_camera[:3, 3])
            pixels.append(np.stack([u, v], axis=1).astype(np.int32))
        boxes = np.array([truth[k - 1] for k in found], dtype=np.float64).reshape(-1, 9)
        return Detections3D(boxes, dets.labels, dets.scores, OBJECT_CLASSES, frame.world_frame,
                            boxes_2d=dets.boxes_xyxy, points=tuple(points), pixels=tuple(pixels),
                            surround_z=np.full(len(found), np.nan))
