"""Picking among the candidates that fit every word: ordinals in the viewer's order ("the second chair from the
left"), and counts ("how many cups are on the table")."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..memory.scene_object import MemorySnapshot
from .attributes import viewer_distances
from .phrases import STACK_KIND, Attribute, ParsedPhrase
from .relations import SceneGeometry
from .results import GroundedObject, GroundingResult
from .structure_words import stack_ranking
from .viewpoint import Viewpoint, viewer_order

__all__ = ["COUNT_FIT", "ORDINAL_FIT", "count_answer", "ordinal_order"]

ORDINAL_FIT = 0.3  # an ordinal counts the candidates scoring at least this fraction of the best
COUNT_FIT = 0.25  # "how many": candidates scoring at least this fraction of the best (relations all satisfied)


def ordinal_order(attr: Attribute, t: np.ndarray, score: np.ndarray, g: SceneGeometry,
                  viewpoint: Viewpoint | None, snapshot: MemorySnapshot) -> np.ndarray | str | None:
    """Candidate positions in the viewer's order, the asked one first ("the second chair from the left": the
    second of the chairs that fit; ``score`` is 0 where a candidate does not; "the second shelf": from the
    top), or why there is none; None for an ordinal with no order of its own among things not stacked."""
    if attr.kind == STACK_KIND:
        return stack_ranking(attr.rank, t, score, snapshot, ORDINAL_FIT)
    assert viewpoint is not None  # viewer words without one are refused before
    key, pool = viewer_order(attr.kind, attr.sign, viewpoint, g.centers[t], viewer_distances(g, t, viewpoint))
    fits = np.flatnonzero(pool & (score >= ORDINAL_FIT * score.max()))
    ranked = fits[np.argsort(key[fits], kind="stable")]
    if len(ranked) < attr.rank:
        return f"only {len(ranked)} fitting object(s) to count '{attr.word}' among"
    return np.concatenate([ranked[attr.rank - 1:attr.rank], ranked[:attr.rank - 1], ranked[attr.rank:]])


def count_answer(phrase: str, parsed: ParsedPhrase, snapshot: MemorySnapshot, t: np.ndarray, score: np.ndarray,
                 explain: Callable[[int], tuple[str, tuple[int, ...]]], notes: list[str],
                 by_label: dict[str, float]) -> GroundingResult:
    """How many candidates fit: every constraint holds (``score`` is 0 where one does not) and a score near the
    best one's."""
    ok = (score > 0) & (score >= COUNT_FIT * score.max())
    counted = np.flatnonzero(ok)
    counted = counted[np.argsort(-score[counted], kind="stable")]
    grounded = [GroundedObject(snapshot.objects[t[k]], float(score[k]), *explain(k)) for k in counted]
    names = ", ".join(g.explanation.split(":")[0] for g in grounded[:10])
    message = f"{len(grounded)} x {parsed.target.text}: {names}" + (f" (note: {'; '.join(notes)})" if notes else "")
    return GroundingResult(True, message, grounded[0], tuple(grounded[1:]), phrase, parsed, by_label,
                           count=len(grounded))
