"""The scene as a graph for planners that read text: objects and their relations, as a JSON document.

Relations come from the grounder's geometry (``relations.py``), one record each:

* support: "on" (subject on object; only the best support of each subject);
* proximity: "near", each object's nearest neighbours within ``NEAR_M`` (with the distance);
* between: a subject between two of its neighbours;
* directions: "in front of" / "behind" / "left of" / "right of" an object with a front (furniture
  by a wall faces the room, ``room_frame.py``; other objects face where they were seen from),
  and, with a viewpoint, "left of" / "right of" / "in front of" / "behind" as seen from it.

Each record also has a sentence ("cup #0 is on table #6"), and every object a short referring
expression when descriptions are given (``describe.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..classes import FRONTED_CLASSES
from ..memory.scene_object import MemorySnapshot
from .phrases import Relation
from .relations import SceneGeometry, between_scores, pair_scores, supports
from .room_frame import face_the_room
from .viewpoint import Viewpoint
from .vocabulary import canonical_label

__all__ = ["scene_graph"]

FORMAT = "embodied_ros/scene_graph"
ON_MIN = 0.5  # support score for an "on" record
NEAR_M = 1.5  # proximity records: neighbours whose footprints are at most this far apart
MAX_NEAR = 3  # ... at most this many per object
BETWEEN_MIN = 0.7  # between score for a record (one per subject, the best pair)
DIRECTION_MIN = 0.5  # allocentric score for a direction record
VIEW_BEARING_RAD = np.radians(8.0)  # seen from the viewpoint: left/right when the bearings differ by this
VIEW_DEPTH_M = 0.3  # ... in front/behind when the distances along the view differ by this


def _name(snapshot: MemorySnapshot, i: int) -> str:
    return f"{canonical_label(snapshot.class_names[i])} #{int(snapshot.ids[i])}"


def scene_graph(snapshot: MemorySnapshot, *, viewpoint: Viewpoint | None = None, min_observations: int = 2,
                min_confidence: float = 0.5, descriptions: dict[int, str] | None = None) -> dict[str, Any]:
    """The snapshot's confident objects and their relations, as a JSON-ready document.

    Args:
        snapshot: the memory.
        viewpoint: adds relations as seen from this camera ("left of" in the picture).
        min_observations, min_confidence: objects seen fewer times, or less confidently there, are left out.
        descriptions: object id -> referring expression, added to the objects.

    Returns:
        {"format", "frame_id", "stamp_ns", "viewpoint", "objects": [...], "relations": [...], "text": [...]}.
    """
    keep = np.flatnonzero([o.n_observations >= min_observations and o.confidence >= min_confidence
                           for o in snapshot.objects])
    doc: dict[str, Any] = {"format": FORMAT, "frame_id": snapshot.frame_id, "stamp_ns": int(snapshot.stamp_ns),
                           "viewpoint": None, "objects": _objects(snapshot, keep, descriptions), "relations": [],
                           "text": []}
    if viewpoint is not None:
        doc["viewpoint"] = {"name": viewpoint.name, "position": [round(float(v), 4) for v in viewpoint.position]}
    if len(keep) < 2:
        return doc
    names = [snapshot.class_names[i] for i in keep]
    g = SceneGeometry.from_boxes(face_the_room(snapshot.boxes[keep], names, snapshot.scores[keep]), names)
    local = np.arange(len(keep))
    records = _Records(snapshot, keep, viewpoint, doc["text"])
    _support(records, g, local)
    neighbours = _proximity(records, g, local)
    _between(records, g, neighbours)
    _allocentric(records, g, local, neighbours, names)
    if viewpoint is not None:
        _as_seen(records, g, neighbours, viewpoint)
    doc["relations"] = records.relations
    return doc


def _objects(snapshot: MemorySnapshot, keep: np.ndarray, descriptions: dict[int, str] | None) -> list[dict[str, Any]]:
    """The kept objects' records."""
    return [{
        "id": int(o.id), "class": o.class_name, "name": canonical_label(o.class_name),
        "score": round(float(o.score), 4), "confidence": round(float(o.confidence), 4), "colour": o.colour_name,
        "box": [round(float(v), 4) for v in o.box],
        **({"description": descriptions[int(o.id)]} if descriptions and int(o.id) in descriptions else {}),
    } for o in (snapshot.objects[i] for i in keep)]


