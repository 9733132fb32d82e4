"""3D detection mAP@0.25 / @0.50 with exact 9-DoF IoU, per class, VOC/ScanNet style.

The protocol is the one of ScanNet/EmbodiedScan evaluations (mmdet3d ``indoor_eval``): per
class, predictions of all scenes are ranked by score; each takes the ground-truth box of its
scene and class with the highest IoU; it is a true positive when that IoU is strictly above the
threshold and the box was not taken by a better-ranked prediction, else a false positive. AP is
the area under the precision envelope over all recall points (VOC 2010+, ``mode='area'``).

Choices, said once:
* IoU is the exact 9-DoF IoU of geometry.iou (not an axis-aligned or yaw-only approximation).
* mAP is the mean over the classes that have at least one ground-truth box; a class with
  none has no AP (NaN in ``ap``) and predictions of it cannot lower the mean.
* Predictions with equal scores keep their input order (stable sort), so results are
  deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..detections import Detections3D
from ..geometry.boxes import as_boxes
from ..geometry.iou import box_iou_3d

__all__ = ["BoxSet", "DetectionMetrics", "average_precision", "evaluate_detection"]

IOU_THRESHOLDS = (0.25, 0.5)
"""The two thresholds every 3D detection paper of this family reports."""


@dataclass(frozen=True)
class BoxSet:
    """The boxes of one scene (ground truth or predictions), all in one frame.

    Attributes:
        boxes: (N, 9) float64 9-DoF boxes (geometry.boxes convention).
        names: N class names.
        scores: (N,) float64 confidences; ones for ground truth.
    """

    boxes: np.ndarray
    names: tuple[str, ...]
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        boxes = as_boxes(self.boxes)
        names = tuple(str(n) for n in self.names)
        scores = np.asarray(self.scores, dtype=np.float64).reshape(-1)
        if scores.size == 0 and len(boxes):
            scores = np.ones(len(boxes))
        if len(names) != len(boxes) or len(scores) != len(boxes):
            raise ValueError(f"boxes ({len(boxes)}), names ({len(names)}) and scores ({len(scores)}) differ in length")
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "scores", scores)

    def __len__(self) -> int:
        return len(self.boxes)

    @classmethod
    def from_detections(cls, detections: Detections3D) -> BoxSet:
        """The boxes, class names and scores of a perceptor's detections."""
        return cls(detections.boxes, tuple(detections.names), detections.scores)


@dataclass(frozen=True)
class DetectionMetrics:
    """Results of ``evaluate_detection``.

    Attributes:
        iou_thresholds: the thresholds evaluated.
        ap: per threshold, per class, the average precision (NaN for classes without ground truth).
        recall: per threshold, per class, the recall at the lowest score (NaN without ground truth).
        mean_ap: per threshold, the mean AP over classes with ground truth (NaN if there are none).
        n_gt: per class, the number of ground-truth boxes.
        n_pred: per class, the number of predictions.
    """

    iou_thresholds: tuple[float, ...]
    ap: dict[float, dict[str, float]]
    recall: dict[float, dict[str, float]]
    mean_ap: dict[float, float]
    n_gt: dict[str, int]
    n_pred: dict[str, int]

    def summary(self) -> str:
        """One line, e.g. ``mAP@0.25 0.612  mAP@0.50 0.401  (14 classes, 230 boxes)``."""
        parts = [f"mAP@{t:.2f} {self.mean_ap[t]:.3f}" for t in self.iou_thresholds]
        n_classes = sum(1 for n in self.n_gt.values() if n > 0)
        return "  ".join(parts) + f"  ({n_classes} classes, {sum(self.n_gt.values())} boxes)"


def average_precision(recall: np.ndarray, precision: np.ndarray) -> float:
    """Area under the precision envelope (VOC 2010+ / mmdet3d ``mode='area'``).

    Args:
        recall: (K,) recall after each ranked prediction (non-decreasing).
        precision: (K,) precision after each ranked prediction.

    Returns:
        AP in [0, 1]; 0.0 when there is no prediction.
    """
    recall = np.asarray(recall, dtype=np.float64).reshape(-1)
    precision = np.asarray(precision, dtype=np.float64).reshape(-1)
    if recall.size == 0:
        return 0.0
    mrec = np.concatenate([[0.0], recall, [1.0]])
    mpre = np.concatenate([[0.0], precision, [0.0]])
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]  # envelope: best precision at any higher recall
    steps = np.flatnonzero(mrec[1:] != mrec[:-1])
    return float(np.sum((mrec[steps + 1] - mrec[steps]) * mpre[steps + 1]))


