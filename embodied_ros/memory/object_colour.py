"""Object colour: a robust CIELAB estimate of an object's pixels, accumulated across views, named in words.

Per detection, the object's colour-image pixels (``Detections3D.pixels``; without them, the pixels
of its image region whose depth falls inside its 3D box) become a mask that is eroded by a few
pixels: colour and depth are registered only approximately (Kinect v1 colour is resampled onto
depth; edges still disagree by pixels), so the border belongs half to the background. The
remaining pixels go to CIELAB (perceptual: equal distances look about equally different) and into
a coarse histogram (10 L* x 10 a* x 10 b* units per bin), normalised to the view's weight.

An object's :class:`ColourAccumulator` adds the histograms of all its views (and of objects merged
into it). Its colour is the mode: the bin whose 27-bin neighbourhood holds the most weight, and
the mean Lab of the pixels in that neighbourhood. A mode, not a mean: a white mug with red
flowers is white, a red cabinet with black handles and highlights is red, and a few views of the
wrong surface (the table behind a cup) do not move it.

:func:`colour_name` turns Lab into one of :data:`COLOUR_WORDS` (the basic colour terms, Berlin &
Kay): low chroma is white/grey/black by lightness, the rest by hue angle, with brown for dull
orange and yellow hues (wood) and pink for light, dull reds and light purples.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..geometry.columns import column_max, column_min

__all__ = [
    "COLOUR_WORDS", "ColourAccumulator", "ColourSample", "colour_name", "colour_similarity", "colour_word",
    "detection_samples", "object_pixels", "sample_colour", "to_lab",
]

COLOUR_WORDS = ("white", "grey", "black", "red", "orange", "yellow", "green", "blue", "purple", "pink", "brown")
# Other words people use for these colours.
_COLOUR_SYNONYMS = {
    "gray": "grey", "silver": "grey", "golden": "yellow", "gold": "yellow", "beige": "brown", "tan": "brown",
    "violet": "purple", "magenta": "pink", "cyan": "blue", "turquoise": "blue", "navy": "blue", "maroon": "red",
    "cream": "white", "khaki": "brown", "lilac": "purple",
}
# Colours that are easily called one another (lighting, a camera's white balance): half a match.
_NEIGHBOURS = {frozenset(p) for p in (("white", "grey"), ("grey", "black"), ("red", "pink"), ("red", "orange"),
                                      ("orange", "brown"), ("orange", "yellow"), ("red", "brown"), ("blue", "purple"),
                                      ("purple", "pink"), ("yellow", "brown"), ("green", "blue"), ("brown", "black"))}

# Naming thresholds (CIELAB units; hue angles in degrees, h = atan2(b*, a*)).
ACHROMATIC_CHROMA = 13.0  # below: white / grey / black ...
ACHROMATIC_CHROMA_LIGHT = 14.0  # ... and below this for light colours (L* >= 70: white under warm light)
WHITE_L, BLACK_L = 66.0, 30.0  # achromatic lightness bounds
# Hue sectors: red [345, 45), orange/yellow [45, 105) (split at 75), green [105, 200), blue [200, 310)
# (sRGB blue is at 306), purple [310, 345). Measured on redkitchen: the red cabinets h 27-30, the wooden
# table and chairs 67-78, the purple magazines 315-330.
HUE_RED_END = 45.0
HUE_ORANGE_END = 75.0
HUE_YELLOW_END = 105.0
HUE_GREEN_END = 200.0
HUE_BLUE_END = 310.0
HUE_PURPLE_END = 345.0
BROWN_MAX_CHROMA = 45.0  # orange and yellow hues duller than this are brown (wood: chroma 20-30)
PINK_MIN_L = 62.0  # reds lighter than this and duller than PINK_MAX_CHROMA are pink, purples lighter than 70
PINK_MAX_CHROMA = 40.0

BIN = 10.0  # histogram bin edge, Lab units
MAX_BINS = 64  # bins an accumulator keeps (the heaviest); enough for a few colours per object
MIN_PIXELS = 20  # fewer pixels than this give no sample
MAX_PIXELS = 800  # pixels converted per sample (evenly subsampled beyond)
REGION_PIXELS = 4000  # object_pixels searches a region on a grid of about this many pixels (as lifting does)
ERODE_PX_AT_640 = 4  # border dropped, pixels at 640 px image width (scaled with the width)
# An object whose histogram holds this much weight (about six clear views) is sampled only on every
# RESAMPLE_EVERY-th sighting: its colour is known, and sampling is most of the memory update's cost.
SETTLED_WEIGHT = 5.0
RESAMPLE_EVERY = 5


@dataclass(frozen=True)
class ColourSample:
    """One view's colour of one object.

    Attributes:
        bins: (B, 3) int64 histogram bin indices (floor(Lab / BIN)).
        weights: (B,) fraction of the sample's pixels in each bin (sums to 1).
        means: (B, 3) mean Lab of the pixels in each bin.
        n_pixels: pixels the sample was made of (after erosion).
    """

    bins: np.ndarray
    weights: np.ndarray
    means: np.ndarray
    n_pixels: int

    @property
    def lab(self) -> tuple[float, float, float]:
        """The sample's own dominant colour (its mode)."""
        return _mode(self.bins, self.weights, self.means)


