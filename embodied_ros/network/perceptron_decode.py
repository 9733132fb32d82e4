"""Dense Embodied Perceptron outputs -> 9-DoF world boxes (outside the engine: top-k, NMS).

The box head predicts, per box-head voxel (FCAF3D-like): class logits, a centerness logit, the
signed distances from the voxel centre to the box's six faces measured along the box's own axes
(-x, +x, -y, +y, -z, +z), and a 6D rotation (the first two columns of R, Zhou et al. 2019).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.boxes import make_boxes
from ..geometry.iou import box_iou_3d
from ..geometry.transforms import transform_points


@dataclass(frozen=True)
class DecodeParams:
    """How dense predictions become boxes."""

    # Candidates kept per class before NMS (highest score first). Per class, because a bed covers
    # hundreds of full-resolution voxels that would otherwise crowd out every cup.
    top_k: int = 40
    # Candidates below this score are dropped before NMS.
    score_threshold: float = 0.05
    # Exact 9-DoF IoU above which a lower-scored candidate is suppressed.
    nms_iou: float = 0.25
    # Suppress across classes (True) or within a class only.
    class_agnostic_nms: bool = False
    # Boxes kept after NMS at most.
    max_boxes: int = 100
    # Every (voxel, class) pair is a candidate (True), or only each voxel's best class (False): a cup
    # standing on a table shares voxels whose best class is "table".
    multi_label: bool = True
    # Candidate score: "geometric" = sqrt(sigmoid(cls) * sigmoid(ctr)) (FCOS at test time), or
    # "product" = their product. The geometric mean keeps small objects, whose centerness is
    # learned low around them, above the scene memory's 0.075 threshold.
    score: str = "geometric"

    def __post_init__(self) -> None:
        if self.score not in ("geometric", "product"):
            raise ValueError(f"score {self.score!r}: must be 'geometric' or 'product'")


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def rotation_from_6d(r6: np.ndarray) -> np.ndarray:
    """(N, 6) two unnormalised columns -> (N, 3, 3) rotations by Gram-Schmidt (right-handed)."""
    a, b = r6[:, 0:3], r6[:, 3:6]
    x = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-9)
    b = b - np.sum(x * b, axis=1, keepdims=True) * x
    y = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-9)
    z = np.cross(x, y)
    return np.stack([x, y, z], axis=2)  # columns


def rotation_to_6d(R: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations -> (N, 6) first two columns (the regression target)."""
    return np.concatenate([R[:, :, 0], R[:, :, 1]], axis=1)


def faces_to_box(centres: np.ndarray, dist: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Voxel centres (N, 3), face distances (N, 6) and rotations (N, 3, 3) -> box centres and extents.

    Returns:
        ((N, 3) box centres, (N, 3) full extents), in the frame of ``centres``.
    """
    lo, hi = dist[:, 0::2], dist[:, 1::2]  # (N, 3) distances to the -axis and +axis faces
    local_offset = 0.5 * (hi - lo)  # box centre relative to the voxel centre, box axes
    # Signed distances (a voxel outside a small box) can sum below zero on a poor prediction.
    return centres + np.einsum("nij,nj->ni", R, local_offset), np.maximum(lo + hi, 1e-3)


def box_to_faces(centres: np.ndarray, boxes_centre: np.ndarray, sizes: np.ndarray, R: np.ndarray) -> np.ndarray:
    """The inverse of faces_to_box: (N, 6) face distances of points ``centres`` inside boxes."""
    local = np.einsum("nji,nj->ni", R, centres - boxes_centre)  # R^T (p - c)
    half = 0.5 * sizes
    return np.stack([half[:, 0] + local[:, 0], half[:, 0] - local[:, 0], half[:, 1] + local[:, 1],
                     half[:, 1] - local[:, 1], half[:, 2] + local[:, 2], half[:, 2] - local[:, 2]], axis=1)


def nms_3d(boxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, iou: float, class_agnostic: bool) -> np.ndarray:
    """Greedy NMS with exact 9-DoF IoU; returns kept indices, best score first.

    Within classes, each class is suppressed on its own: K_c x K_c overlaps, never one K x K matrix.
    """
    if not class_agnostic and len(np.unique(labels)) > 1:
        keep = np.concatenate([np.flatnonzero(labels == c)[nms_3d(boxes[labels == c], scores[labels == c],
                                                                   labels[labels == c], iou, True)]
                               for c in np.unique(labels)])
        return keep[np.argsort(-scores[keep], kind="stable")]
    order = np.argsort(-scores, kind="stable")
    if len(order) == 0:
        return order
    overlaps = box_iou_3d(boxes[order], boxes[order])  # (K, K)
    suppressed = np.zeros(len(order), dtype=bool)
    keep = []
    for i in range(len(order)):
        if suppressed[i]:
            continue
        keep.append(order[i])
        suppressed |= overlaps[i] > iou
    return np.array(keep, dtype=np.int64)


def decode_boxes(
    box_cls: np.ndarray,
    box_ctr: np.ndarray,
    box_dist: np.ndarray,
    box_rot: np.ndarray,
    coarse_centres: np.ndarray,
    T_world_grid: np.ndarray,
    params: DecodeParams = DecodeParams(),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense head outputs (batch 1) -> world boxes, labels and scores.

    Args:
        box_cls: (1, C, X, Y, Z) class logits.
        box_ctr: (1, 1, X, Y, Z) centerness logits.
        box_dist: (1, 6, X, Y, Z) face distances in metres.
        box_rot: (1, 6, X, Y, Z) 6D rotations in the grid frame.
        coarse_centres: (X * Y * Z, 3) voxel centres in the grid frame (same order, z fastest).
        T_world_grid: (4, 4) pose of the grid frame in the world.
        params: thresholds.

    Returns:
        (M, 9) world boxes, (M,) labels, (M,) scores; best first.
    """
    c = box_cls.shape[1]
    cls = sigmoid(box_cls.reshape(c, -1).T)  # (N, C)
    ctr = sigmoid(box_ctr.reshape(-1))  # (N,)
    scores_all = cls * ctr[:, None]
    if params.score == "geometric":
        scores_all = np.sqrt(scores_all)
    if params.multi_label:
        voxel, labels = np.nonzero(scores_all >= params.score_threshold)  # every (voxel, class) pair above it
        scores = scores_all[voxel, labels]
    else:
        labels = scores_all.argmax(axis=1)
        scores = scores_all[np.arange(len(labels)), labels]
        voxel = np.flatnonzero(scores >= params.score_threshold)
        labels, scores = labels[voxel], scores[voxel]
    order = np.lexsort((-scores, labels))  # by class, best first within each
    rank = np.arange(len(order)) - np.searchsorted(labels[order], labels[order])  # rank within the class
    order = order[rank < params.top_k]
    voxel, labels, scores = voxel[order], labels[order], scores[order]
    if len(voxel) == 0:
        return np.zeros((0, 9)), np.zeros(0, np.int64), np.zeros(0)
    dist = box_dist.reshape(6, -1).T[voxel].astype(np.float64)
    R_grid = rotation_from_6d(box_rot.reshape(6, -1).T[voxel].astype(np.float64))
    centres, sizes = faces_to_box(coarse_centres[voxel].astype(np.float64), dist, R_grid)
    R_world = T_world_grid[:3, :3][None] @ R_grid
    boxes = make_boxes(transform_points(T_world_grid, centres), sizes, R_world)
    keep = nms_3d(boxes, scores, labels, params.nms_iou, params.class_agnostic_nms)[: params.max_boxes]
    return boxes[keep], labels[keep], scores[keep]
