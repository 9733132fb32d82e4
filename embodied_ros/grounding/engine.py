"""The grounding engine: a phrase and a memory snapshot -> the object meant, with alternatives and why.

Score of a candidate object i (all candidates at once, numpy):
``label_confidence(class_i) * (f + (1 - f) * detection_score_i) * prod(attribute scores) *
prod over clauses of max over anchors j (relation_score(i, j) * anchor_weight_j)``, times
``head_score_i ** head_weight`` when a network's grounding head scored the objects for the phrase.
The engine reads only the immutable ``MemorySnapshot`` (never the live memory), so a grounding
call never holds the memory's lock; what it derives from a snapshot (box geometry, class codes)
is cached per snapshot, and parses and label embeddings per text.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from ..memory.scene_object import MemorySnapshot
from .phrases import (
    MAX_PHRASE_CHARS,
    Attribute,
    NounPhrase,
    ParsedPhrase,
    Relation,
    RelationClause,
    looks_english,
    parse_phrase,
)
from .relations import SceneGeometry, between_scores, pair_scores, satisfied_threshold
from .results import GroundedObject, GroundingResult
from .room_frame import ROOM_FACING_CLASSES, face_the_room
from .text_encoder import TextEncoder
from .vocabulary import KNOWN_LABELS, LabelMatcher

__all__ = ["Grounder", "GrounderConfig"]


@dataclass(frozen=True)
class GrounderConfig:
    """Settings of the grounding engine."""

    min_label_similarity: float = 0.66  # cosine similarity below which a word does not name a class
    max_alternatives: int = 5  # ranked alternatives returned besides the best object
    max_anchors: int = 48  # anchor candidates per anchor phrase (best label confidence x score first)
    max_between_anchors: int = 16  # per side of "between": its cost grows with targets x anchors^2
    min_score: float = 0.03  # a best total score below this is "no object fits the phrase"
    load_encoder: bool = True  # load the packaged text encoder when none is given
    min_observations: int = 2  # objects seen fewer times are unconfirmed (the memory does not publish them)
    # Prior factor of unconfirmed objects: a confirmed object of the class wins, but an object seen
    # once still answers when it is the only fit (0 ignores them). Sparse keyframes see many
    # objects once: 0.4 raised Acc@0.25 0.459 -> 0.481 on tuning seeds 10004..10011 (0.2..0.5 alike).
    unconfirmed_weight: float = 0.4
    head_weight: float = 1.0  # exponent of a grounding head's text-box score in the product (0 ignores it)
    # An object's detection score s enters its prior as score_floor + (1 - score_floor) * s: memories
    # hold weak false positives (score 0.1..0.3) beside true objects (0.5..0.9), and the score is
    # what tells them apart. Tuning seeds 10004..10011 / 10028..10043, Acc@0.25: 0.647 / 0.577 with
    # 0.25 and min_score 0.03, 0.572 / 0.530 with the earlier 0.75 and 0.05; 1 ignores the score.
    score_floor: float = 0.25
    # Classes whose front the relations read from the room (on its axes, facing its interior;
    # room_frame.py) instead of the memory's views; () keeps the memory's fronts.
    room_facing_classes: tuple[str, ...] = ROOM_FACING_CLASSES
    # An object also answers for the other classes in its evidence (a plant sometimes seen as a
    # book), at (their evidence / its class's evidence) ** evidence_power: a fallback when no
    # object of the class fits. Tuning Acc@0.25 0.647 / 0.577 with 5, 0.644 / 0.567 with inf (the
    # object's class alone), 0.628 / 0.580 with 1.
    evidence_power: float = 5.0


@dataclass(frozen=True)
class _SceneCache:
    """What one snapshot's grounding calls share."""

    geometry: SceneGeometry
    labels: tuple[str, ...]  # distinct class names in the objects' evidence
    evidence: np.ndarray  # (N, len(labels)) how far each object counts as each label: 1 for its class
    prior: np.ndarray  # (N,) score_floor + (1 - score_floor) * score; times unconfirmed_weight if seen too rarely


