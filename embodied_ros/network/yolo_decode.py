"""Decode of Darknet YOLO heads (v3/v4 style) into image boxes, with per-class NMS, in numpy.

The exported graph ends at the raw head convolutions; this one decode serves every backend
(PyTorch, ONNX Runtime, TensorRT), so their detections can only differ by the heads' numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.special import expit

from ..detections import Detections2D

DEFAULT_SCORE_THRESHOLD = 0.25  # Darknet's `-thresh` default
DEFAULT_IOU_THRESHOLD = 0.45  # Darknet's NMS default in `test_detector`


@dataclass(frozen=True)
class YoloHeadSpec:
    """What the decode needs to know about one ``[yolo]`` layer.

    Attributes:
        anchors: (A, 2) float64 anchor (width, height) in network-input pixels, the masked ones only.
        num_classes: number of classes C; the head has A * (5 + C) channels.
        scale_x_y: Darknet's ``scale_x_y`` (1.0 = plain sigmoid for the centre offset).
    """

    anchors: np.ndarray
    num_classes: int
    scale_x_y: float = 1.0

    def __post_init__(self) -> None:
        anchors = np.asarray(self.anchors, dtype=np.float64).reshape(-1, 2)
        object.__setattr__(self, "anchors", anchors)
        if self.num_classes < 1 or len(anchors) < 1:
            raise ValueError("a YOLO head needs at least one anchor and one class")

    @property
    def channels(self) -> int:
        """Channels the head tensor must have: A * (5 + C)."""
        return len(self.anchors) * (5 + self.num_classes)


def letterbox_size(image_wh: tuple[int, int], net_wh: tuple[int, int]) -> tuple[int, int]:
    """Size (w, h) of the image inside a letterboxed network input, with Darknet's integer maths.

    Args:
        image_wh: original image (width, height) in pixels.
        net_wh: network input (width, height) in pixels.
    """
    (w, h), (net_w, net_h) = image_wh, net_wh
    if net_w / w < net_h / h:
        return net_w, (h * net_w) // w
    return (w * net_h) // h, net_h


def decode_yolo(
    heads: Sequence[np.ndarray],
    specs: Sequence[YoloHeadSpec],
    net_wh: tuple[int, int],
    image_wh: tuple[int, int],
    class_names: Sequence[str],
    *,
    score_threshold: float = DEFAULT_SCORE_THRESHOLD,
    iou_threshold: float = DEFAULT_IOU_THRESHOLD,
    letterbox: bool = False,
) -> Detections2D:
    """Turn raw YOLO head tensors into NMS-filtered detections in original image pixels.

    Follows Darknet's ``get_yolo_detections`` + ``do_nms_sort``: a cell/anchor is a candidate
    when its objectness exceeds ``score_threshold``; each class whose objectness * class
    probability exceeds it too becomes one detection (a box may carry several classes); greedy
    NMS then runs per class.

    Args:
        heads: one raw (pre-sigmoid) tensor per head, (1, A*(5+C), Hg, Wg) float32, in ``specs`` order.
        specs: the heads' anchors and class counts.
        net_wh: network input (width, height) in pixels.
        image_wh: original image (width, height) in pixels the boxes are mapped back to.
        class_names: C names, the label vocabulary of the result.
        score_threshold: minimum objectness and objectness * class probability.
        iou_threshold: a box is suppressed by a better one of its class above this IoU.
        letterbox: whether the input was letterboxed (else plainly resized to ``net_wh``).

    Returns:
        Detections2D with (N, 4) xyxy boxes in pixels, clipped to the image, sorted by score.
    """
    if len(heads) != len(specs):
        raise ValueError(f"{len(heads)} head tensors for {len(specs)} YOLO layers")
    boxes, scores, labels = [], [], []
    for head, spec in zip(heads, specs, strict=True):
        b, s, lab = _decode_head(np.asarray(head, dtype=np.float32), spec, net_wh, score_threshold)
        boxes.append(b)
        scores.append(s)
        labels.append(lab)
    boxes_cxcywh = np.concatenate(boxes)
    score = np.concatenate(scores)
    label = np.concatenate(labels)
    boxes_xyxy = _to_image_xyxy(boxes_cxcywh, net_wh, image_wh, letterbox)
    keep = nms_per_class(boxes_xyxy, score, label, iou_threshold)
    keep = keep[np.argsort(-score[keep], kind="stable")]
    return Detections2D(boxes_xyxy[keep], label[keep], score[keep].astype(np.float64), tuple(class_names))


def _decode_head(
    head: np.ndarray, spec: YoloHeadSpec, net_wh: tuple[int, int], threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One head -> candidate (box, score, label) triples; boxes (K, 4) cx, cy, w, h relative to the net input."""
    if head.ndim != 4 or head.shape[0] != 1 or head.shape[1] != spec.channels:
        raise ValueError(f"YOLO head has shape {head.shape}, expected (1, {spec.channels}, H, W)")
    num_anchors, grid_h, grid_w = len(spec.anchors), head.shape[2], head.shape[3]
    p = head.reshape(num_anchors, 5 + spec.num_classes, grid_h, grid_w)  # (A, 5+C, Hg, Wg)
    objectness = expit(p[:, 4])  # (A, Hg, Wg)
    a_idx, row, col = np.nonzero(objectness > threshold)
    if len(a_idx) == 0:
        return np.zeros((0, 4)), np.zeros(0, np.float32), np.zeros(0, np.int64)
    cell = p[a_idx, :, row, col]  # (K, 5+C)
    sxy = spec.scale_x_y
    # Darknet: x = (col + sigmoid(tx) * s - (s - 1) / 2) / Wg, w = exp(tw) * anchor_w / net_w.
    cx = (col + expit(cell[:, 0]) * sxy - 0.5 * (sxy - 1.0)) / grid_w
    cy = (row + expit(cell[:, 1]) * sxy - 0.5 * (sxy - 1.0)) / grid_h
    bw = np.exp(cell[:, 2].astype(np.float64)) * spec.anchors[a_idx, 0] / net_wh[0]
    bh = np.exp(cell[:, 3].astype(np.float64)) * spec.anchors[a_idx, 1] / net_wh[1]
    probs = objectness[a_idx, row, col][:, None] * expit(cell[:, 5:])  # (K, C)
    k_idx, cls = np.nonzero(probs > threshold)
    boxes = np.stack([cx, cy, bw, bh], axis=1)[k_idx]
    return boxes, probs[k_idx, cls], cls.astype(np.int64)