# sRGB (D65) -> CIE XYZ, rows scaled by the D65 white point: XYZ / white of a linear RGB row (IEC 61966-2-1).
_RGB_TO_XYZ_WHITE = np.array([[0.4124564, 0.3575761, 0.1804375], [0.2126729, 0.7151522, 0.0721750],
                              [0.0193339, 0.1191920, 0.9503041]]) / np.array([[0.95047], [1.0], [1.08883]])
_LINEAR = np.where(np.arange(256) / 255.0 <= 0.04045, np.arange(256) / 255.0 / 12.92,
                   ((np.arange(256) / 255.0 + 0.055) / 1.055) ** 2.4)  # sRGB decoding of each 8-bit value


def to_lab(rgb: np.ndarray) -> np.ndarray:
    """(N, 3) uint8 RGB -> (N, 3) float64 CIELAB (D65; L* 0..100, a*, b* about -128..127).

    The standard formulas in numpy (OpenCV's float conversion agrees within 0.5 units): OpenCV's call costs
    milliseconds for a few hundred pixels on a busy machine, waiting for its thread pool.
    """
    t = _LINEAR[np.asarray(rgb, dtype=np.uint8).reshape(-1, 3)] @ _RGB_TO_XYZ_WHITE.T  # (N, 3) X/Xn, Y/Yn, Z/Zn
    eps = (6.0 / 29.0) ** 3
    f = np.where(t > eps, np.cbrt(t), t / (3.0 * (6.0 / 29.0) ** 2) + 4.0 / 29.0)
    return np.stack([116.0 * f[:, 1] - 16.0, 500.0 * (f[:, 0] - f[:, 1]), 200.0 * (f[:, 1] - f[:, 2])], axis=1)


def _mode(bins: np.ndarray, weights: np.ndarray, means: np.ndarray) -> tuple[float, float, float]:
    """Mean Lab of the densest 3x3x3-bin neighbourhood of a histogram."""
    near = np.all(np.abs(bins[:, None, :] - bins[None, :, :]) <= 1, axis=2)  # (B, B)
    density = near @ weights
    best = near[int(np.argmax(density))]
    w = weights[best]
    lab = (means[best] * w[:, None]).sum(axis=0) / max(float(w.sum()), 1e-12)
    return float(lab[0]), float(lab[1]), float(lab[2])


