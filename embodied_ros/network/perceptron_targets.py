"""Training targets of the Embodied Perceptron's box head from ground-truth boxes (numpy, per sample).

FCAF3D-like assignment on the box head's voxels: a voxel whose centre lies inside a ground-truth
box is a positive of that box; with ``centre_cell`` so are the 2 x 2 x 2 voxels around each box
centre, so a cup between voxel centres still has eight positives (a box that no voxel claims takes
the nearest voxel). A voxel claimed by several boxes goes to the smallest. Face distances of a
positive outside its box are negative (down to ``-margin``). Everything is in the grid frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.boxes import as_boxes, box_rotations, box_volumes, points_in_boxes
from .perceptron_decode import box_to_faces, rotation_to_6d


@dataclass(frozen=True)
class BoxTargets:
    """Per box-head voxel (N = prod(box_shape), z fastest).

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


def box_targets(centres: np.ndarray, gt_boxes: np.ndarray, gt_labels: np.ndarray, centre_cell: bool = False,
                margin: float = 0.0) -> BoxTargets:
    """Assign ground-truth boxes (grid frame) to the box head's voxels.

    Args:
        centres: (N, 3) voxel centres of the box head, grid frame.
        gt_boxes: (M, 9) boxes, grid frame.
        gt_labels: (M,) class indices.
        centre_cell: the voxels of the cell around each box centre (less than one voxel edge
            away along every axis) are positives even outside the box.
        margin: how far (m) a face distance may go below zero (PerceptronConfig.face_margin);
            0 clamps outside positives onto the box surface.
    """
    n = len(centres)
    edge = _voxel_edge(centres)
    boxes = as_boxes(gt_boxes)
    labels = np.full(n, -1, np.int64)
    index = np.full(n, -1, np.int64)
    outside = np.zeros(n, bool)
    if len(boxes):
        inside = points_in_boxes(centres, boxes)  # (M, N)
        claims = inside.copy()
        if centre_cell:
            claims |= np.all(np.abs(centres[None] - boxes[:, None, :3]) < edge, axis=2)
        for m in np.flatnonzero(~claims.any(axis=1)):  # nothing claimed: the nearest voxel
            claims[m, int(np.argmin(np.linalg.norm(centres - boxes[m, :3], axis=1)))] = True
        volume = np.where(claims, box_volumes(boxes)[:, None], np.inf)
        best = volume.argmin(axis=0)  # smallest claiming box per voxel
        hit = np.isfinite(volume.min(axis=0))
        index[hit] = best[hit]
        outside[hit] = ~inside[best[hit], np.flatnonzero(hit)]
        labels[hit] = np.asarray(gt_labels, np.int64)[index[hit]]
    faces = np.zeros((n, 6), np.float32)
    rot6d = np.zeros((n, 6), np.float32)
    centerness = np.zeros(n, np.float32)
    pos = np.flatnonzero(index >= 0)
    if len(pos):
        R = box_rotations(boxes[index[pos]])
        f = box_to_faces(centres[pos], boxes[index[pos], :3], boxes[index[pos], 3:6], R)
        lo, hi = np.maximum(f[:, 0::2], 0.0), np.maximum(f[:, 1::2], 0.0)
        ratio = np.minimum(lo, hi) / np.maximum(np.maximum(lo, hi), 1e-6)
        ctr = np.prod(ratio, axis=1) ** (1 / 3)  # geometric mean of the three axis ratios
        # Outside positives: centerness falls with the distance to the box centre (one voxel edge: 0).
        d = np.linalg.norm(centres[pos] - boxes[index[pos], :3], axis=1)
        out = outside[pos]
        ctr[out] = np.clip(1.0 - d[out] / edge, 0.1, 1.0)
        centerness[pos] = ctr
        faces[pos] = np.maximum(f, -margin)
        rot6d[pos] = rotation_to_6d(R)
    return BoxTargets(labels, index, faces, centerness, rot6d, boxes.astype(np.float32))


def _voxel_edge(centres: np.ndarray) -> float:
    """Spacing of a regular grid of voxel centres (z fastest: the first two differ along z)."""
    if len(centres) < 2:
        return 1.0
    return float(np.linalg.norm(centres[1] - centres[0])) or 1.0