def _refuse(phrase: object) -> str | None:
    """Why a phrase cannot be grounded at all (None when it can be tried)."""
    if not isinstance(phrase, str):
        return f"the phrase must be text, got {type(phrase).__name__}"
    if not phrase.strip():
        return "empty phrase: say which object, e.g. 'the cup on the table'"
    if len(phrase) > MAX_PHRASE_CHARS:
        return f"phrase too long ({len(phrase)} characters; at most {MAX_PHRASE_CHARS})"
    letters = [c for c in phrase if c.isalpha()]
    if not letters:
        return "no words in the phrase: say which object, e.g. 'the cup on the table'"
    if sum(c.isascii() for c in letters) < 0.8 * len(letters) or not looks_english(phrase):
        return "only English phrases are understood"
    return None


def _attribute_scores(attr: Attribute, g: SceneGeometry, t: np.ndarray) -> np.ndarray | None:
    """(T,) score of an attribute over the candidates, or None when it is not observable (colour)."""
    if attr.kind == "volume":
        v = np.maximum(g.volume[t], 1e-9)
        ratio = v / v.max() if attr.sign > 0 else v.min() / v
    elif attr.kind == "height":
        h = np.maximum(g.top[t] - g.bottom[t], 1e-6)
        ratio = h / h.max() if attr.sign > 0 else h.min() / h
    elif attr.kind == "z":
        z = g.centers[t, 2]
        ratio = np.exp(-(z.max() - z) / 0.2) if attr.sign > 0 else np.exp(-(z - z.min()) / 0.2)
    else:
        return None
    return ratio ** (2.0 if abs(attr.sign) >= 2 else 0.5)  # superlatives pick one; adjectives only lean