def _to_image_xyxy(
    boxes: np.ndarray, net_wh: tuple[int, int], image_wh: tuple[int, int], letterbox: bool
) -> np.ndarray:
    """(K, 4) cx, cy, w, h relative to the net input -> (K, 4) x0, y0, x1, y1 image pixels, clipped."""
    net_w, net_h = net_wh
    new_w, new_h = letterbox_size(image_wh, net_wh) if letterbox else net_wh
    # Darknet's correct_yolo_boxes: undo the letterbox's offset and scale (identity for a plain resize).
    rx, ry = new_w / net_w, new_h / net_h
    cx = (boxes[:, 0] - (net_w - new_w) / 2.0 / net_w) / rx
    cy = (boxes[:, 1] - (net_h - new_h) / 2.0 / net_h) / ry
    w, h = boxes[:, 2] / rx, boxes[:, 3] / ry
    img_w, img_h = image_wh
    xyxy = np.stack([(cx - w / 2) * img_w, (cy - h / 2) * img_h, (cx + w / 2) * img_w, (cy + h / 2) * img_h], axis=1)
    np.clip(xyxy[:, 0::2], 0.0, img_w, out=xyxy[:, 0::2])
    np.clip(xyxy[:, 1::2], 0.0, img_h, out=xyxy[:, 1::2])
    return xyxy.reshape(-1, 4)


def nms_per_class(boxes_xyxy: np.ndarray, scores: np.ndarray, labels: np.ndarray, iou_threshold: float) -> np.ndarray:
    """Greedy non-maximum suppression within each class (OpenCV's batched NMS).

    Args:
        boxes_xyxy: (N, 4) boxes, any consistent unit.
        scores: (N,) confidences.
        labels: (N,) int class indices; boxes of different classes never suppress each other.
        iou_threshold: a box is dropped when its IoU with a kept, higher-scored box exceeds this.

    Returns:
        (K,) int64 indices of the kept boxes.
    """
    if len(boxes_xyxy) == 0:
        return np.zeros(0, np.int64)
    xywh = np.concatenate([boxes_xyxy[:, :2], boxes_xyxy[:, 2:] - boxes_xyxy[:, :2]], axis=1).astype(np.float64)
    # Score threshold -inf: thresholding already happened, NMS must not drop anything by score.
    keep = cv2.dnn.NMSBoxesBatched(
        xywh, np.asarray(scores, np.float32), np.asarray(labels, np.int32), float("-inf"), float(iou_threshold)
    )
    return np.asarray(keep, dtype=np.int64).reshape(-1)
