"""Losses of the Embodied Perceptron, as in the paper: focal + centerness + decoupled corner loss for
boxes; cross-entropy + scene-class affinity for occupancy."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .perceptron_targets import BoxTargets

_UNIT_CORNERS = 0.5 * torch.tensor(
    [[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1], [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]],
    dtype=torch.float32,
)


@dataclass(frozen=True)
class LossWeights:
    """Weights of the loss terms (the total is their weighted sum)."""

    cls: float = 1.0
    centerness: float = 1.0
    corners: float = 1.0
    occupancy: float = 1.0
    affinity: float = 0.5
    grounding: float = 1.0  # contrastive loss of the grounding head
    # Cross-entropy weight of the "empty" occupancy class (most voxels are empty).
    empty_weight: float = 0.2
    # Focal loss parameters (RetinaNet's).
    focal_alpha: float = 0.25
    focal_gamma: float = 2.0
    # Every object weighs the same in the centerness and corner terms, however many voxels it
    # claims (a bed claims hundreds of voxels at 0.16 m, a cup eight).
    balance_objects: bool = False
    # Corner errors relative to the object's diagonal: IoU is scale-free, so 5 cm on a cup must
    # cost what 50 cm costs on a bed.
    relative_corners: bool = False
    # Cross-entropy of the pixel head (perceptron.PixelHead), and the weight of its "other" class
    # (walls and floor fill most pixels; a cup a few).
    pixel: float = 1.0
    pixel_other_weight: float = 0.1


def rotation_from_6d(r6: torch.Tensor) -> torch.Tensor:
    """(P, 6) -> (P, 3, 3) by Gram-Schmidt (the torch twin of perceptron_decode.rotation_from_6d)."""
    x = F.normalize(r6[:, 0:3], dim=1, eps=1e-9)
    b = r6[:, 3:6] - (x * r6[:, 3:6]).sum(dim=1, keepdim=True) * x
    y = F.normalize(b, dim=1, eps=1e-9)
    return torch.stack([x, y, torch.cross(x, y, dim=1)], dim=2)


def box_corners(centre: torch.Tensor, size: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
    """(P, 3), (P, 3), (P, 3, 3) -> (P, 8, 3), the corner order of geometry.boxes."""
    local = _UNIT_CORNERS.to(centre)[None] * size[:, None]  # (P, 8, 3)
    return torch.einsum("pij,pkj->pki", R, local) + centre[:, None]


def _chamfer(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(P,) symmetric nearest-corner distances of (P, 8, 3) corner sets (indifferent to box symmetries)."""
    d = torch.cdist(a, b)  # (P, 8, 8)
    return 0.5 * (d.min(dim=2).values.mean(dim=1) + d.min(dim=1).values.mean(dim=1))


def decoupled_corner_loss(
    centre: torch.Tensor, size: torch.Tensor, R: torch.Tensor,
    gt_centre: torch.Tensor, gt_size: torch.Tensor, gt_R: torch.Tensor,
    weight: torch.Tensor | None = None, relative: bool = False,
) -> torch.Tensor:
    """EmbodiedScan's decoupled 9-DoF loss: corner errors of centre, size and rotation, each alone.

    Each term builds the box from one predicted group and the ground truth for the others, so a
    wrong size cannot be compensated by a wrong rotation. The rotation term compares corner sets
    without order, so the box's symmetric rotations all score zero.

    Args:
        weight: (P,) weights of the predictions, summing to 1 (default: the mean).
        relative: divide each prediction's errors by its box's diagonal (metres -> fraction).
    """
    gt = box_corners(gt_centre, gt_size, gt_R)
    per = (F.smooth_l1_loss(box_corners(centre, gt_size, gt_R), gt, beta=0.05, reduction="none").mean(dim=(1, 2))
           + F.smooth_l1_loss(box_corners(gt_centre, size, gt_R), gt, beta=0.05, reduction="none").mean(dim=(1, 2))
           + _chamfer(box_corners(gt_centre, gt_size, R), gt))  # (P,)
    if relative:
        per = per / gt_size.norm(dim=1).clamp(min=0.05)
    if weight is None:
        return per.mean()
    return (per * weight).sum()


def _object_weights(box_index: torch.Tensor) -> torch.Tensor:
    """(P,) weights of positives: 1 / (objects x the object's positives), so each object sums to 1 / objects."""
    _, inverse, counts = torch.unique(box_index, return_inverse=True, return_counts=True)
    return 1.0 / (len(counts) * counts[inverse].to(torch.float32))


def focal_loss(logits: torch.Tensor, labels: torch.Tensor, alpha: float, gamma: float) -> torch.Tensor:
    """Sigmoid focal loss summed over (N, C) logits; labels (N,) with -1 = background."""
    target = torch.zeros_like(logits)
    pos = labels >= 0
    target[pos, labels[pos]] = 1.0
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
    p_t = p * target + (1 - p) * (1 - target)
    a_t = alpha * target + (1 - alpha) * (1 - target)
    return (a_t * (1 - p_t) ** gamma * ce).sum()


