"""What the scene memory shows: its immutable snapshot, and which of its objects are published."""

from __future__ import annotations

import numpy as np

from ..geometry.boxes import BOX_DIM
from .config import MemoryConfig
from .discovery import UNKNOWN_CLASS
from .scene_object import MemorySnapshot, SceneObject
from .track import Track


def build_snapshot(tracks: dict[int, Track], frame_id: str, last_frame: tuple[int, int],
                   n_updates: int) -> MemorySnapshot:
    """An immutable copy of ``tracks`` (by increasing id) with read-only arrays.

    Args:
        tracks: the memory's objects by id.
        frame_id: world frame of their boxes.
        last_frame: (index, stamp in ns) of the last frame the memory took.
        n_updates: updates since the last reset.
    """
    objs = tuple(tracks[i].to_object() for i in sorted(tracks))
    ids = np.array([o.id for o in objs], dtype=np.int64)
    boxes = np.array([o.box for o in objs], dtype=np.float64).reshape(-1, BOX_DIM)
    scores = np.array([o.score for o in objs], dtype=np.float64)
    for arr in (ids, boxes, scores):
        arr.setflags(write=False)
    return MemorySnapshot(objs, ids, boxes, scores, tuple(o.class_name for o in objs), frame_id,
                          last_frame[0], last_frame[1], n_updates)


def published(snapshot: MemorySnapshot, config: MemoryConfig) -> list[SceneObject]:
    """Confident objects seen at least ``min_observations`` times, at most ``max_per_class`` per class
    and ``max_unknown`` unknown objects (highest score first), best score first overall."""
    return snapshot.published(config.max_per_class, config.min_observations, config.publish_confidence,
                              {UNKNOWN_CLASS: config.max_unknown})
