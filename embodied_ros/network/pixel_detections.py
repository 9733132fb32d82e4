"""The pixel head's classes as image detections: connected regions of one class, ready for depth lifting.

Small objects are where the box head fails: a cup spans a fraction of a 0.16 m voxel and about
2 cells of the 1/4 feature map, so its box lands tens of centimetres off. At 1/2 of the input
the pixel head still sees it whole, and the frame's depth places it to within the sensor's noise.
Each connected region of a class becomes one 2D box (scored by the region's mean probability);
lifting.lift_detections turns it into a gravity-aligned world box.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cv2
import numpy as np
from scipy.special import softmax

from ..detections import Detections2D
from ..errors import ConfigError
from .lifting import LiftingParams

# Classes whose boxes come from the pixel head instead of the box head (the rest keep the box
# head's). Chosen per class on tuning scenes (seeds 10004..10011), where each of these scored a
# higher accumulated AP@0.25 lifted from pixels than from the box head (models/MODEL_CARD.md);
# monitors joined once specks were dropped (MIN_LARGEST_EXTENT): tuning seeds 10028..10043,
# monitor AP@0.25 0.17 from the box head, 0.46 lifted.
PIXEL_CLASSES: tuple[str, ...] = ("cup", "bottle", "book", "plant", "lamp", "door", "window", "shelf", "monitor")

# Half the 5th percentile of each class's largest extent in training scenes 0..39 (door 1.99 m,
# window 1.06, shelf 1.23, monitor 0.47, lamp 0.38, plant 0.26, book and bottle 0.21, cup 0.10):
# a lifted box smaller than this is a speck of the class's mask, not an object of the class.
MIN_LARGEST_EXTENT: tuple[tuple[str, float], ...] = (
    ("door", 1.0), ("window", 0.53), ("shelf", 0.6), ("monitor", 0.23), ("lamp", 0.19), ("plant", 0.13),
    ("book", 0.1), ("bottle", 0.1), ("cup", 0.05),
)

# Lifting of pixel regions. Chosen on the tuning scenes (seeds 10004..10011; models/MODEL_CARD.md):
# - the region's mean probability is the score as it is (a region is the object's own pixels, so
#   how much of its box holds depth says little);
# - one view sees an object's near side only, so its depth is cut short: horizontal extents grow
#   to about the 10th percentile of the class's smaller horizontal extent in training scenes 0..39
#   (lamps: accumulated AP@0.25 0.14 -> 0.50), a book's extent along the view to that of its
#   larger one (it shows its spine);
# - books lie among clutter (on a table at an angle, beside other books on a shelf): they are
#   lifted from their own region's pixels, not their box's (openings in a wall lose that way);
# - a plant standing behind furniture shows only its leaves: with nothing holding it up in view
#   and its lower part hidden, it reaches down to the floor (plants 0.29 -> 0.40);
# - where the head is unsure its mask breaks into specks, each lifted as a tiny box of the class
#   (eighteen "doors" for one door): boxes below MIN_LARGEST_EXTENT are dropped (tuning seeds
#   10028..10043: grounding 0.577 -> 0.608 with the door merge and monitors below).
PIXEL_LIFTING = LiftingParams(
    support_score_weight=0.0,
    min_horizontal_size=(("cup", 0.072), ("bottle", 0.064), ("plant", 0.155), ("lamp", 0.189)),
    min_extent_along_view=(("book", 0.16),),
    region_classes=("book",),
    floor_classes=("plant",),
    min_largest_extent=MIN_LARGEST_EXTENT,
)


@dataclass(frozen=True)
class PixelDecodeParams:
    """Which classes the pixel head answers for, and how its regions become image detections."""

    classes: tuple[str, ...] = PIXEL_CLASSES
    # A pixel belongs to a region when its class is the argmax and has at least this probability.
    min_probability: float = 0.5
    # Regions with fewer pixels (of the head's S/2 x S/2 map) are dropped.
    min_pixels: int = 2
    # (class, pixels): regions of these classes closer than this many pixels (of the head's map)
    # are one region. The head's mask of a door breaks into specks where it is unsure (door
    # AP@0.25 on tuning seeds 10028..10043: 0.13 apart, 0.36 within 8 pixels).
    merge_px: tuple[tuple[str, int], ...] = (("door", 8),)

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_probability < 1.0:
            raise ConfigError(f"pixel decode: min_probability must be in [0, 1), got {self.min_probability}")
        if self.min_pixels < 1:
            raise ConfigError(f"pixel decode: min_pixels must be >= 1, got {self.min_pixels}")
        if any(int(px) != px or px < 0 for _, px in self.merge_px):
            raise ConfigError(f"pixel decode: merge_px must be whole pixels >= 0, got {self.merge_px}")


def pixel_class_indices(classes: tuple[str, ...], class_names: tuple[str, ...]) -> list[int]:
    """The channel index of each pixel class.

    Raises:
        ConfigError: a class is not one of the network's ``class_names``.
    """
    unknown = [c for c in classes if c not in class_names]
    if unknown:
        raise ConfigError(f"pixel classes {unknown} are not among the network's classes {list(class_names)}")
    return [class_names.index(c) for c in classes]


class PixelDecoding(NamedTuple):
    """What the pixel head says about one view, at the head's resolution (h, w) and in frame pixels."""

    labels: np.ndarray  # (h, w) int16: class index where a chosen class won, else -1
    regions: np.ndarray  # (h, w) int32: index of the detection each pixel belongs to, else -1
    detections: Detections2D  # one per region: its bounding box in frame pixels, mean probability


