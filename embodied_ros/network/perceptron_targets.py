"""Training targets of the Embodied Perceptron's box head from ground-truth boxes (numpy, per sample).

FCAF3D-like assignment on the coarse voxels: a voxel whose centre lies inside a ground-truth box
is a positive of that box (the smallest box when several contain it); a box that contains no
voxel centre (a cup between centres) takes the voxel nearest its centre, so every object is
learned. Everything is in the grid frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.boxes import as_boxes, box_rotations, box_volumes, points_in_boxes
from .perceptron_decode import box_to_faces, rotation_to_6d


@dataclass(frozen=True)
class BoxTargets:
    """Per coarse voxel (N = X/2 * Y/2 * Z/2, z fastest).

    Attributes:
        labels: (N,) int64 class of the assigned box, -1 for background.
        box_index: (N,) int64 index of the assigned ground-truth box, -1 for background.
        faces: (N, 6) float32 distances to the box faces along its own axes (zeros for background).
        centerness: (N,) float32 in [0, 1], FCOS-style, from the face distances.
        rot6d: (N, 6) float32 first two columns of the box rotation.
        boxes: (M, 9) float32 the ground-truth boxes (grid frame), for the corner loss.
    """

    labels: np.ndarray
    box_index: np.ndarray
    faces: np.ndarray
    centerness: np.ndarray
    rot6d: np.ndarray
    boxes: np.ndarray

    @property
    def positives(self) -> np.ndarray:
        return self.labels >= 0


def box_targets(coarse_centres: np.ndarray, gt_boxes: np.ndarray, gt_labels: np.ndarray) -> BoxTargets:
    """Assign ground-truth boxes (grid frame) to the coarse voxels.

    Args:
        coarse_centres: (N, 3) voxel centres of the box head, grid frame.
        gt_boxes: (M, 9) boxes, grid frame.
        gt_labels: (M,) class indices.
    """
    n = len(coarse_centres)
    boxes = as_boxes(gt_boxes)
    labels = np.full(n, -1, np.int64)
    index = np.full(n, -1, np.int64)
    if len(boxes):
        inside = points_in_boxes(coarse_centres, boxes)  # (M, N)
        volume = np.where(inside, box_volumes(boxes)[:, None], np.inf)
        best = volume.argmin(axis=0)  # smallest containing box per voxel
        hit = np.isfinite(volume.min(axis=0))
        index[hit] = best[hit]
        for m in np.flatnonzero(~inside.any(axis=1)):  # boxes that contain no centre
            nearest = int(np.argmin(np.linalg.norm(coarse_centres - boxes[m, :3], axis=1)))
            if index[nearest] < 0 or box_volumes(boxes[m])[0] < box_volumes(boxes[index[nearest]])[0]:
                index[nearest] = m
        labels[index >= 0] = np.asarray(gt_labels, np.int64)[index[index >= 0]]
    faces = np.zeros((n, 6), np.float32)
    rot6d = np.zeros((n, 6), np.float32)
    centerness = np.zeros(n, np.float32)
    pos = np.flatnonzero(index >= 0)
    if len(pos):
        R = box_rotations(boxes[index[pos]])
        f = box_to_faces(coarse_centres[pos], boxes[index[pos], :3], boxes[index[pos], 3:6], R)
        # A nearest-voxel positive may lie just outside its box: clamp so distances stay >= 0.
        f = np.maximum(f, 0.0)
        lo, hi = f[:, 0::2], f[:, 1::2]
        ratio = np.minimum(lo, hi) / np.maximum(np.maximum(lo, hi), 1e-6)
        centerness[pos] = np.prod(ratio, axis=1) ** (1 / 3)  # geometric mean of the three axis ratios
        faces[pos] = f
        rot6d[pos] = rotation_to_6d(R)
    return BoxTargets(labels, index, faces, centerness, rot6d, boxes.astype(np.float32))
