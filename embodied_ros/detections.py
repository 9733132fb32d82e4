"""What a perceptor returns for one frame: 3D detections and, optionally, local occupancy."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .frame import Frame
from .geometry.boxes import as_boxes


def class_key(name: str) -> str:
    """A class name as class lists compare it: without case or spaces ("Dining Table" = "diningtable")."""
    return "".join(name.lower().split())


@dataclass(frozen=True)
class Detections3D:
    """Oriented 3D detections in one frame of reference.

    Attributes:
        boxes: (N, 9) float64 9-DoF boxes (see geometry.boxes), metres and radians.
        labels: (N,) int64 indices into ``class_names``.
        scores: (N,) float64 confidences in [0, 1].
        class_names: the label vocabulary of the perceptor that made them.
        frame_id: frame the boxes are expressed in (``world`` after a perceptor ran).
        boxes_2d: (N, 4) float64 colour-image pixel corners (x0, y0, x1, y1) of the image region
            each box was lifted from, NaN where there is none; None when the perceptor has no
            image regions (the scene memory compares it with objects' projections).
        points: per detection, (V_i, 3) float64 world points of the object's depth (voxel
            centroids, bounded); None when the perceptor has none: the scene memory builds each
            object's geometry from them.
        pixels: per detection, (M_i, 2) int32 colour-image pixels (u, v) of the depth points that
            make up the object (bounded, subsampled); None when the perceptor has none (object
            colour comes from them).
        surround_z: (N,) float64 world height (m, z up) of the horizontal surface around each
            detection's image region (the counter a sink is set in, the table a cup stands on), NaN
            where none dominates; None when the perceptor has no depth around its boxes.
    """

    boxes: np.ndarray
    labels: np.ndarray
    scores: np.ndarray
    class_names: tuple[str, ...]
    frame_id: str
    boxes_2d: np.ndarray | None = None
    points: tuple[np.ndarray, ...] | None = None
    pixels: tuple[np.ndarray, ...] | None = None
    surround_z: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "boxes", as_boxes(self.boxes))
        object.__setattr__(self, "labels", np.asarray(self.labels, dtype=np.int64).reshape(-1))
        object.__setattr__(self, "scores", np.asarray(self.scores, dtype=np.float64).reshape(-1))
        n = len(self.boxes)
        if len(self.labels) != n or len(self.scores) != n:
            raise ValueError(
                f"boxes ({n}), labels ({len(self.labels)}) and scores ({len(self.scores)}) differ in length"
            )
        if n and (self.labels.min() < 0 or self.labels.max() >= len(self.class_names)):
            raise ValueError("a label is outside class_names")
        if self.boxes_2d is not None:
            object.__setattr__(self, "boxes_2d", np.asarray(self.boxes_2d, dtype=np.float64).reshape(n, 4))
        if self.surround_z is not None:
            object.__setattr__(self, "surround_z", np.asarray(self.surround_z, dtype=np.float64).reshape(n))
        for name in ("points", "pixels"):
            per = getattr(self, name)
            if per is not None and len(per) != n:
                raise ValueError(f"{name} has {len(per)} entries for {n} detections")

    def __len__(self) -> int:
        return len(self.boxes)

    @property
    def names(self) -> list[str]:
        """Class name of each detection."""
        return [self.class_names[i] for i in self.labels]

    @classmethod
    def empty(cls, class_names: tuple[str, ...], frame_id: str) -> Detections3D:
        return cls(np.zeros((0, 9)), np.zeros(0, np.int64), np.zeros(0), class_names, frame_id)

    def select(self, keep: np.ndarray) -> Detections3D:
        """Subset by a boolean mask or index array."""
        idx = np.arange(len(self))[keep]
        return Detections3D(self.boxes[idx], self.labels[idx], self.scores[idx], self.class_names, self.frame_id,
                            None if self.boxes_2d is None else self.boxes_2d[idx],
                            None if self.points is None else tuple(self.points[i] for i in idx),
                            None if self.pixels is None else tuple(self.pixels[i] for i in idx),
                            None if self.surround_z is None else self.surround_z[idx])


@dataclass(frozen=True)
class Detections2D:
    """Axis-aligned image detections.

    Attributes:
        boxes_xyxy: (N, 4) float64 pixel corners (x0, y0, x1, y1) in the colour image.
        labels: (N,) int64 indices into ``class_names``.
        scores: (N,) float64 confidences.
        class_names: label vocabulary.
    """

    boxes_xyxy: np.ndarray
    labels: np.ndarray
    scores: np.ndarray
    class_names: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.boxes_xyxy)


@dataclass(frozen=True)
class LocalOccupancy:
    """A perceptor's occupancy grid around the camera (the Embodied Perceptron's 40x40x16 at 0.16 m).

    Attributes:
        labels: (X, Y, Z) int16 class index per voxel; -1 = empty.
        T_world_grid: (4, 4) pose of the grid's voxel (0, 0, 0) corner in the world.
        voxel_size: edge of one voxel in metres.
        class_names: vocabulary of ``labels``.
    """

    labels: np.ndarray
    T_world_grid: np.ndarray
    voxel_size: float
    class_names: tuple[str, ...]


@dataclass(frozen=True)
class FramePerception:
    """Everything one perceptor call produced for one frame.

    Attributes:
        frame_index: index of the source frame.
        stamp_ns: stamp of the source frame, nanoseconds.
        detections: 3D detections in the world frame.
        detections_2d: the image detections they came from, when the perceptor has them.
        occupancy: local occupancy, when the perceptor predicts it.
        timings_s: seconds spent per named stage (e.g. "network", "lifting").
        viewpoint: (3,) camera position in the world frame, when the perceptor knows it (the
            scene memory turns objects' fronts towards where they were seen from).
        pixel_labels: (h, w) int16 per-pixel classes over the whole colour image at reduced
            resolution (cell (i, j) covers frame pixels [j W/w, (j + 1) W/w) x [i H/h, (i + 1) H/h)),
            indices into ``detections.class_names``, -1 for none; from a pixel head, for the world
            map's class votes.
        frame: the frame the perceptor saw, when it passes it on: the scene memory checks which
            objects were in view (and not hidden) but not detected, and samples their colour.
    """

    frame_index: int
    stamp_ns: int
    detections: Detections3D
    detections_2d: Detections2D | None = None
    occupancy: LocalOccupancy | None = None
    timings_s: dict[str, float] = field(default_factory=dict)
    viewpoint: np.ndarray | None = None
    pixel_labels: np.ndarray | None = None
    frame: Frame | None = None
