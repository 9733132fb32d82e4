"""Decode of Darknet YOLO heads (v3/v4 style) into boxes; geometry and NMS are image_decode's, shared.

The exported graph ends at the raw head convolutions; this one decode serves every backend
(PyTorch, ONNX Runtime, TensorRT), so their detections can only differ by the heads' numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from ..detections import Detections2D
from .image_decode import DEFAULT_IOU_THRESHOLD, finish_detections, letterbox_size, nms_per_class, stretch
from .image_decode import letterbox as letterbox_geometry

__all__ = ["DEFAULT_IOU_THRESHOLD", "DEFAULT_SCORE_THRESHOLD", "YoloHeadSpec", "decode_yolo", "decode_yolo_heads",
           "letterbox_size", "nms_per_class"]

DEFAULT_SCORE_THRESHOLD = 0.25  # Darknet's `-thresh` default


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
    geometry = letterbox_geometry(image_wh, net_wh) if letterbox else stretch(image_wh, net_wh)
    boxes, scores, labels = decode_yolo_heads(heads, specs, net_wh, score_threshold)
    return finish_detections(boxes, scores, labels, geometry, class_names, iou_threshold)


def decode_yolo_heads(
    heads: Sequence[np.ndarray], specs: Sequence[YoloHeadSpec], net_wh: tuple[int, int], score_threshold: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Raw heads -> candidates before NMS: (K, 4) xyxy in network-input pixels, (K,) scores, (K,) labels."""
    if len(heads) != len(specs):
        raise ValueError(f"{len(heads)} head tensors for {len(specs)} YOLO layers")
    parts = [_decode_head(np.asarray(h, dtype=np.float32), spec, net_wh, score_threshold)
             for h, spec in zip(heads, specs, strict=True)]
    cxcywh = np.concatenate([b for b, _, _ in parts])  # relative to the input
    net = np.array([net_wh[0], net_wh[1]], np.float64)
    xyxy = np.concatenate([(cxcywh[:, :2] - cxcywh[:, 2:] / 2) * net, (cxcywh[:, :2] + cxcywh[:, 2:] / 2) * net], 1)
    return xyxy, np.concatenate([s for _, s, _ in parts]), np.concatenate([lab for _, _, lab in parts])


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
