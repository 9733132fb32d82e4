"""Whole objects from the parts that were seen: the floor under furniture, and least footprints.

A chair behind a table shows only its back above the table top; a table seen from the side shows
its top. Their boxes are the visible part, far from the whole object a user (and the ground
truth) means. Two cheap, class-level facts complete them:

* furniture stands on the floor: a box of a floor-standing class whose bottom was not seen is
  extended down to the floor (when the box's top is at a height such furniture can have);
* furniture has a least footprint: a chair is at least about 40 cm across, however thin its
  visible back is; extents below the class minimum are grown, about the box's centre.

The floor's height comes from the frames' depth (``FloorEstimate``): the lowest dense horizontal
layer of each frame's points, robustly over frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..frame import Frame
from ..geometry.boxes import canonical_yaw_box
from .class_shapes import shape_prior


def complete_box(box: np.ndarray, class_name: str, floor_z: float | None, floor_margin: float = 0.05) -> np.ndarray:
    """The whole object's upright (9,) box from the box of what was seen (see the module notes).

    Args:
        box: (9,) upright box (beta = gamma = 0) of the seen part, world z up.
        class_name: the object's class.
        floor_z: the floor's height, or None when unknown (no floor extension).
        floor_margin: a bottom this close above the floor already stands on it, metres.
    """
    prior = shape_prior(class_name)
    if prior is None:
        return box
    b = np.array(box, dtype=np.float64)
    if prior.on_floor and floor_z is not None:
        bottom, top = b[2] - 0.5 * b[5], b[2] + 0.5 * b[5]
        if floor_margin < bottom - floor_z and top - floor_z <= prior.max_height:
            b[2], b[5] = 0.5 * (top + floor_z), top - floor_z
    long_axis, short_axis = (3, 4) if b[3] >= b[4] else (4, 3)
    b[long_axis] = max(b[long_axis], prior.min_long)
    b[short_axis] = max(b[short_axis], prior.min_short)
    return canonical_yaw_box(b)


@dataclass
class FloorEstimate:
    """The floor's height from the frames' depth (z up): the lowest dense layer any frame saw.

    Per frame, world heights of a subsample of the depth points are binned (``bin_size``); the
    lowest bin holding at least ``min_fraction`` of them, between ``min_below`` and ``max_below``
    metres below the camera, is that frame's floor candidate (a table top seen in a frame without
    floor gives one too). Nothing stands below the floor, so the estimate is the lowest height that
    at least ``min_frames`` frames gave as their candidate: it only ever moves down, as the floor
    comes into view, however long the walk was spent looking at a table, whatever the frame rate,
    and in a recording of five keyframes of which one sees the floor. Candidates are counted per
    bin, so memory stays bounded.
    """

    bin_size: float = 0.02
    min_fraction: float = 0.05
    min_below: float = 0.3
    max_below: float = 3.0  # a camera is carried or mounted at most this high above the floor
    min_frames: int = 1
    pixel_stride: int = 8
    _bins: dict[int, list[float]] = field(default_factory=dict)  # bin -> [frames, sum of their heights]

    @property
    def z(self) -> float | None:
        """The floor's height in metres, or None until enough frames saw one."""
        for b in sorted(self._bins):  # a layer straddling a bin boundary counts in its two bins
            n, total = self._bins[b]
            n2, total2 = self._bins.get(b + 1, (0, 0.0))
            if n + n2 >= self.min_frames:
                return float((total + total2) / (n + n2))
        return None

    def update(self, frame: Frame) -> None:
        """Look for the floor in one frame's depth."""
        s = self.pixel_stride
        depth = frame.depth[::s, ::s]
        v, u = np.nonzero(np.isfinite(depth) & (depth > 0.2) & (depth < 6.0))
        if len(v) < 100:
            return
        z = depth[v, u].astype(np.float64)
        K, T = frame.K, frame.T_world_camera
        cam = np.stack([(u * s - K[0, 2]) * z / K[0, 0], (v * s - K[1, 2]) * z / K[1, 1], z], axis=1)
        heights = cam @ T[2, :3] + T[2, 3]
        top = T[2, 3] - self.min_below
        heights = heights[(heights < top) & (heights > T[2, 3] - self.max_below)]
        if len(heights) < self.min_fraction * len(z):
            return
        lo = heights.min()
        hist = np.bincount(((heights - lo) / self.bin_size).astype(np.int64))
        pair = hist + np.concatenate([hist[1:], [0]])  # a plane straddling a bin boundary
        dense = np.flatnonzero(pair >= self.min_fraction * len(z))
        if len(dense) == 0:
            return
        k = int(dense[0])
        in_layer = (heights >= lo + k * self.bin_size) & (heights < lo + (k + 2) * self.bin_size)
        self._add(float(np.median(heights[in_layer])))

    def _add(self, height: float, frames: int = 1) -> None:
        entry = self._bins.setdefault(int(np.floor(height / self.bin_size)), [0, 0.0])
        entry[0] += frames
        entry[1] += frames * height

    def assume(self, z: float) -> None:
        """Take ``z`` as the floor (a saved map's), as if ``min_frames`` frames had seen it."""
        self._bins.clear()
        self._add(float(z), self.min_frames)

    def reset(self) -> None:
        self._bins.clear()