def _class_ap(
    preds: list[tuple[np.ndarray, np.ndarray]], gts: list[np.ndarray], thresholds: Sequence[float]
) -> tuple[list[float], list[float]]:
    """AP and final recall of one class at each threshold.

    Args:
        preds: per scene, (P, 9) boxes and (P,) scores of this class.
        gts: per scene, (G, 9) ground-truth boxes of this class.
    """
    n_gt = sum(len(g) for g in gts)
    scene_of = np.concatenate([np.full(len(p[0]), s, dtype=np.int64) for s, p in enumerate(preds)]
                              or [np.zeros(0, np.int64)])
    scores = np.concatenate([p[1] for p in preds] or [np.zeros(0)])
    order = np.argsort(-scores, kind="stable")
    # Best-IoU ground truth of every prediction in its scene (computed once for all thresholds).
    best_iou = np.zeros(len(scores))
    best_gt = np.full(len(scores), -1, dtype=np.int64)
    offset = 0
    for s, (boxes, _) in enumerate(preds):
        if len(boxes) and len(gts[s]):
            iou = box_iou_3d(boxes, gts[s])  # (P, G)
            best_gt[offset:offset + len(boxes)] = np.argmax(iou, axis=1)
            best_iou[offset:offset + len(boxes)] = iou.max(axis=1)
        offset += len(boxes)
    aps, recalls = [], []
    for thr in thresholds:
        taken = [np.zeros(len(g), dtype=bool) for g in gts]
        tp = np.zeros(len(order))
        for rank, k in enumerate(order):
            s, g = scene_of[k], best_gt[k]
            if g >= 0 and best_iou[k] > thr and not taken[s][g]:
                taken[s][g] = True
                tp[rank] = 1.0
        ctp = np.cumsum(tp)
        rec = ctp / max(n_gt, 1)
        prec = ctp / np.arange(1, len(order) + 1)
        aps.append(average_precision(rec, prec))
        recalls.append(float(rec[-1]) if len(rec) else 0.0)
    return aps, recalls


def evaluate_detection(
    predictions: Sequence[BoxSet | Detections3D],
    ground_truths: Sequence[BoxSet],
    iou_thresholds: Sequence[float] = IOU_THRESHOLDS,
    classes: Sequence[str] | None = None,
) -> DetectionMetrics:
    """Per-class AP and mAP of predicted boxes against ground truth over several scenes.

    Args:
        predictions: per scene, the predicted boxes (a BoxSet or a perceptor's Detections3D),
            in the same frame as that scene's ground truth.
        ground_truths: per scene, the ground-truth boxes (scores ignored).
        iou_thresholds: IoU thresholds; a match needs IoU strictly above one.
        classes: the classes to evaluate; default every class named in the ground truth or
            the predictions.

    Returns:
        DetectionMetrics with AP per class and threshold and the mean over classes with ground truth.

    Raises:
        ValueError: if the two sequences differ in length.
    """
    if len(predictions) != len(ground_truths):
        raise ValueError(f"{len(predictions)} prediction sets for {len(ground_truths)} ground-truth scenes")
    preds = [p if isinstance(p, BoxSet) else BoxSet.from_detections(p) for p in predictions]
    thresholds = tuple(float(t) for t in iou_thresholds)
    if classes is None:
        classes = sorted({n for s in (*preds, *ground_truths) for n in s.names})
    ap: dict[float, dict[str, float]] = {t: {} for t in thresholds}
    recall: dict[float, dict[str, float]] = {t: {} for t in thresholds}
    n_gt: dict[str, int] = {}
    n_pred: dict[str, int] = {}
    for name in classes:
        p_cls, g_cls = [], []
        for p, g in zip(preds, ground_truths, strict=True):
            pm = np.array([n == name for n in p.names], dtype=bool)
            gm = np.array([n == name for n in g.names], dtype=bool)
            p_cls.append((p.boxes[pm] if pm.size else np.zeros((0, 9)), p.scores[pm] if pm.size else np.zeros(0)))
            g_cls.append(g.boxes[gm] if gm.size else np.zeros((0, 9)))
        n_gt[name] = sum(len(g) for g in g_cls)
        n_pred[name] = sum(len(b) for b, _ in p_cls)
        if n_gt[name] == 0:
            for t in thresholds:
                ap[t][name] = recall[t][name] = float("nan")
            continue
        aps, recs = _class_ap(p_cls, g_cls, thresholds)
        for t, a, r in zip(thresholds, aps, recs, strict=True):
            ap[t][name], recall[t][name] = a, r
    mean_ap = {}
    for t in thresholds:
        vals = [v for v in ap[t].values() if not np.isnan(v)]
        mean_ap[t] = float(np.mean(vals)) if vals else float("nan")
    return DetectionMetrics(thresholds, ap, recall, mean_ap, n_gt, n_pred)
