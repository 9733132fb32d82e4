"""Grounding accuracy: Acc@0.25/0.50 of the top-1 box (ScanRefer), split unique/multiple and by
relation type, and Dist@0.1/0.3/0.5 m (ARKitSceneRefer).

Definitions:

* Acc@k: fraction of queries whose top-1 predicted box has exact 9-DoF IoU >= k with the
  target's box (ScanRefer's ``iou >= 0.25`` / ``>= 0.5``); a query without an answer counts as a miss.
* Dist@d: fraction whose predicted box centre is strictly closer than d metres to the target's.
* unique / multiple (ScanRefer): the target is the only object of its class in the scene / not.
* per relation type: each query counts in every type of relation its phrase uses (EmbodiedScan's
  five types), and in "none" when it uses none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..geometry.boxes import BOX_DIM
from ..geometry.iou import pairwise_box_iou_3d
from ..grounding.results import GroundingResult

__all__ = ["GroundingQuery", "GroundingScores", "GroundingReport", "evaluate_grounding", "query_from_result"]

IOU_THRESHOLDS = (0.25, 0.5)
DIST_THRESHOLDS_M = (0.1, 0.3, 0.5)


@dataclass(frozen=True)
class GroundingQuery:
    """One evaluated phrase.

    Attributes:
        prediction: (9,) predicted world box of the top-1 answer, or None when there was no answer.
        target: (9,) ground-truth box of the object meant.
        unique: True when the target is the only object of its class in the scene (ScanRefer "unique").
        relation_types: names of the relation types the phrase uses (``RelationType.value``: "horizontal",
            "vertical", "support", "allocentric", "between").
    """

    prediction: np.ndarray | None
    target: np.ndarray
    unique: bool = False
    relation_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        target = np.asarray(self.target, dtype=np.float64).reshape(BOX_DIM)
        object.__setattr__(self, "target", target)
        if self.prediction is not None:
            object.__setattr__(self, "prediction", np.asarray(self.prediction, dtype=np.float64).reshape(BOX_DIM))


@dataclass(frozen=True)
class GroundingScores:
    """Accuracies over a set of queries (fractions in [0, 1]; NaN when ``n`` is 0).

    Attributes:
        n: number of queries.
        acc_25, acc_50: Acc@0.25 and Acc@0.50 (IoU of the top-1 box).
        dist_10, dist_30, dist_50: Dist@0.1, @0.3, @0.5 m (centre distance).
        answered: fraction of queries that returned a box.
    """

    n: int
    acc_25: float
    acc_50: float
    dist_10: float
    dist_30: float
    dist_50: float
    answered: float

    def as_row(self) -> str:
        """One line: 'n 12  Acc@0.25 58.3  Acc@0.50 41.7  Dist@0.1 ...' (percentages)."""
        return (f"n {self.n:4d}  Acc@0.25 {100 * self.acc_25:5.1f}  Acc@0.50 {100 * self.acc_50:5.1f}  "
                f"Dist@0.1 {100 * self.dist_10:5.1f}  Dist@0.3 {100 * self.dist_30:5.1f}  "
                f"Dist@0.5 {100 * self.dist_50:5.1f}  answered {100 * self.answered:5.1f}")


@dataclass(frozen=True)
class GroundingReport:
    """Scores overall, for unique and multiple targets, and per relation type."""

    overall: GroundingScores
    unique: GroundingScores
    multiple: GroundingScores
    by_relation: dict[str, GroundingScores] = field(default_factory=dict)

    def table(self) -> str:
        """A printable table, one row per split."""
        rows = [("overall", self.overall), ("unique", self.unique), ("multiple", self.multiple)]
        rows += [(f"rel:{k}", v) for k, v in sorted(self.by_relation.items())]
        return "\n".join(f"{name:16s} {s.as_row()}" for name, s in rows)


def _scores(iou: np.ndarray, dist: np.ndarray, answered: np.ndarray) -> GroundingScores:
    n = len(iou)
    if n == 0:
        nan = float("nan")
        return GroundingScores(0, nan, nan, nan, nan, nan, nan)
    acc = [float(np.mean(answered & (iou >= k))) for k in IOU_THRESHOLDS]
    near = [float(np.mean(answered & (dist < d))) for d in DIST_THRESHOLDS_M]
    return GroundingScores(n, acc[0], acc[1], near[0], near[1], near[2], float(np.mean(answered)))


def evaluate_grounding(queries: Sequence[GroundingQuery] | Iterable[GroundingQuery]) -> GroundingReport:
    """Acc@0.25/0.50 and Dist@0.1/0.3/0.5 of top-1 answers, overall and split.

    Args:
        queries: the evaluated phrases with their top-1 predictions and targets.

    Returns:
        The report; splits with no query have ``n == 0`` and NaN scores.
    """
    queries = list(queries)
    answered = np.array([q.prediction is not None for q in queries], dtype=bool)
    targets = np.stack([q.target for q in queries]) if queries else np.zeros((0, BOX_DIM))
    preds = np.stack([q.prediction if q.prediction is not None else q.target for q in queries]) \
        if queries else np.zeros((0, BOX_DIM))
    iou = np.where(answered, pairwise_box_iou_3d(preds, targets), 0.0) if queries else np.zeros(0)
    dist = np.where(answered, np.linalg.norm(preds[:, :3] - targets[:, :3], axis=1), np.inf)
    unique = np.array([q.unique for q in queries], dtype=bool)

    def subset(mask: np.ndarray) -> GroundingScores:
        return _scores(iou[mask], dist[mask], answered[mask])

    types = sorted({t for q in queries for t in q.relation_types} | ({"none"} if queries else set()))
    by_relation = {}
    for name in types:
        mask = np.array([(name in q.relation_types) if name != "none" else not q.relation_types for q in queries])
        if mask.any():
            by_relation[name] = subset(mask)
    return GroundingReport(subset(np.ones(len(queries), dtype=bool)), subset(unique), subset(~unique), by_relation)


def query_from_result(result: GroundingResult, target: np.ndarray, class_names: Sequence[str],
                      target_class: str) -> GroundingQuery:
    """A query from a grounding result: its top-1 box (None when unanswered), the relation types of
    its phrase, and "unique" when ``target_class`` occurs once in ``class_names`` (the scene's objects)."""
    types = tuple(dict.fromkeys(c.relation.type.value for c in result.parsed.clauses))
    prediction = result.best.object.box if result.success and result.best is not None else None
    return GroundingQuery(prediction, target, list(class_names).count(target_class) == 1, types)