class _Records:
    """The relation records and their sentences, of objects numbered by their place in ``keep``."""

    def __init__(self, snapshot: MemorySnapshot, keep: np.ndarray, viewpoint: Viewpoint | None,
                 text: list[str]) -> None:
        self.snapshot, self.keep, self.viewpoint, self.text = snapshot, keep, viewpoint, text
        self.relations: list[dict[str, Any]] = []

    def add(self, kind: str, subject: int, objects_: list[int], relation: str, score: float, **extra: Any) -> None:
        snapshot, keep, viewpoint = self.snapshot, self.keep, self.viewpoint
        ids = [int(snapshot.ids[keep[k]]) for k in objects_]
        self.relations.append({"kind": kind, "subject": int(snapshot.ids[keep[subject]]), "relation": relation,
                               "objects": ids, "score": round(float(score), 3), **extra})
        what = " and ".join(_name(snapshot, keep[k]) for k in objects_)
        self.text.append(f"{_name(snapshot, keep[subject])} is {relation} {what}"
                         + (f" (seen from {viewpoint.name})" if kind == "viewer" and viewpoint else ""))


def _support(records: _Records, g: SceneGeometry, local: np.ndarray) -> None:
    """"on": each object's best support, when it holds."""
    on = pair_scores(Relation.ON, g, local, local, supports(g, local))  # only each object's best support
    for s in local:
        j = int(np.argmax(on[s]))
        if on[s, j] >= ON_MIN:
            records.add("support", s, [j], "on", on[s, j])


def _proximity(records: _Records, g: SceneGeometry, local: np.ndarray) -> dict[int, list[int]]:
    """"near": each object's nearest neighbours (the other relations are recorded between neighbours only);
    returns them, object -> neighbours nearest first."""
    centre = np.linalg.norm(g.centers[:, None, :2] - g.centers[None, :, :2], axis=2)
    near = pair_scores(Relation.NEAR, g, local, local)
    gap = -np.log(np.maximum(near, 1e-12)) * 0.8  # relations.NEAR_SCALE_M: the "near" distance back
    neighbours = {}
    for s in local:
        order = [int(j) for j in np.argsort(gap[s]) if j != s and gap[s, j] <= NEAR_M][:MAX_NEAR]
        neighbours[int(s)] = order
        for j in order:
            records.add("proximity", s, [j], "near", near[s, j], distance_m=round(float(centre[s, j]), 3))
    return neighbours


def _between(records: _Records, g: SceneGeometry, neighbours: dict[int, list[int]]) -> None:
    """"between": an object between the best pair of its neighbours."""
    for s, order in neighbours.items():
        if len(order) >= 2:
            pairs = np.array(order)
            b = between_scores(g, np.array([s]), pairs, pairs)[0]
            ja, jb = np.unravel_index(int(np.argmax(b)), b.shape)
            if b[ja, jb] >= BETWEEN_MIN:
                records.add("between", s, [int(pairs[ja]), int(pairs[jb])], "between", b[ja, jb])


def _allocentric(records: _Records, g: SceneGeometry, local: np.ndarray, neighbours: dict[int, list[int]],
                 names: list[str]) -> None:
    """In front of, behind, left or right of a neighbour with a front."""
    fronted = np.array([canonical_label(n) in FRONTED_CLASSES or n in FRONTED_CLASSES for n in names])
    for relation in (Relation.FRONT, Relation.BEHIND, Relation.LEFT, Relation.RIGHT):
        s2 = pair_scores(relation, g, local, local)
        for s, order in neighbours.items():
            for j in order:
                if fronted[j] and s2[s, j] >= DIRECTION_MIN:
                    records.add("allocentric", s, [j], relation.value, s2[s, j])


def _as_seen(records: _Records, g: SceneGeometry, neighbours: dict[int, list[int]], viewpoint: Viewpoint) -> None:
    """Left of, right of, in front of, behind a neighbour as seen from the viewpoint."""
    bearing = viewpoint.bearings(g.centers)
    forward, _ = viewpoint.axes()
    depth = (g.centers[:, :2] - viewpoint.position[:2]) @ forward
    for s, order in neighbours.items():
        for j in order:
            if bearing[s] <= bearing[j] - VIEW_BEARING_RAD:
                records.add("viewer", s, [j], "left of", 1.0)
            elif bearing[s] >= bearing[j] + VIEW_BEARING_RAD:
                records.add("viewer", s, [j], "right of", 1.0)
            if depth[s] <= depth[j] - VIEW_DEPTH_M:
                records.add("viewer", s, [j], "in front of", 1.0)
            elif depth[s] >= depth[j] + VIEW_DEPTH_M:
                records.add("viewer", s, [j], "behind", 1.0)
