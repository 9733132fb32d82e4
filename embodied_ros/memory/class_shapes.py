"""What size a real object of a class can have: the shape priors of the object map.

Sizes of everyday objects, not fitted to any recording: a cup is not 40 cm wide, a chair is at
least 40 cm across, a table stands on the floor. The memory uses them three ways:
completing the seen part of furniture (memory/amodal.py), refusing to grow an object past its
class's size by taking in a neighbour's detection, and publishing only objects whose size their
class can have (a wooden tray called "cup" is not a cup).

Keys are class names as ``detections.class_key`` writes them: COCO's (Darknet's names file:
"diningtable", "tvmonitor", "sofa", "pottedplant") and the synthetic world's ("table", "monitor").
Classes without an entry get no prior.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..detections import class_key
from ..geometry.boxes import box_corners


@dataclass(frozen=True)
class ShapePrior:
    """What a class's whole object looks like.

    Attributes:
        max_long: largest horizontal extent a real one has, metres.
        max_height: largest height, metres.
        on_floor: stands on the floor (its box is extended down to it).
        min_short, min_long: least horizontal extents of the whole object, metres (0: none); amodal
            completion grows a seen part to them.
        min_largest: least largest extent a real one has, metres (0: none): a smaller box is a thing
            mistaken for the class (a wooden model called "microwave"), not a small one of it.
        min_height: least height of an upright one, metres (0: none): a screen is not a 5 cm strip
            (its panel returns no depth, so a strip below it is all that was lifted).
        max_aspect: largest ratio of its long horizontal extent to its height (0: none): no screen
            is four times as wide as it is tall, two monitors side by side are.
        max_short: largest short horizontal extent, metres (0: none): a remote or a phone is narrow
            in the hand, a food box called "remote" is not.
        recessed: a basin set into the surface around it (a sink): the middle of what is seen of
            it lies below that surface, where a thing standing on the surface rises from it.
    """

    max_long: float
    max_height: float
    on_floor: bool = False
    min_short: float = 0.0
    min_long: float = 0.0
    min_largest: float = 0.0
    min_height: float = 0.0
    max_aspect: float = 0.0
    max_short: float = 0.0
    recessed: bool = False


_FURNITURE = {
    "chair": ShapePrior(1.0, 1.4, True, 0.40, 0.40),
    "sofa": ShapePrior(3.2, 1.3, True, 0.60, 1.20),
    "couch": ShapePrior(3.2, 1.3, True, 0.60, 1.20),
    "bed": ShapePrior(2.6, 1.5, True, 0.90, 1.80),
    "diningtable": ShapePrior(3.5, 1.2, True, 0.60, 0.60),
    "table": ShapePrior(3.5, 1.2, True, 0.60, 0.60),
    "desk": ShapePrior(2.5, 1.2, True, 0.50, 0.80),
    "toilet": ShapePrior(0.9, 1.0, True, 0.35, 0.50),
    "refrigerator": ShapePrior(1.2, 2.3, True, 0.50, 0.50),
    "bench": ShapePrior(2.5, 1.2, True, 0.30, 0.80),
}
_THINGS = {  # (max_long, max_height[, min_largest]) of objects that stand on other things or are carried
    "person": (1.2, 2.1), "backpack": (0.5, 0.7), "umbrella": (1.3, 1.3), "handbag": (0.6, 0.5),
    "suitcase": (1.0, 1.0), "bottle": (0.18, 0.5), "wineglass": (0.15, 0.3), "cup": (0.22, 0.25),
    "fork": (0.3, 0.06), "knife": (0.4, 0.06), "spoon": (0.3, 0.06), "bowl": (0.45, 0.25),
    "banana": (0.3, 0.1), "apple": (0.12, 0.12), "orange": (0.12, 0.12), "sandwich": (0.3, 0.15),
    "broccoli": (0.3, 0.3), "carrot": (0.3, 0.1), "hotdog": (0.3, 0.1), "pizza": (0.5, 0.1),
    "donut": (0.15, 0.08), "cake": (0.5, 0.3), "pottedplant": (1.2, 2.0), "plant": (1.2, 2.0),
    "laptop": (0.6, 0.45, 0.2),
    "mouse": (0.2, 0.08), "keyboard": (0.7, 0.1, 0.25),
    "microwave": (0.8, 0.55, 0.4), "oven": (1.2, 1.2, 0.45), "toaster": (0.5, 0.35),
    "book": (0.45, 0.45), "clock": (0.6, 0.6), "vase": (0.5, 0.8), "scissors": (0.3, 0.1),
    "teddybear": (1.0, 1.0), "hairdrier": (0.4, 0.35), "toothbrush": (0.25, 0.25),
    "sportsball": (0.4, 0.4), "skateboard": (1.0, 0.3), "tennisracket": (0.8, 0.4),
    "lamp": (0.8, 2.0), "box": (1.0, 1.0), "bin": (0.8, 1.0),
}
_TV = ShapePrior(2.0, 1.3, min_largest=0.3, min_height=0.15, max_aspect=2.5)  # up to ultra-wide 21:9 (2.4)
_SCREENS = {"tvmonitor": _TV, "tv": _TV,
            "monitor": ShapePrior(1.2, 0.9, min_largest=0.25, min_height=0.15, max_aspect=2.5)}
_BASINS = {"sink": ShapePrior(1.2, 0.6, min_largest=0.35, recessed=True)}
_RECESS = 0.03  # metres the middle of a basin's seen points lies at least below the surface around it
_HANDHELD = {  # held in one hand: a TV remote is ~5 cm wide, a game controller ~11 cm, a phone ~8 cm
    "remote": ShapePrior(0.35, 0.1, max_short=0.12), "cellphone": ShapePrior(0.25, 0.2, max_short=0.1)}
_UNKNOWN = {"object": ShapePrior(0.6, 0.6)}  # what memory/discovery.py finds: a compact thing (its max_size)
SHAPE_PRIORS: dict[str, ShapePrior] = {
    **_FURNITURE, **_SCREENS, **_HANDHELD, **_BASINS, **_UNKNOWN,
    **{k: ShapePrior(v[0], v[1], min_largest=v[2] if len(v) > 2 else 0.0) for k, v in _THINGS.items()}}
_SLACK = 1.25  # sizes measured from noisy depth: a little over the prior is still the class
_LARGE = 1.5  # metres: furniture that can be longer than this may be seen in parts


def shape_prior(class_name: str) -> ShapePrior | None:
    """The class's prior, or None when the class has none."""
    return SHAPE_PRIORS.get(class_key(class_name))


