"""Superlatives and ordinals only over what is known.

"The nearest chair", "the second chair from the right", "the monitor on my right" and "the cup closest to the
sink" pick one instance by its rank among all of them, so the pick is true only when every instance that could
rank before it is known. The published map (what grounding answers from) holds the confident objects; the
memory also holds what it saw and did not publish (``map_view.unpublished``). Before such a pick is answered,
that is searched for unresolved evidence of another instance:

* an unpublished object of the class: a track whose class is the asked one, or which holds at least
  ``MIN_EVIDENCE`` of the class's evidence (one detection at the detectors' default reporting score, 0.3), and
  is not larger than the class can be (``class_shapes``' upper bounds, with their slack: a part seen is smaller
  than the thing, a box much larger than the class is something else, a white card called "cup"). A screen
  whose panel gives no depth is "seen through" and loses confidence; a chair pushed under a table is seen in
  slivers: neither is published, and both stand in plain view;
* an unnamed object (class ``object``, published or not) of the class's size (``unnamed_shapes.could_be``) seen
  in at least two looks (``n_looks``; discovery finds a segment per look, so one look is one segment): something
  the geometry shows and the detector did not name, where an instance may stand.

Evidence is resolved when it is a piece of a known instance: its centre within ``PIECE_M`` of the box of a
published object of the class. When unresolved evidence ranks before the answer (farther to the asked side
among what is in view, any corner of its box counting; nearer; farther; closer to the anchor), the answer is
"not sure", with the candidate as its alternative: a robot told "the nearest chair" would otherwise act on a
confident wrong answer.

Not searched: the occupancy voxel map (the run folder keeps none, and occupancy alone cannot tell a chair
from the wall behind it), and size superlatives ("the largest chair": sizes of half-seen objects are not
known either).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from ..memory.class_shapes import shape_prior
from ..memory.scene_object import MemorySnapshot, SceneObject
from .phrases import Attribute, NounPhrase, Relation
from .relations import SceneGeometry
from .unnamed_shapes import UNNAMED_CLASS, could_be
from .viewpoint import Viewpoint, viewer_order

__all__ = ["MIN_EVIDENCE", "Evidence", "hidden_instances", "rank_doubt", "unresolved_before"]

MIN_EVIDENCE = 0.3  # a class's summed detection scores: one detection at the detectors' default reporting score
SIZE_SLACK = 1.25  # the memory's slack on its size priors (class_shapes._SLACK)
PIECE_M = 0.1  # evidence whose centre lies this close to a known instance's box is a piece of it
LATERAL_MARGIN_RAD = np.radians(2.0)  # ranks before: this much farther to the asked side (not the same object)
DISTANCE_MARGIN_M = 0.05  # ... or this much nearer (farther)


@dataclass(frozen=True)
class Evidence:
    """Something the memory holds outside the published map that may be another instance."""

    object: SceneObject
    why: str  # "an unpublished chair #107 (detected 4 times)", "unnamed object #124 of a book's size"


def _names(o: SceneObject, labels: Collection[str]) -> bool:
    """Whether an object is evidence of an instance of one of the classes (see the module docstring)."""
    evidence = dict(o.class_scores)
    return any((o.class_name == label or evidence.get(label, 0.0) >= MIN_EVIDENCE) and not _too_large(o.box, label)
               for label in labels)


def _too_large(box: np.ndarray, label: str) -> bool:
    prior = shape_prior(label)
    return prior is not None and (max(box[3], box[4]) > SIZE_SLACK * prior.max_long
                                  or box[5] > SIZE_SLACK * prior.max_height)


def _inside(point: np.ndarray, box: np.ndarray, margin: float) -> bool:
    """Whether a point lies within a yaw-only (9,) box grown by ``margin``."""
    c, s = np.cos(box[6]), np.sin(box[6])
    rel = point - box[:3]
    local = np.array([c * rel[0] + s * rel[1], -s * rel[0] + c * rel[1], rel[2]])
    return bool(np.all(np.abs(local) <= 0.5 * np.abs(box[3:6]) + margin))


def hidden_instances(labels: Collection[str], hidden: MemorySnapshot | None, snapshot: MemorySnapshot,
                     known: np.ndarray) -> list[Evidence]:
    """Unresolved evidence of instances of a class (``labels``: the detector's names of it) among what the memory
    holds beyond the published ``snapshot``, and among the snapshot's unnamed objects.

    Args:
        labels: the class names the phrase's noun names.
        hidden: the memory's objects that are not published (None: not known, e.g. a hand-made snapshot).
        snapshot: the published objects grounding answers from.
        known: indices into ``snapshot`` of the instances of the class it holds.
    """
    found: list[Evidence] = []
    pool = [(o, False) for o in (hidden.objects if hidden is not None else ())]
    pool += [(o, True) for o in snapshot.objects if o.class_name == UNNAMED_CLASS]
    for o, published in pool:
        if o.class_name == UNNAMED_CLASS:
            label = next((label for label in labels if could_be(label, o.box)), None) if o.n_looks >= 2 else None
            if label is None:
                continue
            why = f"{'an' if published else 'an unpublished'} unnamed object #{o.id} of a {label}'s size"
        elif _names(o, labels):
            times = "once" if o.n_observations == 1 else f"{o.n_observations} times"
            why = f"an unpublished {o.class_name} #{o.id} (detected {times})"
        else:
            continue
        if not any(_inside(o.box[:3], snapshot.boxes[k], PIECE_M) for k in known):
            found.append(Evidence(o, why))
    return found


def _in_view(viewpoint: Viewpoint, boxes: np.ndarray) -> np.ndarray:
    """(N,) whether any corner of each (N, 9) box's footprint lies in the viewer's field of view: a half-seen
    screen at the picture's edge is in view, though its centre may not be."""
    c, s = np.cos(boxes[:, 6]), np.sin(boxes[:, 6])
    corners = []
    for u, v in ((-0.5, -0.5), (-0.5, 0.5), (0.5, -0.5), (0.5, 0.5)):
        du, dv = u * boxes[:, 3], v * boxes[:, 4]
        corners.append(np.stack([boxes[:, 0] + c * du - s * dv, boxes[:, 1] + s * du + c * dv, boxes[:, 2]], axis=1))
    return np.any([viewpoint.in_view(k) for k in corners], axis=0)


def unresolved_before(evidence: list[Evidence], candidate: np.ndarray, viewpoint: Viewpoint | None,
                      attr: Attribute | None = None, relation: Relation | None = None,
                      anchor: np.ndarray | None = None) -> list[Evidence]:
    """The evidence that would rank before the candidate: in the viewer's order of ``attr`` (left/right among
    what is in view, near/far), or by distance to the ``anchor`` box of a CLOSEST/FARTHEST ``relation``.

    Args:
        evidence: from ``hidden_instances``.
        candidate: the (9,) box of the answer.
        viewpoint: the viewer's camera (for ``attr``).
        attr: a viewer-centred attribute (kind "lateral" or "distance").
        relation: CLOSEST or FARTHEST, with ``anchor``, the (9,) box of the answer's anchor.
    """
    if not evidence:
        return []
    boxes = np.stack([candidate, *(e.object.box for e in evidence)])
    if attr is not None and viewpoint is not None:
        g = SceneGeometry.from_boxes(boxes)
        distances = viewpoint.distances(g.centers, g.half_local, g.axes)
        key, _ = viewer_order(attr.kind, attr.sign, viewpoint, g.centers, distances)
        margin = LATERAL_MARGIN_RAD if attr.kind == "lateral" else DISTANCE_MARGIN_M
        counts = _in_view(viewpoint, boxes) if attr.kind == "lateral" else np.ones(len(boxes), dtype=bool)
    elif relation in (Relation.CLOSEST, Relation.FARTHEST) and anchor is not None:
        key = np.linalg.norm(boxes[:, :2] - anchor[None, :2], axis=1)
        key = key if relation is Relation.CLOSEST else -key
        margin, counts = DISTANCE_MARGIN_M, np.ones(len(boxes), dtype=bool)
    else:
        return []
    return [e for e, k, seen in zip(evidence, key[1:], counts[1:], strict=True) if seen and k < key[0] - margin]


def rank_doubt(target: NounPhrase, t: np.ndarray, best: int, used: list, labels: list[str],
               snapshot: MemorySnapshot, hidden: MemorySnapshot | None, viewpoint: Viewpoint | None) -> str:
    """Why a pick by rank is not sure, "" when it is: the target's viewer words ("the nearest", "the second from
    the left", "on my right") and its CLOSEST/FARTHEST clauses ("closest to the sink"), against the evidence the
    memory holds of other instances of ``labels``.

    Args:
        target: the phrase's target noun phrase; t: (T,) the candidates' indices into ``snapshot``; best: the
            answer's position in ``t``.
        used: the evaluated clauses, (clause, score per candidate, chosen anchor indices per candidate).
        labels: the classes the target's noun names.
        snapshot, hidden, viewpoint: the published objects, what the memory holds beyond them, the viewer.
    """
    picks = [a for a in target.attributes if a.kind == "lateral" or a.kind == "distance" and abs(a.sign) > 1]
    ranked = [(c.relation, chosen[0][best]) for c, _, chosen in used
              if c.relation in (Relation.CLOSEST, Relation.FARTHEST) and not c.negated and chosen]
    if not (picks or ranked) or not labels:
        return ""
    evidence = hidden_instances(labels, hidden, snapshot, t)
    box = snapshot.boxes[t[best]]
    before = [e for a in picks for e in unresolved_before(evidence, box, viewpoint, attr=a)]
    before += [e for rel, j in ranked for e in unresolved_before(evidence, box, None, relation=rel,
                                                                   anchor=snapshot.boxes[j])]
    whys = list(dict.fromkeys(e.why for e in before))
    return (f"the memory also holds {', '.join(whys[:3])}{' and more' if len(whys) > 3 else ''}, which may be "
            "another one ranking before it" if whys else "")
