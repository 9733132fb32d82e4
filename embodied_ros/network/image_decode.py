"""The 2D decode path every detector shares: image <-> network-input geometry, score selection, NMS.

A detector fits the colour image into its input one of three ways (``ResizeGeometry``: Darknet's
stretch, a centred letterbox, or YOLOX's top-left paste), decodes its own head into boxes in
network-input pixels, then hands them to ``finish_detections``, which maps them back to the image
(clipping x to the image's width and y to its height), runs per-class NMS and returns Detections2D.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from ..detections import Detections2D

DEFAULT_IOU_THRESHOLD = 0.45  # Darknet's NMS default in `test_detector`; YOLOX's demo uses the same


@dataclass(frozen=True)
class ResizeGeometry:
    """Where the image lies in the network input: input pixel = image pixel * scale + offset.

    Attributes:
        image_wh: original image (width, height) in pixels.
        net_wh: network input (width, height) in pixels.
        scale: (sx, sy) input pixels per image pixel.
        offset: (ox, oy) input pixel of the image's top-left corner (padding on the left/top).
        content_wh: size (w, h) in input pixels the image is resized to.
    """

    image_wh: tuple[int, int]
    net_wh: tuple[int, int]
    scale: tuple[float, float]
    offset: tuple[int, int]
    content_wh: tuple[int, int]

    def to_image(self, boxes_net: np.ndarray) -> np.ndarray:
        """(K, 4) xyxy in network-input pixels -> (K, 4) float64 xyxy in image pixels, clipped to the image.

        x is clipped to [0, width], y to [0, height].
        """
        boxes = np.asarray(boxes_net, dtype=np.float64).reshape(-1, 4)
        (sx, sy), (ox, oy) = self.scale, self.offset
        out = np.empty_like(boxes)
        out[:, 0::2] = (boxes[:, 0::2] - ox) / sx
        out[:, 1::2] = (boxes[:, 1::2] - oy) / sy
        img_w, img_h = self.image_wh
        np.clip(out[:, 0::2], 0.0, img_w, out=out[:, 0::2])
        np.clip(out[:, 1::2], 0.0, img_h, out=out[:, 1::2])
        return out


def stretch(image_wh: tuple[int, int], net_wh: tuple[int, int]) -> ResizeGeometry:
    """The image resized to fill the input, aspect ratio not kept (Darknet's default)."""
    return ResizeGeometry(image_wh, net_wh, (net_wh[0] / image_wh[0], net_wh[1] / image_wh[1]), (0, 0), net_wh)


def letterbox_size(image_wh: tuple[int, int], net_wh: tuple[int, int]) -> tuple[int, int]:
    """Size (w, h) of the image inside a letterboxed input, with Darknet's (and NanoDet's) integer maths."""
    (w, h), (net_w, net_h) = image_wh, net_wh
    if net_w / w < net_h / h:
        return net_w, (h * net_w) // w
    return (w * net_h) // h, net_h


def letterbox(image_wh: tuple[int, int], net_wh: tuple[int, int]) -> ResizeGeometry:
    """Aspect ratio kept, the image centred, padding split evenly (the lower/right side gets the odd pixel)."""
    new_w, new_h = letterbox_size(image_wh, net_wh)
    offset = ((net_wh[0] - new_w) // 2, (net_wh[1] - new_h) // 2)
    return ResizeGeometry(image_wh, net_wh, (new_w / image_wh[0], new_h / image_wh[1]), offset, (new_w, new_h))


def top_left(image_wh: tuple[int, int], net_wh: tuple[int, int]) -> ResizeGeometry:
    """Aspect ratio kept with one scale r = min(net_w / w, net_h / h), the image at the top-left (YOLOX)."""
    r = min(net_wh[0] / image_wh[0], net_wh[1] / image_wh[1])
    return ResizeGeometry(image_wh, net_wh, (r, r), (0, 0), (int(image_wh[0] * r), int(image_wh[1] * r)))


def paste_resized(image: np.ndarray, geometry: ResizeGeometry, fill: float) -> np.ndarray:
    """(H, W, C) image -> (net_h, net_w, C) float32: bilinearly resized into ``geometry``'s place, ``fill`` around."""
    net_w, net_h = geometry.net_wh
    new_w, new_h = geometry.content_wh
    x0, y0 = geometry.offset
    canvas = np.full((net_h, net_w, image.shape[2]), fill, np.float32)
    canvas[y0 : y0 + new_h, x0 : x0 + new_w] = cv2.resize(image, (new_w, new_h), interpolation=cv2.INTER_LINEAR)
    return canvas


def best_class(class_scores: np.ndarray, threshold: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One label per candidate: its best class, kept when that score exceeds ``threshold``.

    Args:
        class_scores: (K, C) scores in [0, 1].
        threshold: minimum score.

    Returns:
        rows (M,) int64 into the K candidates, labels (M,) int64, scores (M,) float32.
    """
    labels = np.argmax(class_scores, axis=1)
    scores = class_scores[np.arange(len(class_scores)), labels]
    rows = np.flatnonzero(scores > threshold)
    return rows, labels[rows].astype(np.int64), scores[rows].astype(np.float32)


def finish_detections(
    boxes_net: np.ndarray,
    scores: np.ndarray,
    labels: np.ndarray,
    geometry: ResizeGeometry,
    class_names: Sequence[str],
    iou_threshold: float = DEFAULT_IOU_THRESHOLD,
) -> Detections2D:
    """Candidates in network-input pixels -> NMS-filtered Detections2D in image pixels, best first.

    Args:
        boxes_net: (K, 4) xyxy in network-input pixels.
        scores: (K,) confidences.
        labels: (K,) int class indices into ``class_names``.
        geometry: how the image was placed in the input.
        class_names: the model's label vocabulary.
        iou_threshold: a box is suppressed by a better one of its class above this IoU.
    """
    boxes = geometry.to_image(boxes_net)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    labels = np.asarray(labels, dtype=np.int64).reshape(-1)
    keep = nms_per_class(boxes, scores, labels, iou_threshold)
    keep = keep[np.argsort(-scores[keep], kind="stable")]
    return Detections2D(boxes[keep], labels[keep], scores[keep], tuple(class_names))


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