def plausible_size(box: np.ndarray, class_name: str) -> bool:
    """Whether an upright (9,) box has a size its class can have (True without a prior)."""
    prior = shape_prior(class_name)
    if prior is None:
        return True
    long, short, height = max(box[3], box[4]), min(box[3], box[4]), box[5]
    return (long <= _SLACK * prior.max_long and height <= _SLACK * prior.max_height
            and (prior.max_short <= 0 or short <= _SLACK * prior.max_short)
            and max(long, height) >= prior.min_largest / _SLACK and height >= prior.min_height / _SLACK
            and (prior.max_aspect <= 0 or long <= _SLACK * prior.max_aspect * height))


def plausible_support(class_name: str, recesses: list[float]) -> bool:
    """Whether an object sits as its class must (True for classes without such a rule): a basin's
    seen points lie, in the median over its detections, at least ``_RECESS`` below the surface
    around it; with no detection measured, nothing shows that it does."""
    prior = shape_prior(class_name)
    if prior is None or not prior.recessed:
        return True
    return bool(recesses) and float(np.median(recesses)) >= _RECESS


def parts_may_touch(class_name: str) -> bool:
    """Whether objects of the class can be seen in parts that only touch: furniture standing on the
    floor that can be longer than a close view holds (a table, a sofa, a bed), not a thing on it."""
    prior = shape_prior(class_name)
    return prior is None or (prior.on_floor and prior.max_long >= _LARGE)


def union_plausible(box: np.ndarray, other: np.ndarray, class_name: str) -> bool:
    """Whether one object of ``class_name`` could span both (9,) boxes: their union's extents
    along ``box``'s horizontal axes and in height stay within the class's size."""
    prior = shape_prior(class_name)
    if prior is None:
        return True
    if not (box[7] or box[8] or other[7] or other[8]):
        long, height = _upright_union(box, other)
    else:
        corners = box_corners(np.stack([box, other]))  # (2, 8, 3)
        c, s = np.cos(box[6]), np.sin(box[6])
        local = corners.reshape(-1, 3)[:, :2] @ np.array([[c, -s], [s, c]])  # along box's axes
        long = float(np.ptp(local, axis=0).max())
        height = float(np.ptp(corners.reshape(-1, 3)[:, 2]))
    return long <= _SLACK * prior.max_long and height <= _SLACK * prior.max_height


