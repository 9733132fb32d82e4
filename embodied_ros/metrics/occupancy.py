"""Occupancy mIoU over semantic voxel grids (the semantic scene completion metric).

Per class c (empty excluded): IoU_c = TP / (TP + FP + FN), counts accumulated over every
grid of the evaluation before dividing (SemanticKITTI / EmbodiedScan practice), and mIoU is the
mean over the classes that occur in the ground truth or the predictions (a class absent from
both has no IoU). **The empty class is excluded from the mean**: it covers most voxels and
would inflate the figure. The class-agnostic occupied-vs-empty IoU is reported beside it.
Voxels outside an optional ``valid`` mask (e.g. never observed) are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["EMPTY_LABEL", "OccupancyMetrics", "OccupancyAccumulator", "occupancy_miou"]

EMPTY_LABEL = -1
"""Label of an empty voxel (as in detections.LocalOccupancy)."""


@dataclass(frozen=True)
class OccupancyMetrics:
    """Results of an occupancy evaluation.

    Attributes:
        class_names: the classes evaluated, in label order.
        iou: (C,) float64 IoU per class; NaN where the class is in neither ground truth nor predictions.
        miou: mean of ``iou`` over the non-NaN classes, empty class excluded (NaN if none).
        occupied_iou: IoU of occupied (any class) vs empty, class-agnostic.
        n_voxels: voxels counted (inside the valid masks).
    """

    class_names: tuple[str, ...]
    iou: np.ndarray
    miou: float
    occupied_iou: float
    n_voxels: int

    def summary(self) -> str:
        """One line, e.g. ``occupancy mIoU 0.412 (empty excluded, 12 classes), occupied IoU 0.655``."""
        n = int(np.count_nonzero(~np.isnan(self.iou)))
        return (f"occupancy mIoU {self.miou:.3f} (empty excluded, {n} classes), "
                f"occupied IoU {self.occupied_iou:.3f}")


class OccupancyAccumulator:
    """Accumulates per-class TP/FP/FN over many grids; ``result()`` gives the metrics.

    Args:
        class_names: names of labels 0..C-1; label EMPTY_LABEL is empty.
    """

    def __init__(self, class_names: Sequence[str]) -> None:
        self.class_names = tuple(class_names)
        c = len(self.class_names)
        self._tp = np.zeros(c, np.int64)
        self._fp = np.zeros(c, np.int64)
        self._fn = np.zeros(c, np.int64)
        self._occ = np.zeros(3, np.int64)  # occupied TP, FP, FN
        self._n = 0

    def add(self, pred: np.ndarray, gt: np.ndarray, valid: np.ndarray | None = None) -> None:
        """Count one grid.

        Args:
            pred: integer label grid (any shape), EMPTY_LABEL or 0..C-1.
            gt: ground-truth grid of the same shape.
            valid: bool grid of the same shape; False voxels are ignored. Default all.

        Raises:
            ValueError: on differing shapes or labels outside -1..C-1.
        """
        pred = np.asarray(pred).astype(np.int64).reshape(-1)
        gt = np.asarray(gt).astype(np.int64).reshape(-1)
        if pred.shape != gt.shape:
            raise ValueError(f"predicted grid has {pred.size} voxels, ground truth {gt.size}")
        if valid is not None:
            v = np.asarray(valid, dtype=bool).reshape(-1)
            if v.shape != gt.shape:
                raise ValueError("valid mask and grids differ in size")
            pred, gt = pred[v], gt[v]
        c = len(self.class_names)
        for arr, what in ((pred, "prediction"), (gt, "ground truth")):
            if arr.size and (arr.min() < EMPTY_LABEL or arr.max() >= c):
                raise ValueError(f"{what} has a label outside {EMPTY_LABEL}..{c - 1}")
        # Confusion matrix with empty as row/column 0.
        conf = np.bincount((gt + 1) * (c + 1) + (pred + 1), minlength=(c + 1) ** 2).reshape(c + 1, c + 1)
        tp = np.diag(conf)[1:]
        self._tp += tp
        self._fp += conf[:, 1:].sum(axis=0) - tp
        self._fn += conf[1:, :].sum(axis=1) - tp
        po, go = pred >= 0, gt >= 0
        self._occ += [np.count_nonzero(po & go), np.count_nonzero(po & ~go), np.count_nonzero(~po & go)]
        self._n += int(gt.size)

    def extend(self, other: OccupancyAccumulator) -> None:
        """Count everything ``other`` counted too (per-scene accumulators summed for a bootstrap)."""
        if other.class_names != self.class_names:
            raise ValueError("accumulators of different class vocabularies cannot be summed")
        self._tp += other._tp
        self._fp += other._fp
        self._fn += other._fn
        self._occ += other._occ
        self._n += other._n

    def result(self) -> OccupancyMetrics:
        """Metrics over everything added so far."""
        union = self._tp + self._fp + self._fn
        with np.errstate(invalid="ignore", divide="ignore"):
            iou = np.where(union > 0, self._tp / np.maximum(union, 1), np.nan)
        present = ~np.isnan(iou)
        miou = float(iou[present].mean()) if present.any() else float("nan")
        ou = self._occ.sum()
        occ_iou = float(self._occ[0] / ou) if ou > 0 else float("nan")
        return OccupancyMetrics(self.class_names, iou, miou, occ_iou, self._n)


def occupancy_miou(
    preds: Sequence[np.ndarray],
    gts: Sequence[np.ndarray],
    class_names: Sequence[str],
    valid: Sequence[np.ndarray] | None = None,
) -> OccupancyMetrics:
    """mIoU (empty excluded) of predicted label grids against ground truth.

    Args:
        preds: label grids (e.g. (40, 40, 16) int16), EMPTY_LABEL for empty.
        gts: ground-truth grids, same shapes.
        class_names: names of labels 0..C-1.
        valid: optional bool masks, same shapes; False voxels are ignored.

    Raises:
        ValueError: on mismatched counts, shapes or labels.
    """
    if len(preds) != len(gts) or (valid is not None and len(valid) != len(gts)):
        raise ValueError(f"{len(preds)} predicted grids for {len(gts)} ground-truth grids")
    acc = OccupancyAccumulator(class_names)
    for i, (p, g) in enumerate(zip(preds, gts, strict=True)):
        acc.add(p, g, None if valid is None else valid[i])
    return acc.result()
