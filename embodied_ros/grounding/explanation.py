"""Why a candidate answers a phrase, in one line: "white cup #1 (white): on diningtable #0, nearest to
tvmonitor #4", with the ids of the anchors it names; and the candidates as ``GroundedObject``s."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from ..memory.scene_object import MemorySnapshot
from .clause_scores import clause_threshold
from .phrases import NounPhrase, Relation, RelationClause
from .results import GroundedObject
from .wording import object_name

__all__ = ["Explainer", "UsedClause"]

# One evaluated clause: (the clause, its unweighted score per candidate, the chosen anchor indices per candidate).
UsedClause = tuple[RelationClause, np.ndarray, list[np.ndarray]]


class Explainer:
    """Explains the candidates ``t`` (object indices of ``snapshot``) of the phrase's ``target`` by the clauses
    that were evaluated; ``explainer(k)`` -> (the line for candidate k, the anchor ids it names)."""

    def __init__(self, snapshot: MemorySnapshot, target: NounPhrase, t: np.ndarray, used: list[UsedClause]) -> None:
        self.snapshot, self.target, self.t, self.used = snapshot, target, t, used

    def __call__(self, k: int) -> tuple[str, tuple[int, ...]]:
        snapshot = self.snapshot
        parts, ids = [], []
        for clause, raw, chosen in self.used:
            names = [object_name(snapshot, c[k]) for c in chosen]
            word = "nearest to" if clause.relation is Relation.CLOSEST else clause.relation.value
            weak = "" if raw[k] >= clause_threshold(clause) else f" (does not hold: {raw[k]:.2f})"
            if not chosen:  # the floor
                parts.append(f"{'not ' if clause.negated else ''}{word} the floor{weak}")
                continue
            if clause.negated:
                parts.append(f"not {word} any {' or '.join(dict.fromkeys(a.text for a in clause.anchors))}{weak}")
                continue
            if clause.relation is Relation.BETWEEN:
                parts.append(f"between {names[0]} and {names[1]}{weak}")
            else:
                parts.append(f"with {' and '.join(names)} {word} it{weak}" if clause.inverse
                             else f"{word} {' and '.join(names)}{weak}")
            ids += [int(snapshot.ids[c[k]]) for c in chosen]
        return self._head(k) + (f": {', '.join(parts)}" if parts else ""), tuple(dict.fromkeys(ids))

    def _head(self, k: int) -> str:
        """The candidate named with the target's adjectives, and the colour seen when the phrase names one."""
        attributes = self.target.attributes
        adjectives = [a.word for a in attributes if a.kind not in ("colour", "material")]
        head = " ".join([*adjectives, object_name(self.snapshot, self.t[k])])
        if any(a.kind in ("colour", "material") for a in attributes):  # the colour seen
            head += f" ({self.snapshot.objects[self.t[k]].colour_name or 'colour not seen'})"
        return head

    def grounded(self, ks: Iterable[int], score: np.ndarray) -> tuple[GroundedObject, ...]:
        """The candidates ``ks`` (positions in ``t``) as answers with their scores and explanations."""
        return tuple(GroundedObject(self.snapshot.objects[self.t[k]], float(score[k]), *self(k)) for k in ks)
