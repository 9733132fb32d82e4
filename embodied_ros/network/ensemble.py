"""Two (or more) 2D detectors on one frame, their boxes fused: weighted box fusion, NMS across models,
or none (the scene memory fuses them across frames like any two detections of one object).

Class names are matched through the models' own vocabularies (case and spaces ignored), so models
with different label lists can be fused; the ensemble's vocabulary is their union, in first-seen order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..detections import Detections2D, class_key
from ..geometry.iou import box_iou_2d
from .image_decode import nms_per_class
from .lifted_perceptor import Detector2D

METHODS = ("wbf", "nms", "memory")
FUSION_IOU = 0.55  # boxes of one class from different models overlapping more are one object (WBF's default)


def weighted_box_fusion(boxes: np.ndarray, scores: np.ndarray, labels: np.ndarray, n_models: int,
                        iou_threshold: float = FUSION_IOU) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Weighted box fusion (Solovyev et al. 2021): boxes of a class join the cluster whose fused box they
    overlap most (IoU > ``iou_threshold``), best first; a cluster's box is the score-weighted mean of its
    members, its score their mean times min(members, n_models) / n_models, so a box only one of two
    models saw keeps half its score.

    Args:
        boxes: (N, 4) xyxy of all models together.
        scores: (N,) confidences.
        labels: (N,) class indices in one shared vocabulary.
        n_models: how many models contributed.
        iou_threshold: the clustering IoU.

    Returns:
        fused (K, 4) boxes, (K,) scores, (K,) labels, best first.
    """
    out_boxes, out_scores, out_labels = [], [], []
    for label in np.unique(labels):
        idx = np.flatnonzero(labels == label)
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        fused: list[np.ndarray] = []
        members: list[list[int]] = []
        for i in idx:
            if fused:
                iou = box_iou_2d(boxes[i : i + 1], np.asarray(fused))[0]
                best = int(np.argmax(iou))
                if iou[best] > iou_threshold:
                    members[best].append(i)
                    w = scores[members[best]]
                    fused[best] = (boxes[members[best]] * w[:, None]).sum(0) / w.sum()
                    continue
            fused.append(boxes[i].astype(np.float64))
            members.append([i])
        for box, m in zip(fused, members, strict=True):
            out_boxes.append(box)
            out_scores.append(scores[m].mean() * min(len(m), n_models) / n_models)
            out_labels.append(label)
    if not out_boxes:
        return np.zeros((0, 4)), np.zeros(0), np.zeros(0, np.int64)
    order = np.argsort(-np.asarray(out_scores), kind="stable")
    return (np.asarray(out_boxes)[order], np.asarray(out_scores)[order],
            np.asarray(out_labels, np.int64)[order])


class EnsembleDetector2D:
    """Runs every detector on the frame and fuses their boxes (``method``: "wbf", "nms" or "memory").

    Attributes:
        detectors: the member detectors, in order.
        class_names: the union of their vocabularies (first-seen order).
        name: "+"-joined member names.
    """

    def __init__(self, detectors: Sequence[Detector2D], *, method: str = "wbf", iou_threshold: float = FUSION_IOU,
                 score_threshold: float = 0.0):
        """Args:
            detectors: two or more 2D detectors.
            method: "wbf" (weighted box fusion), "nms" (per-class NMS over all models' boxes) or "memory"
                (all boxes, each model's own score: the scene memory fuses them with its object's views).
            iou_threshold: clustering IoU (wbf) or suppression IoU (nms).
            score_threshold: fused boxes below this are dropped.

        Raises:
            ValueError: fewer than two detectors, or an unknown method.
        """
        if len(detectors) < 2 or method not in METHODS:
            raise ValueError(f"an ensemble needs two or more detectors and a method of {METHODS}, got "
                             f"{len(detectors)}, {method!r}")
        self.detectors = tuple(detectors)
        self.method, self.iou_threshold, self.score_threshold = method, iou_threshold, score_threshold
        names: list[str] = []
        keys: dict[str, int] = {}
        self._maps = []
        for det in self.detectors:
            mapping = []
            for name in det.class_names:
                if class_key(name) not in keys:
                    keys[class_key(name)] = len(names)
                    names.append(name)
                mapping.append(keys[class_key(name)])
            self._maps.append(np.asarray(mapping, np.int64))
        self.class_names = tuple(names)
        self.name = "+".join(getattr(d, "name", type(d).__name__) for d in self.detectors)

    def detect(self, image: np.ndarray) -> Detections2D:
        """Every member's detections, labels mapped to the shared vocabulary, fused; best first."""
        results = [d.detect(image) for d in self.detectors]
        boxes = np.concatenate([r.boxes_xyxy for r in results]).reshape(-1, 4)
        scores = np.concatenate([r.scores for r in results])
        labels = np.concatenate([m[r.labels] for m, r in zip(self._maps, results, strict=True)]).astype(np.int64)
        if self.method == "wbf":
            boxes, scores, labels = weighted_box_fusion(boxes, scores, labels, len(self.detectors), self.iou_threshold)
        elif self.method == "nms":
            keep = nms_per_class(boxes, scores, labels, self.iou_threshold)
            keep = keep[np.argsort(-scores[keep], kind="stable")]
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
        else:
            order = np.argsort(-scores, kind="stable")
            boxes, scores, labels = boxes[order], scores[order], labels[order]
        keep = scores >= self.score_threshold
        return Detections2D(boxes[keep], labels[keep], scores[keep].astype(np.float64), self.class_names)
