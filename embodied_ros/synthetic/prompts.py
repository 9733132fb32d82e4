"""Grounding prompts for a synthetic scene, made with EmbodiedScan's five relation templates.

Relations (EmbodiedScan, sec. 3.3): horizontal proximity (closest / farthest), vertical
proximity (above / below), support (on / under), allocentric (in front of / behind / left of /
right of an oriented anchor, seen from the anchor's own front) and between (two anchors).
Uniqueness rules: the target's class has 2..6 instances in the scene (a bare class name would
be ambiguous); every anchor's class has exactly one instance (so the anchor is unambiguous) and
differs from the target's class; the relation holds for the target and for no other instance
of its class, with a margin so that no prompt is borderline. Class words are drawn from
classes.SYNONYMS, so "the mug on the desk" names a cup on a table.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..classes import ORIENTED_CLASSES, RelationType
from ..geometry.boxes import box_corners
from .classes import SYNONYMS
from .scene_objects import SyntheticObject

_TEMPLATES: dict[str, tuple[str, ...]] = {
    "closest": ("the {t} closest to the {a}", "find the {t} nearest to the {a}", "the {t} next to the {a}"),
    "farthest": ("the {t} farthest from the {a}", "the {t} that is far away from the {a}"),
    "above": ("the {t} above the {a}", "the {t} that is higher than the {a}"),
    "below": ("the {t} below the {a}", "the {t} beneath the {a}"),
    "on": ("the {t} on the {a}", "the {t} sitting on top of the {a}", "the {t} that is placed on the {a}"),
    "under": ("the {t} under the {a}", "the {t} that supports the {a}"),
    "front": ("the {t} in front of the {a}", "the {t} facing the front of the {a}"),
    "behind": ("the {t} behind the {a}", "the {t} at the back of the {a}"),
    "left": ("the {t} to the left of the {a}", "the {t} on the left side of the {a}"),
    "right": ("the {t} to the right of the {a}", "the {t} on the right side of the {a}"),
    "between": ("the {t} between the {a} and the {b}", "the {t} in between the {a} and the {b}"),
}
_RELATION_OF = {"closest": RelationType.HORIZONTAL, "farthest": RelationType.HORIZONTAL, "above": RelationType.VERTICAL,
                "below": RelationType.VERTICAL, "on": RelationType.SUPPORT, "under": RelationType.SUPPORT,
                "front": RelationType.ALLOCENTRIC, "behind": RelationType.ALLOCENTRIC, "left": RelationType.ALLOCENTRIC,
                "right": RelationType.ALLOCENTRIC, "between": RelationType.BETWEEN}

_DIST_MARGIN = 0.3  # metres by which the closest (farthest) must beat the runner-up
_NEAR = 2.5  # allocentric relations hold within this horizontal distance, metres
_SECTOR_MARGIN = np.deg2rad(10.0)  # allocentric: the target is this far inside its 90-degree sector


@dataclass(frozen=True)
class GroundingPrompt:
    """A phrase naming one object of the scene through a relation to unique anchors.

    Attributes:
        text: the phrase, e.g. "the mug on the desk".
        target_id: instance id of the object it names.
        anchor_ids: instance ids of the anchors (two for "between").
        relation: the relation type.
        predicate: the relation word: closest, farthest, above, below, on, under, front,
            behind, left, right or between.
        target_class: class of the target.
        distractor_ids: the other instances of the target's class.
    """

    text: str
    target_id: int
    anchor_ids: tuple[int, ...]
    relation: RelationType
    predicate: str
    target_class: str
    distractor_ids: tuple[int, ...]

    @property
    def unique(self) -> bool:
        """True when the target is the only instance of its class (ScanRefer's "unique" split)."""
        return not self.distractor_ids


def _bounds(obj: SyntheticObject) -> tuple[np.ndarray, np.ndarray]:
    c = box_corners(obj.box)[0]
    return c.min(axis=0), c.max(axis=0)


def _holds(pred: str, t: SyntheticObject, anchors: list[SyntheticObject]) -> bool:
    """Whether ``pred`` holds for target t and its anchors (before uniqueness)."""
    a = anchors[0]
    if pred == "on":
        return t.support == a.instance_id
    if pred == "under":
        return a.support == t.instance_id
    if pred in ("above", "below"):
        tlo, thi = _bounds(t)
        alo, ahi = _bounds(a)
        reach = 0.5 * max(a.box[3], a.box[4]) + 0.3
        if np.linalg.norm(t.box[:2] - a.box[:2]) > reach or t.support == a.instance_id or a.support == t.instance_id:
            return False
        return bool(tlo[2] > ahi[2] + 0.05) if pred == "above" else bool(thi[2] < alo[2] - 0.05)
    if pred in ("front", "behind", "left", "right"):
        v = a.rotation.T @ (t.box[:3] - a.box[:3])
        if np.hypot(v[0], v[1]) > _NEAR:
            return False
        # Angle of the target around the anchor, 0 = straight ahead of the anchor's front (-y).
        ang = np.arctan2(v[0], -v[1])
        centre = {"front": 0.0, "left": np.pi / 2, "behind": np.pi, "right": -np.pi / 2}[pred]
        off = abs((ang - centre + np.pi) % (2 * np.pi) - np.pi)
        return bool(off < np.pi / 4 - _SECTOR_MARGIN)
    if pred == "between":
        p, q = anchors[0].box[:2], anchors[1].box[:2]
        seg = q - p
        length = np.linalg.norm(seg)
        if length < 0.5:
            return False
        s = float(np.dot(t.box[:2] - p, seg) / length**2)
        dist = abs(seg[0] * (t.box[1] - p[1]) - seg[1] * (t.box[0] - p[0])) / length
        return 0.15 < s < 0.85 and dist < min(0.6, 0.35 * length)
    raise ValueError(f"unknown predicate {pred}")


def _loosely(pred: str, t: SyntheticObject, anchors: list[SyntheticObject]) -> bool:
    """``_holds`` with the margins removed: a distractor must not even come close."""
    if pred in ("front", "behind", "left", "right"):
        a = anchors[0]
        v = a.rotation.T @ (t.box[:3] - a.box[:3])
        if np.hypot(v[0], v[1]) > _NEAR + 0.3:
            return False
        ang = np.arctan2(v[0], -v[1])
        centre = {"front": 0.0, "left": np.pi / 2, "behind": np.pi, "right": -np.pi / 2}[pred]
        return bool(abs((ang - centre + np.pi) % (2 * np.pi) - np.pi) < np.pi / 4 + _SECTOR_MARGIN)
    return _holds(pred, t, anchors)


def _candidates(objects: list[SyntheticObject], min_count: int, max_count: int) -> list[tuple[str, int, tuple]]:
    counts = Counter(o.class_name for o in objects)
    anchors = [o for o in objects if counts[o.class_name] == 1]
    out: list[tuple[str, int, tuple]] = []
    for cls, n in sorted(counts.items()):
        if not min_count <= n <= max_count:
            continue
        group = [o for o in objects if o.class_name == cls]
        for a in anchors:
            if a.class_name == cls:
                continue
            d = np.array([np.linalg.norm(o.box[:2] - a.box[:2]) for o in group])
            order = np.argsort(d)
            if len(group) >= 2 and d[order[1]] - d[order[0]] > _DIST_MARGIN:
                out.append(("closest", group[order[0]].instance_id, (a.instance_id,)))
            if len(group) >= 2 and d[order[-1]] - d[order[-2]] > _DIST_MARGIN:
                out.append(("farthest", group[order[-1]].instance_id, (a.instance_id,)))
            preds = ["on", "under", "above", "below"] + (["front", "behind", "left", "right"]
                                                         if a.class_name in ORIENTED_CLASSES else [])
            for pred in preds:
                strict = [o for o in group if _holds(pred, o, [a])]
                if len(strict) == 1 and sum(_loosely(pred, o, [a]) for o in group) == 1:
                    out.append((pred, strict[0].instance_id, (a.instance_id,)))
        for i, a in enumerate(anchors):
            for b in anchors[i + 1:]:
                if cls in (a.class_name, b.class_name):
                    continue
                hits = [o for o in group if _holds("between", o, [a, b])]
                if len(hits) == 1:
                    out.append(("between", hits[0].instance_id, (a.instance_id, b.instance_id)))
    return out


def make_prompts(objects: list[SyntheticObject], rng: np.random.Generator, max_prompts: int = 40,
                 min_count: int = 2, max_count: int = 6) -> list[GroundingPrompt]:
    """Draw up to ``max_prompts`` prompts, balanced over the relation types that occur.

    Args:
        objects: the scene's objects (instance id = list index).
        rng: generator for the choice of prompts, templates and synonyms.
        max_prompts: at most this many prompts.
        min_count, max_count: allowed instance count of a target's class (EmbodiedScan: 2..6;
            min_count=1 also makes prompts for unique targets).

    Returns:
        Prompts, each naming its target uniquely under the rules in the module docstring.
    """
    cands = _candidates(objects, min_count, max_count)
    by_relation: dict[RelationType, list[tuple[str, int, tuple]]] = {}
    for c in cands:
        by_relation.setdefault(_RELATION_OF[c[0]], []).append(c)
    for lst in by_relation.values():
        rng.shuffle(lst)  # type: ignore[arg-type]
    chosen: list[tuple[str, int, tuple]] = []
    queues = [by_relation[r] for r in RelationType if r in by_relation]
    while len(chosen) < max_prompts and any(queues):
        for q in queues:
            if q and len(chosen) < max_prompts:
                chosen.append(q.pop())
    prompts = []
    for pred, tid, aids in chosen:
        t = objects[tid]
        words = {"t": rng.choice(SYNONYMS[t.class_name])}
        for key, aid in zip("ab", aids, strict=False):
            words[key] = rng.choice(SYNONYMS[objects[aid].class_name])
        text = str(rng.choice(_TEMPLATES[pred])).format(**words)
        others = tuple(o.instance_id for o in objects if o.class_name == t.class_name and o.instance_id != tid)
        prompts.append(GroundingPrompt(text, tid, tuple(aids), _RELATION_OF[pred], pred, t.class_name, others))
    return prompts
