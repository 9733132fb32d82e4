"""Words about the room's structure (memory/structure.py): walls as anchors, and counting stacked shelves.

The structure's parts are objects of the published map like any other (grounding/map_view.py), so "the cup on
the counter", "the cabinet under the sink" and "the red cabinet" need nothing of their own: support ("on") is
read from the boxes, and a cup on a worktop rests on the counter's box, not on the cabinet below it. Two things
do:

* "by the wall", "the chair next to the wall": the engine refuses walls when the map holds none (it used to
  hold no structure at all); a map with walls answers them as anchors, and nearness to a wall is the gap to
  its face (``WALL_SCALE_M``), not the distance between centres a wall's length makes meaningless;
* "the second shelf": an ordinal with no order of its own ("from the left") counts stacked shelves from the
  top, as people count the shelves of a bookcase or a fridge ("the top shelf" is the first). Other things
  ("the second chair") still need an order, and the ordinal is ignored with a note, as before.
"""

from __future__ import annotations

import numpy as np

from ..memory.scene_object import MemorySnapshot
from .phrases import STACK_KIND, Relation
from .relations import COMPARATIVE_SCALE_M, SceneGeometry

__all__ = ["STACKED", "STACK_KIND", "WALL_SCALE_M", "holds_structure", "stack_ranking", "wall_scores"]

STACKED = frozenset({"shelf"})  # the classes whose parts stack above each other
_STRUCTURE_NOUNS = {"wall": "wall", "walls": "wall"}
WALL_SCALE_M = 0.3  # "by the wall": e^-1 this far from its face (a table 1.4 m from the wall is not by it)
_FROM_WALL = (Relation.NEAR, Relation.NEXT_TO, Relation.CLOSEST, Relation.FARTHEST)


def holds_structure(snapshot: MemorySnapshot, word: str, confident: np.ndarray) -> bool:
    """Whether the map holds a confident part of the room that ``word`` (an anchor's head, "wall") names."""
    name = _STRUCTURE_NOUNS.get(word)
    return name is not None and any(c == name and ok for c, ok in zip(snapshot.class_names, confident, strict=True))


def stack_ranking(rank: int, t: np.ndarray, score: np.ndarray, snapshot: MemorySnapshot,
                  fit: float) -> np.ndarray | str | None:
    """Candidate positions with the ``rank``-th of the stacked ones from the top first, or why there is none;
    None when the candidates are not stacked things (the ordinal then needs an order of its own).

    Args:
        rank: 1 for the top one.
        t: (T,) the candidates' indices in the snapshot.
        score: (T,) their scores (0 where the phrase does not hold); those at least ``fit`` of the best count.
        snapshot: the map.
        fit: share of the best score a candidate needs to be counted.
    """
    if len(t) == 0 or any(snapshot.class_names[i] not in STACKED for i in t):
        return None
    counted = np.flatnonzero((score > 0) & (score >= fit * score.max()))
    top = snapshot.boxes[t[counted], 2] + 0.5 * snapshot.boxes[t[counted], 5]
    ranked = counted[np.argsort(-top, kind="stable")]
    if len(ranked) < rank:
        return f"only {len(ranked)} shelf/shelves to count among"
    return np.concatenate([ranked[rank - 1:rank], ranked[:rank - 1], ranked[rank:],
                           np.setdiff1d(np.arange(len(t)), ranked)])


def wall_scores(relation: Relation, g: SceneGeometry, t: np.ndarray, a: np.ndarray, snapshot: MemorySnapshot,
                scores: np.ndarray) -> np.ndarray:
    """(T, A) ``scores`` of "target ``relation`` anchor" with the columns of wall anchors replaced by scores of
    the gap between each target's box and the wall's face (near, next to: ``WALL_SCALE_M``; closest,
    farthest: relative to the other targets' gaps)."""
    walls = np.array([snapshot.class_names[j] == "wall" for j in a], dtype=bool)
    if relation not in _FROM_WALL or not walls.any():
        return scores
    w = a[walls]
    offset = g.centers[t, None, :2] - g.centers[None, w, :2]  # (T, W, 2)
    wall_axes = g.axes[w]  # (W, 2, 2): the wall's own x (along) and y (across)
    local = np.einsum("twd,wjd->twj", offset, wall_axes)
    # the target's half extent along the wall's axes, from its own axes and half extents
    reach = np.einsum("wjd,tkd->twjk", wall_axes, g.axes[t])
    reach = (np.abs(reach) * g.half_local[t][:, None, None, :]).sum(axis=-1)
    gap = np.hypot(*np.moveaxis(np.maximum(np.abs(local) - g.half_local[None, w] - reach, 0.0), -1, 0))
    if relation is Relation.CLOSEST:
        near = np.exp(-(gap - gap.min(axis=0)) / COMPARATIVE_SCALE_M)
    elif relation is Relation.FARTHEST:
        near = np.exp(-(gap.max(axis=0) - gap) / COMPARATIVE_SCALE_M)
    else:
        near = np.exp(-gap / WALL_SCALE_M)
    out = scores.copy()
    out[:, walls] = near
    return out