def _histogram(lab: np.ndarray, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, 3) Lab -> (bins, weights normalised to 1, mean Lab per bin)."""
    w = np.ones(len(lab)) if weights is None else np.asarray(weights, dtype=np.float64)
    keys = np.floor(lab / BIN).astype(np.int64) + 128  # L* bins 0..10, a*/b* bins -13..12: all in 0..255
    codes, inverse = np.unique((keys[:, 0] << 16) | (keys[:, 1] << 8) | keys[:, 2], return_inverse=True)
    bins = np.stack([codes >> 16, (codes >> 8) & 255, codes & 255], axis=1) - 128
    inverse = inverse.reshape(-1)
    total = np.bincount(inverse, weights=w, minlength=len(bins))
    sums = np.stack([np.bincount(inverse, weights=w * lab[:, c], minlength=len(bins)) for c in range(3)], axis=1)
    return bins, total / max(float(total.sum()), 1e-12), sums / np.maximum(total, 1e-12)[:, None]


def object_pixels(depth: np.ndarray, K: np.ndarray, T_world_camera: np.ndarray, box: np.ndarray,
                  region: np.ndarray | None = None, max_pixels: int = REGION_PIXELS) -> np.ndarray:
    """(M, 2) int32 (u, v) pixels whose depth point lies inside a world box: an object's pixels when
    the perceptor gives none.

    Args:
        depth: (H, W) float32 metres, registered to colour; K: (3, 3) intrinsics; T_world_camera: (4, 4).
        box: (9,) world 9-DoF box.
        region: (4,) xyxy pixels to search (the detection's 2D box); None or NaN: the box's projection.
        max_pixels: the region is searched on a grid of about this many pixels.
    """
    from ..geometry.boxes import box_corners, box_rotations

    h, w = depth.shape
    T_cw = np.linalg.inv(T_world_camera)
    if region is None or not np.all(np.isfinite(region)):
        corners = box_corners(box)[0] @ T_cw[:3, :3].T + T_cw[:3, 3]  # (8, 3) camera frame
        if np.all(corners[:, 2] <= 0.05):
            return np.zeros((0, 2), np.int32)
        corners = corners[corners[:, 2] > 0.05]
        uv = corners[:, :2] / corners[:, 2:3] * [K[0, 0], K[1, 1]] + [K[0, 2], K[1, 2]]
        region = np.array([*uv.min(axis=0), *uv.max(axis=0)])
    x0, y0 = (int(np.clip(math.floor(v), 0, n)) for v, n in zip(region[:2], (w, h), strict=True))
    x1, y1 = (int(np.clip(math.ceil(v), 0, n)) for v, n in zip(region[2:], (w, h), strict=True))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return np.zeros((0, 2), np.int32)
    step = max(1, int(math.sqrt((x1 - x0) * (y1 - y0) / max_pixels)))
    v, u = np.mgrid[y0:y1:step, x0:x1:step]
    z = depth[v, u].astype(np.float64)
    ok = np.isfinite(z) & (z > 0)
    u, v, z = u[ok], v[ok], z[ok]
    cam = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=1)
    world = cam @ T_world_camera[:3, :3].T + T_world_camera[:3, 3]
    local = (world - box[:3]) @ box_rotations(box)[0]  # rows @ R = R^T p: the box's own frame
    # Above the box's lowest 2 cm (a tenth of its height if more; a quarter of a flat one's): the
    # surface an object stands on shows through the bottom of its box. (Not shrunk across: what is
    # seen of an object lies on its box's faces.)
    half = 0.5 * np.abs(box[3:6])
    inside = np.all(np.abs(local[:, :2]) <= half[:2], axis=1) & (local[:, 2] <= half[2])
    inside &= local[:, 2] >= -half[2] + min(max(0.02, 0.2 * half[2]), 0.5 * half[2])
    return np.stack([u[inside], v[inside]], axis=1).astype(np.int32)


def sample_colour(color: np.ndarray, pixels: np.ndarray, erode_px: int | None = None) -> ColourSample | None:
    """The colour of an object's pixels in one view, its border eroded.

    Args:
        color: (H, W, 3) uint8 RGB image.
        pixels: (M, 2) int (u, v) pixels of the object (possibly subsampled on a grid).
        erode_px: border to drop, pixels; None: ``ERODE_PX_AT_640`` scaled with the image width.

    Returns:
        The sample, or None when fewer than ``MIN_PIXELS`` pixels remain.
    """
    import cv2

    h, w = color.shape[:2]
    px = np.asarray(pixels, dtype=np.int64).reshape(-1, 2)
    px = px[(px[:, 0] >= 0) & (px[:, 0] < w) & (px[:, 1] >= 0) & (px[:, 1] < h)]
    if len(px) < MIN_PIXELS:
        return None
    erode = max(1, round(ERODE_PX_AT_640 * w / 640)) if erode_px is None else int(erode_px)
    # Pixels on a grid of step s (lifting subsamples) are rasterised one cell per pixel: the mask is s^2
    # smaller, and closing it fills single missing cells (pixels without depth).
    lo = column_min(px)
    step = max(1, int(np.gcd.reduce((px - lo).ravel())))
    cells = (px - lo) // step
    radius = max(1, round(erode / step)) if erode > 0 else 0
    pad = radius + 2
    size = column_max(cells) + 1
    mask = np.zeros((size[1] + 2 * pad, size[0] + 2 * pad), np.uint8)
    mask[cells[:, 1] + pad, cells[:, 0] + pad] = 1
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    inner = cv2.erode(mask, np.ones((2 * radius + 1, 2 * radius + 1), np.uint8)) if radius else mask
    vv, uu = np.nonzero(inner)
    if len(vv) < MIN_PIXELS:
        return None
    if len(vv) > MAX_PIXELS:
        keep = np.linspace(0, len(vv) - 1, MAX_PIXELS).astype(np.int64)
        vv, uu = vv[keep], uu[keep]
    u = np.clip((uu - pad) * step + lo[0], 0, w - 1)
    v = np.clip((vv - pad) * step + lo[1], 0, h - 1)
    bins, weights, means = _histogram(to_lab(color[v, u]))
    return ColourSample(bins, weights, means, int(len(vv)) * step * step)


class ColourAccumulator:
    """An object's colour histogram over all its views (mutable; owned by one memory track).

    A sample enters with a weight (the detection's score, less for a glimpse of few pixels), so
    the estimate leans on clear, confident views.
    """

    def __init__(self) -> None:
        self._bins: dict[tuple[int, int, int], np.ndarray] = {}  # bin -> [weight, L*w, a*w, b*w]

    def __bool__(self) -> bool:
        return bool(self._bins)

    @property
    def weight(self) -> float:
        """The total weight of the views added so far."""
        return float(sum(v[0] for v in self._bins.values()))

    def wants_sample(self, n_observations: int) -> bool:
        """Whether the view of an object's ``n_observations``-th sighting is worth sampling (see SETTLED_WEIGHT)."""
        return n_observations % RESAMPLE_EVERY == 0 or self.weight < SETTLED_WEIGHT

    def add(self, sample: ColourSample | None, weight: float) -> None:
        """Add one view's sample (None: nothing seen) with ``weight`` (e.g. the detection's score)."""
        if sample is None or not weight > 0.0:
            return
        w = weight * min(1.0, sample.n_pixels / 200.0) * sample.weights
        rows = np.column_stack([w, w[:, None] * sample.means])  # per bin [w, L*w, a*w, b*w]
        for key, row in zip(map(tuple, sample.bins.tolist()), rows, strict=True):
            known = self._bins.get(key)
            self._bins[key] = row if known is None else known + row
        self._prune()

    def merge(self, other: ColourAccumulator) -> None:
        """Add another accumulator's views (an object merged into this one)."""
        for key, value in other._bins.items():
            self._add(key, value)
        self._prune()

    def _add(self, key: tuple[int, int, int], value: np.ndarray) -> None:
        if key in self._bins:
            self._bins[key] = self._bins[key] + value
        else:
            self._bins[key] = np.array(value, dtype=np.float64)

    def _prune(self) -> None:
        if len(self._bins) > MAX_BINS:
            heaviest = sorted(self._bins.items(), key=lambda kv: -kv[1][0])[:MAX_BINS]
            self._bins = dict(heaviest)

    def lab(self) -> tuple[float, float, float] | None:
        """The dominant CIELAB colour, or None before any sample."""
        if not self._bins:
            return None
        keys = np.array(list(self._bins), dtype=np.int64)
        values = np.array(list(self._bins.values()))
        weights = values[:, 0]
        return _mode(keys, weights / weights.sum(), values[:, 1:] / np.maximum(weights, 1e-12)[:, None])

    def to_json(self) -> list[list[float]]:
        """[[iL, ia, ib, w, L*w, a*w, b*w], ...]: per bin its index, weight and weighted Lab sums (exact:
        a loaded memory gives the same colours to the last bit)."""
        return [[*key, *(float(x) for x in v)] for key, v in self._bins.items()]

    @classmethod
    def from_json(cls, rows: Iterable[Iterable[float]] | None) -> ColourAccumulator:
        """Rebuild from ``to_json()`` (None or [] gives an empty accumulator)."""
        acc = cls()
        for row in rows or ():
            il, ia, ib, *sums = (float(x) for x in row)
            acc._add((int(il), int(ia), int(ib)), np.array(sums))
        return acc


def colour_name(lab: tuple[float, float, float] | np.ndarray | None) -> str | None:
    """The colour word of a CIELAB colour (one of ``COLOUR_WORDS``), or None for None."""
    if lab is None:
        return None
    L, a, b = (float(x) for x in lab)
    chroma = math.hypot(a, b)
    if chroma < (ACHROMATIC_CHROMA_LIGHT if L >= 70.0 else ACHROMATIC_CHROMA):
        return "white" if L >= WHITE_L else "black" if L < BLACK_L else "grey"
    hue = math.degrees(math.atan2(b, a)) % 360.0
    if hue >= HUE_PURPLE_END or hue < HUE_RED_END:
        return "pink" if L >= PINK_MIN_L and chroma < PINK_MAX_CHROMA else "red"
    if hue < HUE_YELLOW_END:
        if chroma < BROWN_MAX_CHROMA:
            return "brown"
        return "orange" if hue < HUE_ORANGE_END else "yellow"
    if hue < HUE_GREEN_END:
        return "green"
    if hue < HUE_BLUE_END:
        return "blue"
    return "pink" if L >= 70.0 else "purple"

def colour_word(word: str) -> str | None:
    """The colour a word names ("gray" -> "grey", "golden" -> "yellow"), or None when it names none."""
    word = word.lower()
    if word in COLOUR_WORDS:
        return word
    return _COLOUR_SYNONYMS.get(word)


def colour_similarity(asked: str, seen: str | None) -> float:
    """How well an object's colour name fits an asked colour word: 1 same, 0.35 neighbours (white and
    grey, red and pink, ...), 0.08 otherwise, 0.5 when the object's colour was never seen."""
    if seen is None:
        return 0.5
    asked = colour_word(asked) or asked
    if asked == seen:
        return 1.0
    return 0.35 if frozenset((asked, seen)) in _NEIGHBOURS else 0.08



def detection_samples(perception: Any, indices: np.ndarray) -> list[ColourSample | None]:
    """Colour samples of some detections of a ``FramePerception`` (None where there is none).

    Pixels come from ``Detections3D.pixels`` when the perceptor gives them, else from the
    detection's 2D box (``boxes_2d``) or its 3D box's projection, kept where depth lies inside
    the 3D box. Nothing without the frame.
    """
    frame = perception.frame
    if frame is None:
        return [None] * len(indices)
    det = perception.detections
    out: list[ColourSample | None] = []
    for i in (int(i) for i in indices):
        if det.pixels is not None and len(det.pixels[i]):
            pixels = det.pixels[i]
        else:
            region = det.boxes_2d[i] if det.boxes_2d is not None else None
            pixels = object_pixels(frame.depth, frame.K, frame.T_world_camera, det.boxes[i], region)
        out.append(sample_colour(frame.color, pixels))
    return out
