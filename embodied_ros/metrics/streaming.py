"""Score an object map at every moment it was published, not only the final one.

A robot acts on the map while it is being built. A false object published for a while and retracted
before the end costs nothing in the final map's score (metrics/object_map.py), and a box that grows over
two neighbours and shrinks back is invisible there too. This module scores each published snapshot of a
run by the same rules (named objects; a prediction whose class is not one of the object's names, or whose
box fits it below the IoU threshold, is false) and follows objects by their stable ids across snapshots:

* time-averaged named precision: the mean, over the snapshots holding a named object, of their precision
  (snapshots are the messages of a run, evenly spaced in time at a fixed stride);
* the share of snapshots holding a false (or duplicate) named object;
* each false object: the snapshots it was false in, how long that lasted in seconds and in camera looks
  (looks as the memory counts evidence: a 0.5 m cell of camera positions and a visit to it of at most 10 s;
  the same for a 30 Hz and a 3 Hz stream of one walk), and its best IoU with an annotated object of its class
  (a badly boxed true object rather than a false one, when above zero);
* each true object (an id true in its last snapshot): when it was first published, and its box over time,
  IoU with its own final box and with the annotated box;
* for each annotated object found: when it was first matched (seconds and looks from the start), the
  publication delay compared between two runs of one walk.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..geometry.iou import box_iou_3d
from .object_map import GroundTruthObject, MatchMode, Outcome, score_object_map

__all__ = ["FalseObject", "Snapshot", "StreamScore", "TrueObject", "camera_looks", "score_stream"]

_BAD = (Outcome.FALSE, Outcome.DUPLICATE)


@dataclass(frozen=True)
class Snapshot:
    """One published map: what a message of ``/embodied/objects`` held (named objects only count).

    Attributes:
        stamp_ns: the message's stamp.
        ids: (P,) the objects' stable ids.
        class_names: P classes ("object": an unknown object, left out of the named score).
        boxes: (P, 9) world boxes, in the ground truth's frame.
        scores: (P,) the objects' scores (the matching's greedy order).
        settled: (P,) whether each box was said to be settled (None: the map does not say).
    """

    stamp_ns: int
    ids: np.ndarray
    class_names: tuple[str, ...]
    boxes: np.ndarray
    scores: np.ndarray
    settled: np.ndarray | None = None


@dataclass
class FalseObject:
    """A published object that was false (or a duplicate) in some snapshots."""

    id: int
    class_name: str
    snapshots: int = 0  # snapshots in which it was false
    seconds: float = 0.0  # their total duration (each lasts until the next snapshot)
    looks: int = 0  # camera looks in which it was false
    best_iou: float = 0.0  # its best IoU with an annotated object of its class (>0: badly boxed)
    best_gt: int = -1
    first_ns: int = 0
    settled_snapshots: int = 0  # of ``snapshots``, those in which the map said its box was settled


@dataclass
class TrueObject:
    """A published object true in its last snapshot: its box over time."""

    id: int
    class_name: str
    gt_id: int
    first_ns: int
    stamps: list[int] = field(default_factory=list)
    iou_final: list[float] = field(default_factory=list)  # IoU of each published box with its last one
    iou_truth: list[float] = field(default_factory=list)  # and with the annotated box


@dataclass
class StreamScore:
    """The streaming score of one run (see the module notes).

    Attributes:
        precision: (S,) named precision of each snapshot (NaN: no named object).
        has_false: (S,) whether each snapshot holds a false or duplicate named object.
        false_objects: by id, most snapshots first.
        true_objects: by id.
        first_match_ns: annotated id -> stamp of the first snapshot that matched it.
        first_match_looks: annotated id -> camera looks from the start to that snapshot.
        start_ns: stamp of the first snapshot.
        n_looks: camera looks over the whole run.
        end_ns: stamp of the last snapshot.
    """

    precision: np.ndarray
    has_false: np.ndarray
    false_objects: list[FalseObject]
    true_objects: list[TrueObject]
    first_match_ns: dict[int, int]
    first_match_looks: dict[int, int]
    start_ns: int
    n_looks: int
    end_ns: int = 0

    @property
    def n_snapshots(self) -> int:
        return len(self.precision)

    @property
    def mean_precision(self) -> float:
        """Time-averaged named precision over the snapshots holding a named object."""
        held = np.isfinite(self.precision)
        return float(self.precision[held].mean()) if held.any() else float("nan")

    @property
    def false_share(self) -> float:
        """Share of the snapshots holding a false or duplicate named object."""
        return float(self.has_false.mean()) if len(self.has_false) else 0.0

    @property
    def retracted(self) -> list[TrueObject]:
        """True objects taken off the map before the last snapshot (a retraction a robot would see)."""
        end = self.end_ns
        return [t for t in self.true_objects if t.stamps and t.stamps[-1] < end]

    @property
    def longest_false_share(self) -> float:
        """The largest share of the snapshots any one false object was false in."""
        if not self.false_objects or not self.n_snapshots:
            return 0.0
        return max(f.snapshots for f in self.false_objects) / self.n_snapshots


def camera_looks(stamps_ns: Sequence[int], viewpoints: Sequence[np.ndarray | None], place: float = 0.5,
                 revisit_s: float = 10.0) -> np.ndarray:
    """(S,) index of the camera look each snapshot belongs to, counted as the memory counts evidence
    (memory/existence.py): a new look starts where the camera enters a ``place``-metre cell it was not
    looking from, or looks again from one after ``revisit_s`` seconds. Without viewpoints, one look."""
    out = np.zeros(len(stamps_ns), dtype=np.int64)
    looks: dict[tuple, tuple[int, int]] = {}  # cell -> (stamp its latest look began, that look's index)
    n = 0
    for k, (stamp, eye) in enumerate(zip(stamps_ns, viewpoints, strict=True)):
        cell = (None,) if eye is None else tuple(np.floor(np.asarray(eye, float).reshape(3) / place).astype(int))
        look = looks.get(cell)
        if look is None or stamp - look[0] > revisit_s * 1e9:
            look = looks[cell] = (int(stamp), n)
            n += 1
        out[k] = look[1]
    return out


def score_stream(snapshots: Sequence[Snapshot], ground_truth: Sequence[GroundTruthObject],
                 viewpoints: Sequence[np.ndarray | None] | None = None, iou_threshold: float = 0.25,
                 unknown_class: str = "object") -> StreamScore:
    """Score every snapshot of a run (see the module notes).

    Args:
        snapshots: the published maps, in time order.
        ground_truth: the annotated objects.
        viewpoints: the camera position (3,) at each snapshot (None: looks are not counted).
        iou_threshold: minimum IoU of a fit.
        unknown_class: the class of unknown objects, left out.
    """
    n = len(snapshots)
    stamps = [int(s.stamp_ns) for s in snapshots]
    looks = camera_looks(stamps, viewpoints if viewpoints is not None else [None] * n)
    gaps = np.diff(stamps + [stamps[-1] + (int(np.median(np.diff(stamps))) if n > 1 else 0)]) if n else np.zeros(0)
    by_gt = {g.id: g for g in ground_truth}
    precision, has_false = np.full(n, np.nan), np.zeros(n, dtype=bool)
    false: dict[int, FalseObject] = {}
    false_looks: dict[int, set[int]] = {}
    last_seen: dict[int, tuple[int, np.ndarray, Outcome, int, str]] = {}  # id -> (snapshot, box, outcome, gt, class)
    history: dict[int, list[tuple[int, np.ndarray]]] = {}
    first_match: dict[int, int] = {}
    for k, snap in enumerate(snapshots):
        keep = [i for i, c in enumerate(snap.class_names) if c != unknown_class]
        if not keep:
            continue
        boxes = np.asarray(snap.boxes, dtype=np.float64).reshape(-1, 9)[keep]
        names = [snap.class_names[i] for i in keep]
        ids = [int(snap.ids[i]) for i in keep]
        score = score_object_map(boxes, names, np.asarray(snap.scores, dtype=np.float64)[keep], ground_truth,
                                 MatchMode.IOU, iou_threshold=iou_threshold)
        precision[k] = score.precision
        for obj_id, name, box, res, j in zip(ids, names, boxes, score.results, keep, strict=True):
            history.setdefault(obj_id, []).append((k, box))
            last_seen[obj_id] = (k, box, res.outcome, res.gt_id, name)
            if res.outcome is Outcome.TRUE:
                first_match.setdefault(res.gt_id, k)
            if res.outcome not in _BAD:
                continue
            has_false[k] = True
            f = false.setdefault(obj_id, FalseObject(obj_id, name, first_ns=stamps[k]))
            f.snapshots += 1
            f.seconds += float(gaps[k]) * 1e-9
            f.settled_snapshots += int(snap.settled is not None and bool(snap.settled[j]))
            false_looks.setdefault(obj_id, set()).add(int(looks[k]))
            same = [g for g in ground_truth if g.accepts(name)]
            if same:
                iou = box_iou_3d(box[None], np.array([g.box for g in same]))[0]
                if iou.max() > f.best_iou:
                    f.best_iou, f.best_gt = float(iou.max()), same[int(np.argmax(iou))].id
    for obj_id, f in false.items():
        f.looks = len(false_looks[obj_id])
    trues = []
    for obj_id, (_, final, outcome, gt_id, name) in sorted(last_seen.items()):
        if outcome is not Outcome.TRUE:
            continue
        seen = history[obj_id]
        t = TrueObject(obj_id, name, gt_id, stamps[seen[0][0]])
        boxes = np.array([b for _, b in seen])
        t.stamps = [stamps[k] for k, _ in seen]
        t.iou_final = box_iou_3d(boxes, final[None])[:, 0].tolist()
        t.iou_truth = box_iou_3d(boxes, by_gt[gt_id].box[None])[:, 0].tolist()
        trues.append(t)
    return StreamScore(precision, has_false, sorted(false.values(), key=lambda f: (-f.snapshots, f.id)), trues,
                       {g: stamps[k] for g, k in first_match.items()},
                       {g: int(looks[k]) for g, k in first_match.items()}, stamps[0] if n else 0,
                       int(looks.max()) + 1 if n else 0, stamps[-1] if n else 0)
