"""What every grounding call on one memory snapshot shares, made once per snapshot: the boxes' geometry, each
object's class evidence and prior, which objects are confident enough to answer or anchor, and (on first need)
what each object rests on."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..memory.scene_object import MemorySnapshot
from .grounder_config import GrounderConfig
from .relations import SceneGeometry, Supports, supports
from .room_frame import face_the_room

__all__ = ["MIN_OTHER_EVIDENCE", "SceneCache", "scene_cache"]

# An object answers for another class than its own (in its class evidence: a plant sometimes seen as a
# book) only with at least this much evidence of it (the sum of those detections' scores): one weak
# sighting as a "bed" (0.21 in redkitchen) does not make a book the answer to "the bed".
MIN_OTHER_EVIDENCE = 0.5


@dataclass(frozen=True)
class SceneCache:
    """What one snapshot's grounding calls share."""

    geometry: SceneGeometry
    labels: tuple[str, ...]  # distinct class names in the objects' evidence
    evidence: np.ndarray  # (N, len(labels)) how far each object counts as each label: 1 for its class
    prior: np.ndarray  # (N,) (score_floor + (1 - score_floor) * score) * confidence, * unconfirmed_weight if rare
    confident: np.ndarray  # (N,) bool: confidence >= min_confidence
    coloured: bool  # whether any object has an observed colour
    members: np.ndarray  # (K,) indices of the confident objects: what a target may rest on
    lazy: dict = field(default_factory=dict)  # what only some calls need, made on first need ("supports")

    def supports(self) -> Supports:
        """What each object rests on (for support relations), made once per snapshot."""
        if "supports" not in self.lazy:
            self.lazy["supports"] = supports(self.geometry, self.members)
        return self.lazy["supports"]


def scene_cache(snapshot: MemorySnapshot, config: GrounderConfig) -> SceneCache:
    """The shared part of grounding on ``snapshot`` with the grounder's settings."""
    labels, evidence = class_evidence(snapshot, config.evidence_power)
    boxes = snapshot.boxes
    if config.room_facing_classes:
        boxes = face_the_room(boxes, snapshot.class_names, snapshot.scores, config.room_facing_classes)
    confidence = np.fromiter((o.confidence for o in snapshot.objects), dtype=np.float64, count=len(snapshot))
    coloured = any(o.colour_name is not None for o in snapshot.objects)
    geometry = SceneGeometry.from_boxes(boxes, snapshot.class_names)
    confident = confidence >= config.min_confidence
    return SceneCache(geometry, labels, evidence, prior(snapshot, confidence, config), confident, coloured,
                      np.flatnonzero(confident))


def class_evidence(snapshot: MemorySnapshot, evidence_power: float) -> tuple[tuple[str, ...], np.ndarray]:
    """The labels in the objects' class evidence, and (N, L) each object's weight as each label:
    1 for its class, (evidence / its class's evidence) ** evidence_power for the others."""
    own, codes = np.unique(np.array(snapshot.class_names, dtype=str), return_inverse=True)
    others = []  # (object, label, weight): only objects seen as more than one class
    for i, obj in enumerate(snapshot.objects):
        if len(obj.class_scores) > 1:
            evidence = dict(obj.class_scores)
            top = max(evidence.get(obj.class_name, 0.0), *evidence.values(), 1e-12)
            others += [(i, name, float(np.clip(ev / top, 0.0, 1.0)) ** evidence_power)
                       for name, ev in evidence.items() if name != obj.class_name and ev >= MIN_OTHER_EVIDENCE]
    labels = tuple(sorted({str(x) for x in own} | {name for _, name, _ in others}))
    column = {label: j for j, label in enumerate(labels)}
    weights = np.zeros((len(snapshot), len(labels)))
    own_column = np.array([column[str(x)] for x in own], dtype=np.int64)
    weights[np.arange(len(snapshot)), own_column[codes.reshape(-1)]] = 1.0
    for i, name, w in others:
        weights[i, column[name]] = max(weights[i, column[name]], w)
    return labels, weights


def prior(snapshot: MemorySnapshot, confidence: np.ndarray, config: GrounderConfig) -> np.ndarray:
    """(N,) each object's prior: its score (above a floor) times its existence ``confidence``."""
    seen = np.fromiter((o.n_observations for o in snapshot.objects), dtype=np.int64, count=len(snapshot))
    weight = np.where(seen >= config.min_observations, 1.0, config.unconfirmed_weight)
    floor = config.score_floor
    return weight * (floor + (1.0 - floor) * np.clip(snapshot.scores, 0.0, 1.0)) * np.clip(confidence, 0.0, 1.0)