def pixel_decode(logits: np.ndarray, class_names: tuple[str, ...], frame_size: tuple[int, int],
                 params: PixelDecodeParams = PixelDecodeParams()) -> PixelDecoding:
    """The chosen classes' pixels, and their connected regions as 2D boxes in the frame's pixels.

    Args:
        logits: (C + 1, h, w) pixel head logits of one view (last channel = other).
        class_names: the C object classes, in channel order.
        frame_size: (width, height) of the frame the head's input was resized from.
        params: classes and thresholds.

    Returns:
        The labels (a pixel has a chosen class when it is the argmax with at least
        ``min_probability``: FramePerception.pixel_labels), the region image (for
        lifting.lift_detections) and the regions' boxes.

    Raises:
        ConfigError: a class in ``params.classes`` is not one of ``class_names``.
    """
    indices = pixel_class_indices(params.classes, class_names)
    probs = softmax(np.asarray(logits, dtype=np.float32), axis=0)
    best = probs.argmax(axis=0)
    h, w = best.shape
    sx, sy = frame_size[0] / w, frame_size[1] / h
    chosen = np.full((h, w), -1, dtype=np.int16)
    owner = np.full((h, w), -1, dtype=np.int32)
    boxes, labels, scores = [], [], []
    merge = dict(params.merge_px)
    for c in indices:
        mask = (best == c) & (probs[c] >= params.min_probability)
        chosen[mask] = c
        gap = int(merge.get(class_names[c], 0))
        joined = mask.astype(np.uint8)
        if gap > 0:
            joined = cv2.dilate(joined, np.ones((gap + 1, gap + 1), np.uint8))
        n, regions = cv2.connectedComponents(joined, connectivity=8)
        for k in range(1, n):
            region = (regions == k) & mask
            area = int(region.sum())
            if area < params.min_pixels:
                continue
            ys, xs = np.nonzero(region)
            x, y, bw, bh = int(xs.min()), int(ys.min()), int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)
            owner[region] = len(boxes)
            boxes.append([x * sx, y * sy, (x + bw) * sx, (y + bh) * sy])
            labels.append(c)
            scores.append(float(probs[c][region].mean()))
    dets = Detections2D(np.array(boxes, dtype=np.float64).reshape(-1, 4), np.array(labels, dtype=np.int64),
                        np.array(scores, dtype=np.float64), class_names)
    return PixelDecoding(chosen, owner, dets)