class Grounder:
    """Answers referring phrases over scene memory snapshots. Thread-safe; never raises from ``ground``.

    Args:
        encoder: the text encoder; None loads the packaged one (when ``load_encoder``), and when
            that fails, labels are matched by the synonym table alone and every answer says so.
        min_label_similarity, max_alternatives, max_anchors, min_score, load_encoder, min_observations,
            max_between_anchors, head_weight, unconfirmed_weight, score_floor, room_facing_classes,
            evidence_power: see
            :class:`GrounderConfig`.
    """

    def __init__(self, encoder: TextEncoder | None = None, *, min_label_similarity: float = 0.66,
                 max_alternatives: int = 5, max_anchors: int = 48, min_score: float = 0.03,
                 load_encoder: bool = True, min_observations: int = 2, max_between_anchors: int = 16,
                 head_weight: float = 1.0, unconfirmed_weight: float = 0.4, score_floor: float = 0.25,
                 room_facing_classes: tuple[str, ...] = ROOM_FACING_CLASSES, evidence_power: float = 5.0) -> None:
        for name, value in (("unconfirmed_weight", unconfirmed_weight), ("score_floor", score_floor)):
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if not evidence_power > 0.0:
            raise ValueError(f"evidence_power must be positive (inf: an object's own class only), got {evidence_power}")
        self.config = GrounderConfig(
            min_label_similarity=min_label_similarity, max_alternatives=max_alternatives, max_anchors=max_anchors,
            max_between_anchors=max_between_anchors, min_score=min_score, load_encoder=load_encoder,
            min_observations=min_observations, head_weight=head_weight, unconfirmed_weight=unconfirmed_weight,
            score_floor=score_floor, room_facing_classes=tuple(room_facing_classes), evidence_power=evidence_power)
        self.encoder_error = ""
        if encoder is None and load_encoder:
            try:
                encoder = TextEncoder()
            except ModelError as exc:
                self.encoder_error = str(exc)
        elif encoder is None:
            self.encoder_error = "text encoder disabled"
        self.encoder = encoder
        self.matcher = LabelMatcher(encoder, min_label_similarity)
        self.matcher.prepare(KNOWN_LABELS)  # label embeddings computed once, here, not in the first call
        self._scenes: weakref.WeakKeyDictionary[MemorySnapshot, _SceneCache] = weakref.WeakKeyDictionary()
        self._parses: OrderedDict[str, ParsedPhrase] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: GrounderConfig, encoder: TextEncoder | None = None) -> Grounder:
        return cls(encoder, min_label_similarity=config.min_label_similarity,
                   max_alternatives=config.max_alternatives, max_anchors=config.max_anchors,
                   min_score=config.min_score, load_encoder=config.load_encoder,
                   min_observations=config.min_observations, max_between_anchors=config.max_between_anchors,
                   head_weight=config.head_weight, unconfirmed_weight=config.unconfirmed_weight,
                   score_floor=config.score_floor, room_facing_classes=config.room_facing_classes,
                   evidence_power=config.evidence_power)

    # -- caches -----------------------------------------------------------------------------------

    def _parse(self, phrase: str) -> ParsedPhrase:
        with self._lock:
            hit = self._parses.get(phrase)
            if hit is not None:
                self._parses.move_to_end(phrase)
                return hit
        parsed = parse_phrase(phrase)
        with self._lock:
            self._parses[phrase] = parsed
            if len(self._parses) > 1024:
                self._parses.popitem(last=False)
        return parsed

    def _scene(self, snapshot: MemorySnapshot) -> _SceneCache:
        with self._lock:
            hit = self._scenes.get(snapshot)
        if hit is None:
            labels, evidence = self._evidence(snapshot)
            boxes = snapshot.boxes
            if self.config.room_facing_classes:
                boxes = face_the_room(boxes, snapshot.class_names, snapshot.scores, self.config.room_facing_classes)
            hit = _SceneCache(SceneGeometry.from_boxes(boxes), labels, evidence, self._prior(snapshot))
            with self._lock:
                self._scenes[snapshot] = hit
        return hit

    def _evidence(self, snapshot: MemorySnapshot) -> tuple[tuple[str, ...], np.ndarray]:
        """The labels in the objects' class evidence, and (N, L) each object's weight as each label:
        1 for its class, (evidence / its class's evidence) ** evidence_power for the others."""
        own, codes = np.unique(np.array(snapshot.class_names, dtype=str), return_inverse=True)
        others = []  # (object, label, weight): only objects seen as more than one class
        for i, obj in enumerate(snapshot.objects):
            if len(obj.class_scores) > 1:
                evidence = dict(obj.class_scores)
                top = max(evidence.get(obj.class_name, 0.0), *evidence.values(), 1e-12)
                others += [(i, name, float(np.clip(ev / top, 0.0, 1.0)) ** self.config.evidence_power)
                           for name, ev in evidence.items() if name != obj.class_name]
        labels = tuple(sorted({str(x) for x in own} | {name for _, name, _ in others}))
        column = {label: j for j, label in enumerate(labels)}
        weights = np.zeros((len(snapshot), len(labels)))
        own_column = np.array([column[str(x)] for x in own], dtype=np.int64)
        weights[np.arange(len(snapshot)), own_column[codes.reshape(-1)]] = 1.0
        for i, name, w in others:
            weights[i, column[name]] = max(weights[i, column[name]], w)
        return labels, weights

    def _prior(self, snapshot: MemorySnapshot) -> np.ndarray:
        seen = np.fromiter((o.n_observations for o in snapshot.objects), dtype=np.int64, count=len(snapshot))
        weight = np.where(seen >= self.config.min_observations, 1.0, self.config.unconfirmed_weight)
        floor = self.config.score_floor
        return weight * (floor + (1.0 - floor) * np.clip(snapshot.scores, 0.0, 1.0))

    def _confidence(self, noun: NounPhrase, scene: _SceneCache) -> tuple[np.ndarray, dict[str, float]]:
        """(N,) label confidence of every object for a noun phrase, and the per-label confidences."""
        by_label = self.matcher.match(noun.text, scene.labels)
        table = np.array([by_label.get(label, 0.0) for label in scene.labels])
        return (scene.evidence * table[None, :]).max(axis=1, initial=0.0), by_label

    # -- grounding --------------------------------------------------------------------------------

    def ground(self, phrase: str, snapshot: MemorySnapshot, head_scores: np.ndarray | None = None) -> GroundingResult:
        """Find the object a phrase refers to.

        Args:
            phrase: any text, e.g. "the cup on the table next to the monitor".
            snapshot: the memory's immutable snapshot (``SceneMemory.snapshot()``).
            head_scores: optional (N,) scores in [0, 1] of the snapshot's objects for this phrase
                from a network's grounding head (text-box matching); each candidate's score is
                multiplied by ``head_score ** head_weight``. Ignored (with a note) when its shape
                does not match the snapshot.

        Returns:
            The result; ``success`` is False, with the reason in ``message``, for an empty, too
            long or non-English phrase, an unknown target, an empty memory, or when no object fits.
        """
        start = time.perf_counter()
        enc_before = self.encoder.seconds if self.encoder is not None else 0.0
        empty = ParsedPhrase(phrase.strip().lower() if isinstance(phrase, str) else "")
        try:
            reason = _refuse(phrase)
            if reason is not None:
                result = self._fail(phrase, empty, reason)
            else:
                result = self._ground(phrase, self._parse(phrase), snapshot, head_scores)
        except Exception as exc:  # a bug must not take the service down; say what happened
            result = self._fail(phrase, empty, f"internal error while grounding: {type(exc).__name__}: {exc}")
        enc_seconds = (self.encoder.seconds if self.encoder is not None else 0.0) - enc_before
        return GroundingResult(result.success, result.message, result.best, result.alternatives,
                               phrase if isinstance(phrase, str) else str(phrase), result.parsed,
                               result.label_confidence, self.encoder is not None,
                               time.perf_counter() - start, enc_seconds)

    def _fail(self, phrase: object, parsed: ParsedPhrase, message: str,
              label_confidence: dict[str, float] | None = None) -> GroundingResult:
        if self.encoder is None:
            message += f" (synonym table only: {self.encoder_error})"
        message = " ".join(message.split())  # one line, whatever an exception's text held
        return GroundingResult(False, message, None, (), str(phrase), parsed, label_confidence or {})

    def _ground(self, phrase: str, parsed: ParsedPhrase, snapshot: MemorySnapshot,
                head_scores: np.ndarray | None = None) -> GroundingResult:
        notes = list(parsed.notes)
        if parsed.target.empty:
            return self._fail(phrase, parsed, "no target object found in the phrase" + _suffix(notes))
        if len(snapshot) == 0:
            return self._fail(phrase, parsed, "the scene memory is empty: nothing seen yet")
        scene = self._scene(snapshot)
        g = scene.geometry
        conf, by_label = self._confidence(parsed.target, scene)
        t = np.flatnonzero((conf > 0) & (scene.prior > 0))
        if len(t) == 0 and (conf > 0).any():
            return self._fail(phrase, parsed, f"no {parsed.target.text} seen often enough yet (at least "
                              f"{self.config.min_observations} times)" + _suffix(notes), by_label)
        if len(t) == 0:
            return self._fail(phrase, parsed, f"unknown target '{parsed.target.text}': no object in the memory "
                              "is of a class with that name" + _suffix(notes), by_label)
        score = conf[t] * scene.prior[t]
        if head_scores is not None:
            head = np.asarray(head_scores, dtype=np.float64).reshape(-1)
            if head.shape == (len(snapshot),) and np.isfinite(head).all():
                score = score * np.clip(head[t], 0.0, 1.0) ** self.config.head_weight
            else:
                notes.append(f"grounding-head scores ignored (shape {head.shape}, {len(snapshot)} objects)")
        for attr in parsed.target.attributes:
            s = _attribute_scores(attr, g, t)
            if s is not None:
                score = score * s
        # Per evaluated clause: (clause, unweighted score per candidate, chosen anchor indices per candidate).
        used: list[tuple[RelationClause, np.ndarray, list[np.ndarray]]] = []
        rows = np.arange(len(t))
        for clause in parsed.clauses:
            anchor_sets = []
            limit = self.config.max_between_anchors if clause.relation is Relation.BETWEEN else self.config.max_anchors
            for anchor in clause.anchors:
                a_conf, _ = self._confidence(anchor, scene)
                a = np.flatnonzero((a_conf > 0) & (scene.prior > 0))
                if len(a) == 0:
                    break
                weight = a_conf[a] * scene.prior[a]
                keep = np.argsort(-weight, kind="stable")[:limit]
                anchor_sets.append((a[keep], weight[keep]))
            if len(anchor_sets) < len(clause.anchors):
                notes.append(f"unknown object in '{clause.text}'; that relation was ignored")
                continue
            if clause.relation is Relation.BETWEEN:
                (a, wa), (b, wb) = anchor_sets
                s3 = between_scores(g, t, a, b)  # (T, A, B)
                flat = (s3 * (wa[:, None] * wb[None, :])[None]).reshape(len(t), -1)
                ja, jb = np.unravel_index(flat.argmax(axis=1), (len(a), len(b)))
                rel = flat[rows, ja * len(b) + jb]
                used.append((clause, s3[rows, ja, jb], [a[ja], b[jb]]))
            else:
                a, wa = anchor_sets[0]
                s2 = pair_scores(clause.relation, g, t, a)  # (T, A)
                j = (s2 * wa[None, :]).argmax(axis=1)
                rel = s2[rows, j] * wa[j]
                used.append((clause, s2[rows, j], [a[j]]))
            score = score * rel
        order = np.argsort(-score, kind="stable")
        best = int(order[0])

        def explain(k: int) -> tuple[str, tuple[int, ...]]:
            parts, ids = [], []
            for clause, _, chosen in used:
                names = [_name(snapshot, c[k]) for c in chosen]
                word = "nearest to" if clause.relation is Relation.CLOSEST else clause.relation.value
                parts.append(f"between {names[0]} and {names[1]}" if len(names) == 2 else f"{word} {names[0]}")
                ids += [int(snapshot.ids[c[k]]) for c in chosen]
            adjectives = [a.word for a in parsed.target.attributes if a.kind != "colour"]
            head = " ".join([*adjectives, _name(snapshot, t[k])])
            return (f"{head}: {', '.join(parts)}" if parts else head), tuple(dict.fromkeys(ids))

        failed = [clause.text for clause, raw, _ in used if raw[best] < satisfied_threshold(clause.relation)]
        if score[best] < self.config.min_score or failed:
            what = "; ".join(failed) or "the phrase"
            return self._fail(phrase, parsed, f"no {parsed.target.text} fits '{what}' (closest: "
                              f"{explain(best)[0]}, score {score[best]:.2f})" + _suffix(notes), by_label)
        # Alternatives far below the answer (under 1% of its score) are noise, not alternatives.
        picked = [int(k) for k in order[: self.config.max_alternatives + 1] if score[k] >= 0.01 * score[best]]
        grounded = [GroundedObject(snapshot.objects[t[k]], float(score[k]), *explain(k)) for k in picked]
        message = grounded[0].explanation + _label_note(parsed.target.text, by_label) + _suffix(notes)
        if self.encoder is None:
            message += f" (synonym table only: {self.encoder_error})"
        return GroundingResult(True, message, grounded[0], tuple(grounded[1:]), phrase, parsed, by_label)


def _name(snapshot: MemorySnapshot, i: int) -> str:
    return f"{snapshot.class_names[i]} #{int(snapshot.ids[i])}"


def _suffix(notes: list[str]) -> str:
    return f" (note: {'; '.join(notes)})" if notes else ""


def _label_note(noun: str, by_label: dict[str, float]) -> str:
    """Say how a word was read when it was not an exact or synonym match."""
    soft = {k: v for k, v in by_label.items() if v < 1.0}
    if not soft or len(by_label) > 3:
        return ""
    return " (read '" + noun + "' as " + ", ".join(f"{k} {v:.2f}" for k, v in soft.items()) + ")"
