"""Words about the room's structure (memory/structure.py): walls as anchors, and counting stacked shelves.

The structure's parts are objects of the published map like any other (grounding/map_view.py), so "the cup on
the counter", "the cabinet under the sink" and "the red cabinet" need nothing of their own: support ("on") is
read from the boxes, and a cup on a worktop rests on the counter's box, not on the cabinet below it. Two things
do:

* "by the wall", "the chair against the wall": the engine refuses walls when the map holds none (it used to
  hold no structure at all); a map with walls answers them as anchors;
* "the second shelf": an ordinal with no order of its own ("from the left") counts stacked shelves from the
  top, as people count the shelves of a bookcase or a fridge ("the top shelf" is the first). Other things
  ("the second chair") still need an order, and the ordinal is ignored with a note, as before.
"""

from __future__ import annotations

import numpy as np

from ..memory.scene_object import MemorySnapshot

__all__ = ["STACKED", "STACK_KIND", "holds_structure", "stack_ranking"]

STACK_KIND = "stack"  # an ordinal with no order of its own ("the second shelf"): Attribute.kind
STACKED = frozenset({"shelf"})  # the classes whose parts stack above each other
_STRUCTURE_NOUNS = {"wall": "wall", "walls": "wall"}


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
