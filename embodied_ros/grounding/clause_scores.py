"""One relation clause scored over the candidates and its anchors: the anchor(s) each candidate is related
to, with the numbers a phrase gives ("between the two plates", "with two cups on it") and relations said the
other way round ("the table with a bin under it": the bin is under the table).

A count of anchors is checked, not assumed: the map must hold that many anchors that fit their own words,
and the relation must hold with that many distinct anchors (at least that many: in a half-mapped room more
may be missing than present). "Between the two plates" (or "between the plates") is between two distinct
anchors of the one set.
"""

from __future__ import annotations

import numpy as np

from ..memory.scene_object import MemorySnapshot
from .phrases import Relation, RelationClause
from .relations import SceneGeometry, Supports, between_scores, pair_scores, satisfied_threshold
from .structure_words import wall_scores

__all__ = ["anchor_count", "clause_threshold", "score_clause"]

_SUPPORT = (Relation.ON, Relation.UNDER, Relation.SUPPORTING, Relation.HANGING)


def anchor_count(clause: RelationClause) -> int:
    """How many distinct anchors the clause needs: 2 for "between A and B" and "between the two plates", the
    number said ("with three cups on it"), else 1."""
    if clause.relation is Relation.BETWEEN:
        return 2
    return max(1, max((a.count for a in clause.anchors), default=1))


def clause_threshold(clause: RelationClause) -> float:
    """The score below which a clause fails: a negated one fails when the relation holds."""
    return 1.0 - satisfied_threshold(clause.relation) if clause.negated else satisfied_threshold(clause.relation)


def score_clause(clause: RelationClause, g: SceneGeometry, t: np.ndarray,
                 anchor_sets: list[tuple[np.ndarray, np.ndarray]],
                 supports: Supports | None, snapshot: MemorySnapshot) -> tuple[np.ndarray, list[np.ndarray], str]:
    """(T,) the clause's score per candidate (negation applied), the chosen anchor indices per candidate (one
    array per anchor slot), and why it cannot be checked ("" when it can).

    Args:
        clause: the relation, its anchors' words and numbers.
        g: the scene's geometry; t: (T,) candidate indices.
        anchor_sets: per anchor phrase, (indices, weights) of the objects that fit it, best first.
        supports: what each object rests on (for support relations); None: not checked.
        snapshot: the map (a wall anchor is scored by the gap to its face, ``structure_words.wall_scores``).
    """
    rows = np.arange(len(t))
    need = anchor_count(clause)
    held = len(anchor_sets[0][0])
    if len(anchor_sets) == 1 and held < need:
        noun = clause.anchors[0].text
        return np.zeros(len(t)), [], f"'{clause.text}' needs {need} x {noun}, and the map holds {held}"
    if clause.relation is Relation.BETWEEN:
        (a, wa), (b, wb) = anchor_sets if len(anchor_sets) == 2 else anchor_sets * 2  # one set: two of it
        s3 = between_scores(g, t, a, b)  # (T, A, B); 0 where a and b are one object
        w3 = wa[:, None] * wb[None, :]
        flat = (s3 * (w3 / w3.max())[None]).reshape(len(t), -1)
        ja, jb = np.unravel_index(flat.argmax(axis=1), (len(a), len(b)))
        raw, chosen = s3[rows, ja, jb], [a[ja], b[jb]]
    else:
        a, wa = anchor_sets[0]
        rest = supports if clause.relation in _SUPPORT else None
        if clause.inverse:  # "with a bin under it": the anchor stands in the relation to the candidate
            s2 = pair_scores(clause.relation, g, a, t, rest).T
        else:
            s2 = pair_scores(clause.relation, g, t, a, rest)  # (T, A)
            s2 = wall_scores(clause.relation, g, t, a, snapshot, s2)  # from a wall: the gap to its face
        weighted = s2 * (wa / wa.max())[None, :]
        if need == 1:
            j = weighted.argmax(axis=1)
            raw, chosen = s2[rows, j], [a[j]]
        else:  # the need-th best anchor decides: the relation must hold with that many
            js = np.argsort(-weighted, axis=1, kind="stable")[:, :need]  # (T, need)
            raw = s2[rows, js[:, -1]]
            chosen = [a[js[:, k]] for k in range(need)]
    if clause.negated:  # "not on the table": none of the tables holds it
        raw = 1.0 - raw
    return raw, chosen, ""
