"""Score a published object map against hand-made 3D ground truth of a real room.

The rules are those of ``../shared/data/redkitchen/ground_truth.json`` (its README section), so
figures are comparable with any scorer that follows them:

* a prediction may match a ground-truth object only if the object's ``names`` contain the
  prediction's class (case and spaces ignored: "dining table" = "diningtable");
* predictions are taken greedily, best score first; each matches the not-yet-matched object
  that fits it best: exact 3D IoU >= ``iou_threshold`` of the oriented boxes (tilted 9-DoF
  predictions included), or, in the distance mode, box centres within ``max_centre_distance``;
* a prediction matching an ``optional`` object is ignored (neither true nor false), and optional
  objects are not in recall;
* a prediction that fits an object already matched is a duplicate;
* any other prediction is false; a false prediction that fits an object of another class
  (by the same criterion, names ignored) is also counted as mislabelled.

Precision counts duplicates and false predictions against the map: tp / (tp + dup + false).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from ..detections import class_key
from ..errors import InputError
from ..geometry.boxes import as_boxes
from ..geometry.iou import box_intersection_volume, box_iou_3d

__all__ = ["AgnosticScore", "GroundTruthObject", "MapScore", "MatchMode", "Outcome", "PredictionResult",
           "load_ground_truth", "reached_by_detections", "score_class_agnostic", "score_object_map"]


class MatchMode(Enum):
    """How a prediction fits a ground-truth object."""

    IOU = "iou"  # exact 3D IoU of the oriented boxes >= the threshold
    CENTRE = "centre"  # box centres within the distance


class Outcome(Enum):
    """What became of one prediction."""

    TRUE = "true"  # matched a required object first
    DUPLICATE = "duplicate"  # fits a required object already matched by a better prediction
    IGNORED = "ignored"  # matched an optional object
    FALSE = "false"  # fits no object whose names hold its class


@dataclass(frozen=True)
class GroundTruthObject:
    """One annotated object.

    Attributes:
        id: the annotation's id.
        class_name: its main class.
        names: every name a person or detector may use for it (a prediction's class must be one).
        box: (9,) amodal world box, project convention (yaw-only: beta = gamma = 0).
        easy: large and well seen.
        optional: structure or ambiguous: neither rewarded nor penalised, not in recall.
        description: one line saying which object it is.
    """

    id: int
    class_name: str
    names: tuple[str, ...]
    box: np.ndarray
    easy: bool
    optional: bool
    description: str = ""

    def accepts(self, class_name: str) -> bool:
        """Whether a prediction of ``class_name`` may match this object."""
        key = class_key(class_name)
        return any(class_key(n) == key for n in self.names)


def load_ground_truth(path: str | Path) -> tuple[GroundTruthObject, ...]:
    """Read a ground_truth.json (boxes ``[x, y, z, dx, dy, dz, yaw]`` or 9-DoF).

    Raises:
        InputError: the file is missing, not JSON or malformed.
    """
    try:
        data = json.loads(Path(path).read_text())
        out = []
        for o in data["objects"]:
            box = np.zeros(9)
            values = [float(v) for v in o["box"]]
            if len(values) not in (7, 9):
                raise ValueError(f"object {o.get('id')}: box has {len(values)} values, expected 7 or 9")
            box[: len(values)] = values
            out.append(GroundTruthObject(int(o["id"]), str(o["class"]), tuple(str(n) for n in o["names"]), box,
                                         o.get("difficulty") == "easy", bool(o.get("optional", False)),
                                         str(o.get("description", ""))))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{path}: not a ground-truth file: {type(err).__name__}: {err}") from None
    return tuple(out)


@dataclass(frozen=True)
class PredictionResult:
    """One prediction's fate: its outcome, the object it fitted (-1: none) and the fit value
    (IoU, or centre distance in metres)."""

    outcome: Outcome
    gt_id: int
    fit: float
    mislabelled: bool = False


@dataclass(frozen=True)
class MapScore:
    """The score of one object map.

    Attributes:
        mode: how predictions were fitted.
        results: per prediction (input order), what became of it.
        matched: ids of the required objects matched.
        n_required, n_easy: required objects, and the easy ones among them.
        easy_matched: ids of the easy objects matched.
    """

    mode: MatchMode
    results: tuple[PredictionResult, ...]
    matched: tuple[int, ...]
    n_required: int
    n_easy: int
    easy_matched: tuple[int, ...]

    def count(self, outcome: Outcome) -> int:
        return sum(r.outcome is outcome for r in self.results)

    @property
    def n_true(self) -> int:
        return self.count(Outcome.TRUE)

    @property
    def n_duplicates(self) -> int:
        return self.count(Outcome.DUPLICATE)

    @property
    def n_false(self) -> int:
        return self.count(Outcome.FALSE)

    @property
    def n_ignored(self) -> int:
        return self.count(Outcome.IGNORED)

    @property
    def n_mislabelled(self) -> int:
        return sum(r.mislabelled for r in self.results)

    @property
    def precision(self) -> float:
        counted = self.n_true + self.n_duplicates + self.n_false
        return self.n_true / counted if counted else float("nan")

    @property
    def recall(self) -> float:
        return len(self.matched) / self.n_required if self.n_required else float("nan")

    @property
    def recall_easy(self) -> float:
        return len(self.easy_matched) / self.n_easy if self.n_easy else float("nan")

    def summary(self) -> str:
        """One line: precision, recall (easy), duplicates, false (mislabelled), ignored."""
        return (f"precision {self.precision:.2f}, recall {self.recall:.2f} ({len(self.matched)}/{self.n_required}; "
                f"easy {len(self.easy_matched)}/{self.n_easy}), duplicates {self.n_duplicates}, "
                f"false {self.n_false} ({self.n_mislabelled} mislabelled), ignored {self.n_ignored}")


def _fits(pred_boxes: np.ndarray, gt_boxes: np.ndarray, mode: MatchMode) -> np.ndarray:
    """(P, G) fit values: IoU (higher is better) or centre distance (lower is better)."""
    if mode is MatchMode.IOU:
        return box_iou_3d(pred_boxes, gt_boxes)
    return np.linalg.norm(pred_boxes[:, None, :3] - gt_boxes[None, :, :3], axis=2)


def score_object_map(
    boxes: np.ndarray,
    class_names: Sequence[str],
    scores: np.ndarray,
    ground_truth: Sequence[GroundTruthObject],
    mode: MatchMode = MatchMode.IOU,
    iou_threshold: float = 0.25,
    max_centre_distance: float = 0.3,
) -> MapScore:
    """Match predictions to ground truth (module docstring) and count the outcomes.

    Args:
        boxes: (P, 9) predicted world boxes, in the ground truth's frame.
        class_names: P predicted classes.
        scores: (P,) prediction scores (the greedy order).
        ground_truth: the annotated objects.
        mode: IoU or centre distance.
        iou_threshold: minimum IoU of a fit (IoU mode).
        max_centre_distance: maximum centre distance of a fit, metres (centre mode).
    """
    boxes = as_boxes(boxes)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(class_names) != len(boxes) or len(scores) != len(boxes):
        raise ValueError(f"boxes ({len(boxes)}), classes ({len(class_names)}) and scores ({len(scores)}) differ")
    gt_boxes = np.array([g.box for g in ground_truth], dtype=np.float64).reshape(-1, 9)
    fit = _fits(boxes, gt_boxes, mode) if len(boxes) and len(gt_boxes) else np.zeros((len(boxes), len(gt_boxes)))
    if mode is MatchMode.IOU:
        good, better = fit >= iou_threshold, -fit  # sort key: best fit first
    else:
        good, better = fit <= max_centre_distance, fit
    results: list[PredictionResult | None] = [None] * len(boxes)
    taken: set[int] = set()
    for p in np.argsort(-scores, kind="stable"):
        named = np.array([g.accepts(class_names[p]) for g in ground_truth], dtype=bool)
        cands = np.flatnonzero(good[p] & named)
        cands = cands[np.argsort(better[p, cands], kind="stable")]
        free = [int(c) for c in cands if int(c) not in taken]
        if free:
            g = free[0]
            taken.add(g)
            outcome = Outcome.IGNORED if ground_truth[g].optional else Outcome.TRUE
            results[p] = PredictionResult(outcome, ground_truth[g].id, float(fit[p, g]))
        elif len(cands):
            g = int(cands[0])
            outcome = Outcome.IGNORED if ground_truth[g].optional else Outcome.DUPLICATE
            results[p] = PredictionResult(outcome, ground_truth[g].id, float(fit[p, g]))
        else:
            other = np.flatnonzero(good[p])
            other = other[np.argsort(better[p, other], kind="stable")]
            g = int(other[0]) if len(other) else -1
            results[p] = PredictionResult(Outcome.FALSE, ground_truth[g].id if g >= 0 else -1,
                                          float(fit[p, g]) if g >= 0 else float("nan"), mislabelled=g >= 0)
    required = [g for g in ground_truth if not g.optional]
    matched_gt = [ground_truth[g] for g in taken if not ground_truth[g].optional]
    matched = tuple(sorted(g.id for g in matched_gt))
    easy_matched = tuple(sorted(g.id for g in matched_gt if g.easy))
    final = tuple(r for r in results if r is not None)
    return MapScore(mode, final, matched, len(required), sum(g.easy for g in required), easy_matched)


def reached_by_detections(
    boxes: np.ndarray,
    class_names: Sequence[str],
    ground_truth: Sequence[GroundTruthObject],
    mode: MatchMode = MatchMode.IOU,
    iou_threshold: float = 0.25,
    max_centre_distance: float = 0.3,
) -> tuple[int, ...]:
    """Ids of the required objects that at least one single detection fits, by the matching rules.

    A ceiling of what the detector gives the map: an object no lifted detection of any frame ever
    fits (with one of its names) is missed by the detector, not by the memory. Not a strict bound:
    fusing views can fit an object that no single view fits (a table seen in halves).

    Args:
        boxes: (N, 9) lifted detections of all frames, world frame.
        class_names: N detection classes.
        ground_truth, mode, iou_threshold, max_centre_distance: as for ``score_object_map``.
    """
    boxes = as_boxes(boxes)
    if len(class_names) != len(boxes):
        raise ValueError(f"boxes ({len(boxes)}) and classes ({len(class_names)}) differ")
    required = [g for g in ground_truth if not g.optional]
    if not len(boxes) or not required:
        return ()
    fit = _fits(boxes, np.array([g.box for g in required], dtype=np.float64).reshape(-1, 9), mode)
    good = fit >= iou_threshold if mode is MatchMode.IOU else fit <= max_centre_distance
    names = np.asarray(class_names, dtype=object)
    reached = [g.id for j, g in enumerate(required)
               if any(g.accepts(n) for n in set(names[good[:, j]]))]
    return tuple(sorted(reached))


@dataclass(frozen=True)
class AgnosticScore:
    """How much of the room a map found as something, whatever it called it.

    Attributes:
        found: ids of the required objects some prediction fits (any class, unknown objects too).
        n_required: required objects.
        outcomes: per prediction (input order): "found" (fits a required object first), "ignored"
            (fits an optional one), "duplicate" (fits an object already found), "part" (fits none but lies
            mostly inside one: a piece of it), "spurious" (none of these: a thing the room's annotation
            does not hold).
    """

    found: tuple[int, ...]
    n_required: int
    outcomes: tuple[str, ...]

    @property
    def recall(self) -> float:
        return len(self.found) / self.n_required if self.n_required else float("nan")

    def count(self, outcome: str, classes: Sequence[str] | None = None, only: str | None = None) -> int:
        """Predictions with this outcome (of class ``only`` among ``classes`` when given)."""
        return sum(o == outcome and (only is None or classes is None or classes[i] == only)
                   for i, o in enumerate(self.outcomes))


def score_class_agnostic(
    boxes: np.ndarray,
    scores: np.ndarray,
    ground_truth: Sequence[GroundTruthObject],
    iou_threshold: float = 0.25,
    inside: float = 0.5,
) -> AgnosticScore:
    """Match predictions to the annotated objects by IoU alone (names ignored), greedy by score.

    Args:
        boxes: (P, 9) predicted world boxes.
        scores: (P,) the greedy order.
        ground_truth: the annotated objects.
        iou_threshold: minimum IoU of a fit.
        inside: a prediction that fits nothing is a part of an object when at least this fraction of its
            box's volume lies in that object's box.
    """
    boxes = as_boxes(boxes)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    gt_boxes = np.array([g.box for g in ground_truth], dtype=np.float64).reshape(-1, 9)
    if not len(boxes) or not len(gt_boxes):
        required = sum(not g.optional for g in ground_truth)
        return AgnosticScore((), required, ("spurious",) * len(boxes))
    iou = box_iou_3d(boxes, gt_boxes)
    own = np.prod(boxes[:, 3:6], axis=1)
    share = box_intersection_volume(boxes, gt_boxes) / np.maximum(own, 1e-12)[:, None]
    outcomes = ["spurious"] * len(boxes)
    taken: set[int] = set()
    for p in np.argsort(-scores, kind="stable"):
        cands = np.flatnonzero(iou[p] >= iou_threshold)
        cands = cands[np.argsort(-iou[p, cands], kind="stable")]
        free = [int(c) for c in cands if int(c) not in taken]
        if free:
            taken.add(free[0])
            outcomes[p] = "ignored" if ground_truth[free[0]].optional else "found"
        elif len(cands):
            outcomes[p] = "ignored" if ground_truth[int(cands[0])].optional else "duplicate"
        elif np.any(share[p] >= inside):
            outcomes[p] = "part"
    found = tuple(sorted(ground_truth[g].id for g in taken if not ground_truth[g].optional))
    return AgnosticScore(found, sum(not g.optional for g in ground_truth), tuple(outcomes))
