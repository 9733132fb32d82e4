"""What the scene memory hands out: immutable objects, snapshots and per-update results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..geometry.boxes import BOX_DIM
from .settling import BoxState


@dataclass(frozen=True, eq=False)
class SceneObject:
    """One persistent object (immutable; the memory replaces it when it changes).

    Attributes:
        id: stable integer id, never reused by the memory.
        class_name: the class with the most evidence (ties keep the earlier winner).
        score: confidence in [0, 1] (running max or moving average, see ScoreMode).
        box: (9,) float64 world-frame 9-DoF box, metres and radians (read-only): the box the map shows,
            the latest that two looks agreed on (memory/settling.py; before any did, the object's own).
        class_scores: (class name, evidence) pairs, most evidence first; evidence is the sum
            of the scores of the detections of that class fused into the object.
        n_observations: detections fused into the object (one per frame at most).
        first_seen_frame: frame index of the first detection.
        last_seen_frame: frame index of the latest detection.
        first_seen_ns: stamp of the first detection, nanoseconds.
        last_seen_ns: stamp of the latest detection, nanoseconds.
        confidence: probability in [0, 1] that the object exists, from the evidence for and
            against it (seen and detected, in view and not detected); the memory publishes
            confident objects only.
        colour_lab: robust CIELAB (L*, a*, b*) colour of the object's pixels across views, or
            None when never sampled.
        colour_name: the colour word for ``colour_lab`` ("white", "red", ...), or None.
        n_looks: independent looks among the observations: the places the camera saw it from
            whose latest look holds evidence of it (memory/existence.py); the same for a 30 Hz and
            a 3 Hz stream of one walk, where ``n_observations`` grows with the frame rate.
        box_state: whether ``box`` has settled (two looks agreed on it, and nothing changed since),
            is shown while a change awaits another look (growing), or never settled (not published).
        appeared: the memory put it on the map (sure enough to act on, its box settled) and has not
            retracted it since (memory/settling.py); only such objects are published.
    """

    id: int
    class_name: str
    score: float
    box: np.ndarray
    class_scores: tuple[tuple[str, float], ...]
    n_observations: int
    first_seen_frame: int
    last_seen_frame: int
    first_seen_ns: int
    last_seen_ns: int
    confidence: float = 1.0
    colour_lab: tuple[float, float, float] | None = None
    colour_name: str | None = None
    n_looks: int = 1
    box_state: BoxState = BoxState.SETTLED
    appeared: bool = True

    @property
    def settled(self) -> bool:
        """Whether its box is settled: two looks agreed on the box shown and nothing changed it since."""
        return self.box_state is BoxState.SETTLED

    def __post_init__(self) -> None:
        box = np.array(self.box, dtype=np.float64).reshape(BOX_DIM)
        box.setflags(write=False)
        object.__setattr__(self, "box", box)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SceneObject):
            return NotImplemented
        return all(
            np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
            for a, b in zip(_fields(self), _fields(other), strict=True)
        )

    __hash__ = None  # type: ignore[assignment]  # equal by value, holds an array


def _fields(obj: SceneObject) -> tuple[Any, ...]:
    return (obj.id, obj.class_name, obj.score, obj.box, obj.class_scores, obj.n_observations,
            obj.first_seen_frame, obj.last_seen_frame, obj.first_seen_ns, obj.last_seen_ns, obj.confidence,
            obj.colour_lab, obj.colour_name, obj.n_looks, obj.box_state,
            obj.appeared)


@dataclass(frozen=True)
class UpdateResult:
    """What one ``SceneMemory.update`` did.

    Attributes:
        created: ids of objects created by this frame (and still alive after its merges).
        updated: ids of objects that existed before and took a detection or a merge.
        merged: (removed id, surviving id) pairs; the survivor is the older object.
        n_low_score: detections dropped for a score below the threshold.
        n_suppressed: detections dropped as duplicates of a detection already used this frame.
        n_invalid: detections dropped for non-finite values or non-positive extents.
        missed: ids of objects that lost existence evidence (in view and not detected, or their
            place seen through).
        forgotten: ids of objects removed because their evidence fell too low.
        discovery_s: seconds spent finding and taking in the frame's unknown objects (memory/discovery.py).
        structure_s: seconds spent on the room's structure (memory/structure.py; not in ``discovery_s``).
        discovery_looked: whether discovery looked at this frame (a keyframe of its own: the camera moved).
        discovery_ahead_s: of ``discovery_s``, the seconds done ahead of the update (SceneMemory.prepare), outside
            its own time.
        changes: the change events this frame made (memory/change_events.ChangeEvent: removed, new, moved).
    """

    created: tuple[int, ...] = ()
    updated: tuple[int, ...] = ()
    merged: tuple[tuple[int, int], ...] = ()
    n_low_score: int = 0
    n_suppressed: int = 0
    n_invalid: int = 0
    missed: tuple[int, ...] = ()
    forgotten: tuple[int, ...] = ()
    discovery_s: float = field(default=0.0, compare=False)  # a timing, not part of what the update did
    structure_s: float = field(default=0.0, compare=False)
    discovery_looked: bool = field(default=False, compare=False)
    discovery_ahead_s: float = field(default=0.0, compare=False)
    changes: tuple[Any, ...] = ()
    changes_s: float = field(default=0.0, compare=False)  # seconds of the change rules (memory/changes.py)


@dataclass(frozen=True, eq=False)
class MemorySnapshot:
    """An immutable copy of the memory, safe to read in one thread while another updates.

    Attributes:
        objects: every object, by increasing id.
        ids: (N,) int64 ids of ``objects`` (read-only).
        boxes: (N, 9) float64 world boxes (read-only).
        scores: (N,) float64 scores (read-only).
        class_names: class name of each object.
        frame_id: world frame of the boxes ("" before the first detection).
        frame_index: index of the last frame given to ``update`` (-1 before any).
        stamp_ns: stamp of that frame, nanoseconds.
        n_updates: number of ``update`` calls since the last reset.
    """

    objects: tuple[SceneObject, ...]
    ids: np.ndarray
    boxes: np.ndarray
    scores: np.ndarray
    class_names: tuple[str, ...]
    frame_id: str = ""
    frame_index: int = -1
    stamp_ns: int = 0
    n_updates: int = 0

    def __len__(self) -> int:
        return len(self.objects)

    def published(self, max_per_class: int, min_observations: int = 1,
                  min_confidence: float = 0.0, limits: dict[str, int] | None = None) -> list[SceneObject]:
        """At most ``max_per_class`` objects per class (``limits``: other limits for some classes), each
        class's highest scores, best first, among those seen at least ``min_observations`` times, at
        least ``min_confidence`` confident, with a box that has settled once, and put on the map by the
        memory (``appeared``; unconfirmed objects never take a place in a class's limit)."""
        confirmed = np.array([o.n_observations >= min_observations and o.confidence >= min_confidence
                              and o.box_state is not BoxState.UNSETTLED and o.appeared for o in self.objects],
                             dtype=bool)
        if not confirmed.any():
            return []
        classes, codes = np.unique(np.array(self.class_names), return_inverse=True)
        codes = np.where(confirmed, codes, -1)  # unconfirmed objects sort first and are dropped below
        order = np.lexsort((self.ids, -self.scores, codes))  # by class, then score desc, then id
        order = order[codes[order] >= 0]
        sorted_codes = codes[order]
        starts = np.searchsorted(sorted_codes, sorted_codes, side="left")
        limit = np.array([(limits or {}).get(str(c), max_per_class) for c in classes], dtype=np.int64)
        keep = order[np.arange(len(order)) - starts < limit[sorted_codes]]
        keep = keep[np.lexsort((self.ids[keep], -self.scores[keep]))]
        return [self.objects[i] for i in keep]
