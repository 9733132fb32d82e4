"""One map for everyone: the objects grounding, descriptions and the scene graph speak about.

RViz, the bag and objects.json show the memory's published objects (``MemorySnapshot.published``:
confident, seen often enough, at most ``max_per_class`` per class) and the room's published structure
(``SceneMemory.published_structure``: floor, walls, counters, shelves, cabinets). Language uses the same
set, so a user is never told about "mouse #112" that no display shows, and "the cup on the counter" has a
counter to be on; ``all_objects`` widens it to every object the memory holds (for debugging a map).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import replace
from typing import Any

import numpy as np

from ..memory.scene_object import MemorySnapshot

__all__ = ["published_snapshot", "subset", "unpublished", "with_objects"]

# The published view of each snapshot, kept while the snapshot lives: a service answering several calls
# about one moment gets the same view object back, and the grounder its cached geometry.
_views: weakref.WeakKeyDictionary[MemorySnapshot, tuple[tuple, MemorySnapshot]] = weakref.WeakKeyDictionary()
# What each published view leaves out of its memory's snapshot (for "only over what is known": completeness.py).
_left_out: weakref.WeakKeyDictionary[MemorySnapshot, MemorySnapshot] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def subset(snapshot: MemorySnapshot, ids: set[int] | frozenset[int]) -> MemorySnapshot:
    """The snapshot with only the objects whose id is in ``ids`` (same order, same frame and stamp)."""
    rows = np.array([int(i) in ids for i in snapshot.ids], dtype=bool)
    return replace(snapshot, objects=tuple(o for o, k in zip(snapshot.objects, rows, strict=True) if k),
                   ids=snapshot.ids[rows], boxes=snapshot.boxes[rows], scores=snapshot.scores[rows],
                   class_names=tuple(n for n, k in zip(snapshot.class_names, rows, strict=True) if k))


def with_objects(snapshot: MemorySnapshot, extra: list[Any]) -> MemorySnapshot:
    """The snapshot with ``extra`` scene objects (the room's structure) after its own."""
    if not extra:
        return snapshot
    objects = (*snapshot.objects, *extra)
    arrays = [np.array([int(o.id) for o in objects], dtype=np.int64),
              np.array([o.box for o in objects], dtype=np.float64).reshape(-1, 9),
              np.array([o.score for o in objects], dtype=np.float64)]
    for a in arrays:
        a.setflags(write=False)
    return replace(snapshot, objects=objects, ids=arrays[0], boxes=arrays[1], scores=arrays[2],
                   class_names=tuple(o.class_name for o in objects))


def published_snapshot(memory: Any, all_objects: bool = False,
                       snapshot: MemorySnapshot | None = None) -> MemorySnapshot:
    """The memory's published objects as a snapshot (every object with ``all_objects``).

    Args:
        memory: a ``SceneMemory`` (its config holds the publishing rule).
        all_objects: every object the memory holds instead.
        snapshot: the memory's snapshot to cut, when the caller already took one.
    """
    snapshot = snapshot if snapshot is not None else memory.snapshot()
    if all_objects:
        return with_objects(snapshot, list(getattr(memory, "structure_objects", list)()))
    c = memory.config
    rule = (c.max_per_class, c.min_observations, c.publish_confidence)
    with _lock:
        hit = _views.get(snapshot)
    if hit is not None and hit[0] == rule:
        return hit[1]
    shown = frozenset(int(o.id) for o in snapshot.published(*rule))
    view = with_objects(subset(snapshot, shown), list(getattr(memory, "published_structure", list)()))
    with _lock:
        _views[snapshot] = (rule, view)
        _left_out[view] = subset(snapshot, frozenset(int(i) for i in snapshot.ids) - shown)
    return view


def unpublished(view: MemorySnapshot) -> MemorySnapshot | None:
    """The objects the memory holds and ``view`` leaves out (not confident, seen too rarely, over a class's
    limit), for a view made by ``published_snapshot``; None for any other snapshot (nothing known of what
    else the memory holds). Read only: grounding never answers with them, it only asks whether they may be
    instances it does not know of."""
    with _lock:
        return _left_out.get(view)