def unions_plausible(boxes: np.ndarray, others: np.ndarray, class_names: list[str]) -> np.ndarray:
    """``union_plausible`` of P pairs of (P, 9) boxes at once: (P,) bool (upright pairs in closed form, as
    arrays; others one by one)."""
    boxes, others = np.asarray(boxes, dtype=np.float64), np.asarray(others, dtype=np.float64)
    priors = [shape_prior(name) for name in class_names]
    out = np.ones(len(boxes), dtype=bool)
    has = np.array([p is not None for p in priors], dtype=bool)
    if not has.any():
        return out
    upright = has & ~(boxes[:, 7].astype(bool) | boxes[:, 8].astype(bool) | others[:, 7].astype(bool)
                      | others[:, 8].astype(bool))
    for k in np.flatnonzero(has & ~upright).tolist():
        out[k] = union_plausible(boxes[k], others[k], class_names[k])
    at = np.flatnonzero(upright)
    if len(at):
        long, height = _upright_unions(boxes[at], others[at])
        max_long = np.array([priors[k].max_long for k in at.tolist()])
        max_height = np.array([priors[k].max_height for k in at.tolist()])
        out[at] = (long <= _SLACK * max_long) & (height <= _SLACK * max_height)
    return out


def _upright_unions(box: np.ndarray, other: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_upright_union`` of (P, 9) box pairs as arrays, step for step (the same rounding)."""
    c, s = np.cos(box[:, 6]), np.sin(box[:, 6])
    lo_u = lo_v = lo_z = np.full(len(box), np.inf)
    hi_u = hi_v = hi_z = np.full(len(box), -np.inf)
    for b in (box, other):
        x, y, z, dx, dy, dz, yaw = b[:, :7].T
        cy, sy = np.cos(yaw), np.sin(yaw)
        cd, sd = cy * c + sy * s, sy * c - cy * s  # cos, sin of yaw - box's
        u, v = x * c + y * s, -x * s + y * c
        ru, rv = 0.5 * (np.abs(dx * cd) + np.abs(dy * sd)), 0.5 * (np.abs(dx * sd) + np.abs(dy * cd))
        lo_u, hi_u = np.minimum(lo_u, u - ru), np.maximum(hi_u, u + ru)
        lo_v, hi_v = np.minimum(lo_v, v - rv), np.maximum(hi_v, v + rv)
        lo_z, hi_z = np.minimum(lo_z, z - 0.5 * dz), np.maximum(hi_z, z + 0.5 * dz)
    return np.maximum(hi_u - lo_u, hi_v - lo_v), hi_z - lo_z


def _upright_union(box: np.ndarray, other: np.ndarray) -> tuple[float, float]:
    """The longer horizontal extent, along ``box``'s axes, and the height of two upright boxes'
    union, in closed form: the association asks this of every candidate pair, and its numpy
    form costs 0.1 ms a call in small-array overhead."""
    c, s = math.cos(float(box[6])), math.sin(float(box[6]))
    lo_u = lo_v = lo_z = math.inf
    hi_u = hi_v = hi_z = -math.inf
    for b in (box, other):
        x, y, z, dx, dy, dz, yaw = (float(v) for v in b[:7])
        cd, sd = math.cos(yaw) * c + math.sin(yaw) * s, math.sin(yaw) * c - math.cos(yaw) * s  # cos, sin of yaw - box's
        u, v = x * c + y * s, -x * s + y * c
        ru, rv = 0.5 * (abs(dx * cd) + abs(dy * sd)), 0.5 * (abs(dx * sd) + abs(dy * cd))
        lo_u, hi_u, lo_v, hi_v = min(lo_u, u - ru), max(hi_u, u + ru), min(lo_v, v - rv), max(hi_v, v + rv)
        lo_z, hi_z = min(lo_z, z - 0.5 * dz), max(hi_z, z + 0.5 * dz)
    return max(hi_u - lo_u, hi_v - lo_v), hi_z - lo_z