def scene_class_affinity(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """MonoScene's scene-class affinity: -log precision, recall and specificity per class present.

    Args:
        logits: (K, V) class logits over V voxels.
        labels: (V,) int64 classes.
    """
    probs = torch.softmax(logits, dim=0)
    total = logits.new_zeros(())
    n = 0
    for c in torch.unique(labels).tolist():
        p, y = probs[c], (labels == c).float()
        tp = (p * y).sum()
        precision = tp / p.sum().clamp(min=1e-6)
        recall = tp / y.sum().clamp(min=1e-6)
        specificity = ((1 - p) * (1 - y)).sum() / (1 - y).sum().clamp(min=1e-6)
        total = total - torch.log(precision.clamp(min=1e-6)) - torch.log(recall.clamp(min=1e-6))
        if (1 - y).sum() > 0:
            total = total - torch.log(specificity.clamp(min=1e-6))
        n += 1
    return total / max(n, 1)


def perceptron_loss(
    outputs: tuple[torch.Tensor, ...],
    targets: BoxTargets,
    occupancy_labels: torch.Tensor,
    coarse_centres: torch.Tensor,
    weights: LossWeights = LossWeights(),
) -> dict[str, torch.Tensor]:
    """All loss terms for one keyframe (batch 1) and their weighted ``total``.

    Args:
        outputs: the network's (occupancy, box_cls, box_ctr, box_dist, box_rot, features[, pixel_cls]);
            the pixel head's loss is pixel_loss.
        targets: box targets of this sample (perceptron_targets.box_targets).
        occupancy_labels: (X, Y, Z) int64 occupancy classes; the last output channel = empty.
        coarse_centres: (N, 3) float32 coarse voxel centres (grid frame).
    """
    occupancy, box_cls, box_ctr, box_dist, box_rot = outputs[:5]
    c = box_cls.shape[1]
    cls = box_cls.reshape(c, -1).T  # (N, C)
    ctr = box_ctr.reshape(-1)  # (N,)
    dist = box_dist.reshape(6, -1).T  # (N, 6)
    rot = box_rot.reshape(6, -1).T  # (N, 6)
    labels = torch.from_numpy(targets.labels)
    pos = labels >= 0
    n_pos = max(int(pos.sum()), 1)
    losses = {"cls": focal_loss(cls, labels, weights.focal_alpha, weights.focal_gamma) / n_pos}
    if pos.any():
        idx = torch.from_numpy(targets.box_index[targets.positives])
        gt = torch.from_numpy(targets.boxes)[idx]  # (P, 9)
        gt_R = rotation_from_6d(torch.from_numpy(targets.rot6d[targets.positives]))
        R = rotation_from_6d(rot[pos])
        lo, hi = dist[pos][:, 0::2], dist[pos][:, 1::2]
        centre = coarse_centres[pos] + torch.einsum("pij,pj->pi", R, 0.5 * (hi - lo))
        w = _object_weights(idx) if weights.balance_objects else None
        bce = F.binary_cross_entropy_with_logits(ctr[pos], torch.from_numpy(targets.centerness)[pos],
                                                 reduction="none")
        losses["centerness"] = bce.mean() if w is None else (bce * w).sum()
        losses["corners"] = decoupled_corner_loss(centre, lo + hi, R, gt[:, 0:3], gt[:, 3:6], gt_R,
                                                  weight=w, relative=weights.relative_corners)
    else:
        losses["centerness"] = ctr.sum() * 0.0
        losses["corners"] = dist.sum() * 0.0
    k = occupancy.shape[1]
    occ = occupancy.reshape(k, -1)  # (C + 1, V)
    occ_labels = occupancy_labels.reshape(-1)
    class_weight = torch.ones(k)
    class_weight[k - 1] = weights.empty_weight
    losses["occupancy"] = F.cross_entropy(occ.T, occ_labels, weight=class_weight)
    losses["affinity"] = scene_class_affinity(occ, occ_labels)
    losses["total"] = (weights.cls * losses["cls"] + weights.centerness * losses["centerness"]
                       + weights.corners * losses["corners"] + weights.occupancy * losses["occupancy"]
                       + weights.affinity * losses["affinity"])
    return losses


def pixel_loss(logits: torch.Tensor, labels: torch.Tensor, other_weight: float) -> torch.Tensor:
    """Weighted cross-entropy of the pixel head.

    Args:
        logits: (V, C + 1, H, W) pixel class logits; channel C = other.
        labels: (V, H, W) int64 classes in 0..C.
        other_weight: weight of class C against 1 for every object class.
    """
    k = logits.shape[1]
    weight = torch.ones(k)
    weight[k - 1] = other_weight
    return F.cross_entropy(logits, labels, weight=weight)
