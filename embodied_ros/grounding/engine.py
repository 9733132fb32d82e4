"""The grounding engine: a phrase and a memory snapshot -> the object meant, with alternatives and why.

Score of a candidate object i (all candidates at once, numpy):
``label_confidence(class_i) * (f + (1 - f) * detection_score_i) * confidence_i * prod(attribute
scores) * prod over clauses of max over anchors j (relation_score(i, j) * anchor_weight_j)``, times
``head_score_i ** head_weight`` when a network's grounding head scored the objects for the phrase.
A negated clause ("not on the table") contributes ``1 - max_j relation_score(i, j) * anchor_weight_j``
(anchor weights relative to the best anchor). Attributes are sizes, heights, observed colours and
viewer-centred words (``viewpoint.py``: left/right, near/far, in front/behind a camera pose given
with the call); an ordinal ("the second chair from the left") picks the k-th of the fitting
candidates in the viewer's order instead of the best.

Honest answers: an answer, and every anchor, must be an object the memory is confident exists
(``SceneObject.confidence >= min_confidence``); the answer says how confident. A target that names
no object in the memory is told apart from a class the detector cannot see at all when the
memory's label vocabulary is given. A pick by rank is "not sure" when the memory holds unpublished
evidence of another instance ranking before it (``completeness.py``), and an unnamed answer when another
unnamed object fits the phrase nearly as well (``unnamed_shapes.py``).
The engine reads only the immutable ``MemorySnapshot`` (never the live memory), so a grounding
call never holds the memory's lock; what it derives from a snapshot (box geometry, class codes)
is cached per snapshot, and parses and label embeddings per text.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..classes import RelationType
from ..errors import ModelError
from ..memory.change_events import ChangeEvent
from ..memory.scene_object import MemorySnapshot, SceneObject
from .attributes import attribute_scores
from .change_questions import answer_change_question, parse_change_question
from .clause_scores import score_clause
from .completeness import rank_doubt
from .dependency import load_pipeline, parse_with_spacy, pipeline_error
from .grounder_config import GrounderConfig
from .map_view import unpublished
from .phrases import (
    NounPhrase,
    ParsedPhrase,
    Relation,
    RelationClause,
    refusal,
)
from .ranking import count_answer, ordinal_order
from .relations import (
    SceneGeometry,
    Supports,
    satisfied_threshold,
    supports,
)
from .results import GroundedObject, GroundingResult
from .room_frame import face_the_room
from .rule_parser import parse_phrase
from .structure_words import holds_structure
from .text_encoder import TextEncoder
from .unnamed_shapes import UNNAMED_CLASS, unnamed_candidates, unnamed_doubt
from .viewpoint import Viewpoint
from .vocabulary import KNOWN_LABELS, LabelMatcher
from .wording import label_note as _label_note
from .wording import no_target
from .wording import note_suffix as _suffix
from .wording import object_name as _name

__all__ = ["Grounder", "GrounderConfig"]


@dataclass(frozen=True)
class _SceneCache:
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


@dataclass(frozen=True)
class _Context:
    """What one grounding call evaluates against."""

    snapshot: MemorySnapshot
    scene: _SceneCache
    viewpoint: Viewpoint | None
    vocabulary: tuple[str, ...]
    notes: list[str]
    hidden: MemorySnapshot | None = None  # what the memory holds beyond ``snapshot`` (map_view.unpublished)


class Grounder:
    """Answers referring phrases over scene memory snapshots. Thread-safe; never raises from ``ground``.

    Args:
        encoder: the text encoder; None loads the packaged one (when ``load_encoder``), and when
            that fails, labels are matched by the synonym table alone and every answer says so.
        config: the settings (default: ``GrounderConfig()``, the one place their defaults live).
        **overrides: fields of :class:`GrounderConfig` to change, by name (``Grounder(load_encoder=False)``);
            an unknown name is a TypeError.

    Raises:
        ValueError: a setting out of its range.
    """

    def __init__(self, encoder: TextEncoder | None = None, config: GrounderConfig | None = None,
                 **overrides: Any) -> None:
        self.config = replace(config if config is not None else GrounderConfig(), **overrides)
        load_encoder, parser = self.config.load_encoder, self.config.parser
        self.encoder_error = ""
        if encoder is None and load_encoder:
            try:
                encoder = TextEncoder()
            except ModelError as exc:
                self.encoder_error = str(exc)
        elif encoder is None:
            self.encoder_error = "text encoder disabled"
        self.encoder = encoder
        self.matcher = LabelMatcher(encoder, self.config.min_label_similarity)
        self.matcher.prepare(KNOWN_LABELS)  # label embeddings computed once, here, not in the first call
        # The parser loads here too, so that a service answers its first call as fast as the others.
        self._pipeline = load_pipeline() if parser != "rules" else None
        if parser == "spacy" and self._pipeline is None:
            raise ModelError(pipeline_error())
        self.parser_name = self._pipeline[1] if self._pipeline is not None else "rules"
        self.parser_error = "" if self._pipeline is not None or parser == "rules" else pipeline_error()
        self._scenes: weakref.WeakKeyDictionary[MemorySnapshot, _SceneCache] = weakref.WeakKeyDictionary()
        self._parses: OrderedDict[str, ParsedPhrase] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: GrounderConfig, encoder: TextEncoder | None = None) -> Grounder:
        """A grounder with the settings of ``config``."""
        return cls(encoder, config)

    # -- caches -----------------------------------------------------------------------------------

    def _parse(self, phrase: str) -> ParsedPhrase:
        with self._lock:
            hit = self._parses.get(phrase)
            if hit is not None:
                self._parses.move_to_end(phrase)
                return hit
        parsed = parse_with_spacy(phrase, self._pipeline) if self._pipeline is not None else None
        parsed = parsed or parse_phrase(phrase)
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
            confidence = np.fromiter((o.confidence for o in snapshot.objects), dtype=np.float64, count=len(snapshot))
            coloured = any(o.colour_name is not None for o in snapshot.objects)
            geometry = SceneGeometry.from_boxes(boxes, snapshot.class_names)
            confident = confidence >= self.config.min_confidence
            hit = _SceneCache(geometry, labels, evidence, self._prior(snapshot, confidence), confident, coloured,
                              np.flatnonzero(confident))
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
                           for name, ev in evidence.items() if name != obj.class_name and ev >= MIN_OTHER_EVIDENCE]
        labels = tuple(sorted({str(x) for x in own} | {name for _, name, _ in others}))
        column = {label: j for j, label in enumerate(labels)}
        weights = np.zeros((len(snapshot), len(labels)))
        own_column = np.array([column[str(x)] for x in own], dtype=np.int64)
        weights[np.arange(len(snapshot)), own_column[codes.reshape(-1)]] = 1.0
        for i, name, w in others:
            weights[i, column[name]] = max(weights[i, column[name]], w)
        return labels, weights

    def _prior(self, snapshot: MemorySnapshot, confidence: np.ndarray) -> np.ndarray:
        """(N,) each object's prior: its score (above a floor) times its existence ``confidence``."""
        seen = np.fromiter((o.n_observations for o in snapshot.objects), dtype=np.int64, count=len(snapshot))
        weight = np.where(seen >= self.config.min_observations, 1.0, self.config.unconfirmed_weight)
        floor = self.config.score_floor
        return weight * (floor + (1.0 - floor) * np.clip(snapshot.scores, 0.0, 1.0)) * np.clip(confidence, 0.0, 1.0)

    def _confidence(self, noun: NounPhrase, scene: _SceneCache,
                    known: tuple[str, ...] = ()) -> tuple[np.ndarray, dict[str, float]]:
        """(N,) label confidence of every object for a noun phrase, and the per-label confidences."""
        by_label = self.matcher.match(noun.text, scene.labels, (*known, *KNOWN_LABELS))
        table = np.array([by_label.get(label, 0.0) for label in scene.labels])
        return (scene.evidence * table[None, :]).max(axis=1, initial=0.0), by_label

    # -- grounding --------------------------------------------------------------------------------

    def ground(self, phrase: str, snapshot: MemorySnapshot, head_scores: np.ndarray | None = None, *,
               viewpoint: Viewpoint | None = None, vocabulary: tuple[str, ...] | list[str] = (),
               hidden: MemorySnapshot | None = None,
               changes: Sequence[ChangeEvent] | None = None) -> GroundingResult:
        """Find the object a phrase refers to.

        Args:
            phrase: any text, e.g. "the cup on the table next to the monitor".
            snapshot: the memory's immutable snapshot (``SceneMemory.snapshot()``).
            head_scores: optional (N,) scores in [0, 1] of the snapshot's objects for this phrase
                from a network's grounding head (text-box matching); each candidate's score is
                multiplied by ``head_score ** head_weight``. Ignored (with a note) when its shape
                does not match the snapshot.
            viewpoint: the camera pose that viewer-centred words ("on the left", "the nearest",
                "behind me") refer to: the latest frame's for a robot; None: such phrases are refused.
            vocabulary: every class the perceptors can detect (``SceneMemory.vocabulary``): a phrase
                about a class outside it is told so; empty: unknown (old memories).
            hidden: what the memory holds beyond ``snapshot`` (its unpublished objects), searched before a
                superlative or an ordinal is answered (``completeness.py``); None: ``map_view.unpublished``
                of the snapshot (known for the views ``published_snapshot`` made).
            changes: the memory's change events (``SceneMemory.changes.log.current()``): a question about what
                changed ("what changed on the table?", "where did the mug go?") is answered from them
                (grounding/change_questions.py); None: every phrase is a referring phrase.

        Returns:
            The result; ``success`` is False, with the reason in ``message``, for an empty, too
            long or non-English phrase, an unknown target, an empty memory, or when no confident
            object fits.
        """
        if changes is not None and (question := parse_change_question(phrase)) is not None:
            return answer_change_question(self, question, phrase, changes, snapshot, viewpoint=viewpoint,
                                          vocabulary=vocabulary)
        start = time.perf_counter()
        enc_before = self.encoder.seconds if self.encoder is not None else 0.0
        empty = ParsedPhrase(phrase.strip().lower() if isinstance(phrase, str) else "")
        try:
            reason = refusal(phrase, tuple(vocabulary), self._pipeline is None)
            if reason is not None:
                result = self._fail(phrase, empty, reason)
            else:
                result = self._ground(phrase, self._parse(phrase), snapshot, head_scores, viewpoint, tuple(vocabulary),
                                      hidden if hidden is not None else unpublished(snapshot))
        except Exception as exc:  # a bug must not take the service down; say what happened
            result = self._fail(phrase, empty, f"internal error while grounding: {type(exc).__name__}: {exc}")
        enc_seconds = (self.encoder.seconds if self.encoder is not None else 0.0) - enc_before
        return GroundingResult(result.success, result.message, result.best, result.alternatives,
                               phrase if isinstance(phrase, str) else str(phrase), result.parsed,
                               result.label_confidence, self.encoder is not None,
                               time.perf_counter() - start, enc_seconds, result.count)

    def _fail(self, phrase: object, parsed: ParsedPhrase, message: str,
              label_confidence: dict[str, float] | None = None,
              partial: tuple[GroundedObject, ...] = ()) -> GroundingResult:
        """No answer: why, and the best partial candidates (those that fit some of the phrase) as alternatives."""
        if self.encoder is None:
            message += f" (synonym table only: {self.encoder_error})"
        message = " ".join(message.split())  # one line, whatever an exception's text held
        return GroundingResult(False, message, None, partial, str(phrase), parsed, label_confidence or {})

    def _candidates(self, noun: NounPhrase, ctx: _Context) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """(indices of the confident objects the noun names, their label confidence, per-label confidences)."""
        conf, by_label = self._confidence(noun, ctx.scene, ctx.vocabulary)
        # A name holds for an object when it names its class, or a class it was seen as often enough
        # (LABEL_HOLDS); weaker evidence (a book once seen as a remote) is not an answer to "the remote".
        idx = np.flatnonzero((conf >= LABEL_HOLDS) & (ctx.scene.prior > 0) & ctx.scene.confident)
        return idx, conf, by_label

    @staticmethod
    def _attributes(noun: NounPhrase, idx: np.ndarray, ctx: _Context) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """(score, holds, why not checkable) of a noun phrase's attributes over candidates (``attributes.py``)."""
        return attribute_scores(noun, idx, ctx.snapshot, ctx.scene.geometry, ctx.viewpoint, ctx.scene.coloured,
                                ctx.notes)

    def _anchors(self, anchor: NounPhrase, ctx: _Context, limit: int,
                 depth: int = 0) -> tuple[np.ndarray, np.ndarray, str]:
        """(anchor indices, their weights, why there is none: "" when there are some). Anchors must fit
        their own words: colour ("the grey chair"), and their own relations ("the end of the table near
        the sink"), which are all-or-nothing as the target's are."""
        a, a_conf, _ = self._candidates(anchor, ctx)
        if len(a) == 0:
            return a, np.zeros(0), f"no {anchor.text} in the map"
        attr, holds, cannot = self._attributes(anchor, a, ctx)
        if cannot:
            return a[:0], np.zeros(0), cannot[0]
        weight = a_conf[a] * ctx.scene.prior[a] * attr
        for clause in anchor.clauses if depth < 2 else ():
            raw, _, why = self._clause(clause, a, ctx, depth + 1)
            if why:
                return a[:0], np.zeros(0), why
            holds &= raw >= _threshold(clause)
            weight = weight * raw
        words = " ".join(x.word for x in anchor.attributes)
        if not holds.any():
            return a[:0], np.zeros(0), f"no {anchor.text} is {words or 'as said'}"
        a, weight = a[holds], weight[holds]
        keep = np.argsort(-weight, kind="stable")[:limit]
        return a[keep], weight[keep], ""

    def _clause(self, clause: RelationClause, t: np.ndarray, ctx: _Context,
                depth: int = 0) -> tuple[np.ndarray, list[np.ndarray], str]:
        """One relation over the candidates ``t``: (unweighted score per candidate: negated already,
        the chosen anchor indices per candidate, why it cannot be checked: "" when it can)."""
        g = ctx.scene.geometry
        structure = _structure(clause)
        if structure == "floor":  # "on the floor": the bottom at the floor (the lowest bottom in the memory)
            raw = np.exp(-np.maximum(g.bottom[t] - g.bottom.min(), 0.0) / FLOOR_SCALE_M)
            return (1.0 - raw if clause.negated else raw), [], ""
        if structure and not holds_structure(ctx.snapshot, structure, ctx.scene.confident):  # "by the wall"
            why = f"'{clause.text}' cannot be checked: the map holds objects, not the {structure}"
            return np.zeros(len(t)), [], why
        limit = self.config.max_between_anchors if clause.relation is Relation.BETWEEN else self.config.max_anchors
        anchor_sets = [self._anchors(anchor, ctx, limit, depth) for anchor in clause.anchors]
        missing = [why for _, _, why in anchor_sets if why]
        if missing:
            return np.zeros(len(t)), [], f"'{clause.text}' cannot be checked: {missing[0]}"
        return score_clause(clause, g, t, [(a, w) for a, w, _ in anchor_sets],
                            ctx.scene.supports() if clause.relation.type is RelationType.SUPPORT else None,
                            ctx.snapshot)

    def _ground(self, phrase: str, parsed: ParsedPhrase, snapshot: MemorySnapshot,
                head_scores: np.ndarray | None, viewpoint: Viewpoint | None,
                vocabulary: tuple[str, ...], hidden: MemorySnapshot | None = None) -> GroundingResult:
        notes = list(parsed.notes) + ([f"{parsed.target.count} asked for: one is answered, the others that fit are its "
                                       "alternatives"] if parsed.target.count > 1 and not parsed.count else [])
        if parsed.ignored:
            notes.append("ignored: " + ", ".join(f"'{w}'" for w in parsed.ignored))
        # Reasons the answer cannot be given: every constraint must hold, and every word be understood.
        cannot = [f"'{w}' is not understood, so the answer cannot be checked against it" for w in parsed.unknown]
        if parsed.target.empty:
            return self._fail(phrase, parsed, "; ".join([*cannot, "no target object found in the phrase"])
                              + _suffix(notes))
        if len(snapshot) == 0:
            return self._fail(phrase, parsed, "the scene memory is empty: nothing seen yet")
        if parsed.viewer and viewpoint is None:
            words = [a.word for p in (parsed.target, *(x for c in parsed.clauses for x in c.anchors))
                     for a in p.attributes if a.viewer]
            return self._fail(phrase, parsed, f"'{words[0]}' is seen from somewhere, and no viewpoint (camera "
                              "pose) was given")
        scene = self._scene(snapshot)
        ctx = _Context(snapshot, scene, viewpoint, vocabulary, notes, hidden)
        t, conf, by_label = self._candidates(parsed.target, ctx)
        if len(t) == 0:
            known = bool(self.matcher.match(parsed.target.text, vocabulary or KNOWN_LABELS))
            usable = (scene.prior > 0) & scene.confident
            unnamed, unnamed_conf = unnamed_candidates(parsed.target, bool(parsed.clauses), known, snapshot, usable,
                                                       LABEL_HOLDS, notes)
            if len(unnamed):
                t, conf = unnamed, unnamed_conf
                notes.append(f"the detector has no class '{parsed.target.text}': an unnamed object that fits the "
                             "rest of the phrase")
        if len(t) == 0:
            why = no_target(parsed.target.text, conf, snapshot, scene.prior, scene.confident, vocabulary,
                            self.matcher, self.config, LABEL_HOLDS)
            return self._fail(phrase, parsed, "; ".join([*cannot, why]) + _suffix(notes), by_label)
        score = conf[t] * scene.prior[t]
        if head_scores is not None:
            head = np.asarray(head_scores, dtype=np.float64).reshape(-1)
            if head.shape == (len(snapshot),) and np.isfinite(head).all():
                score = score * np.clip(head[t], 0.0, 1.0) ** self.config.head_weight
            else:
                notes.append(f"grounding-head scores ignored (shape {head.shape}, {len(snapshot)} objects)")
        attr, holds, why = self._attributes(parsed.target, t, ctx)
        cannot += why
        score = score * attr
        failed_attrs = [a.word for a in parsed.target.attributes if a.kind in ("colour", "material") or a.viewer]
        # Per evaluated clause: (clause, unweighted score per candidate, chosen anchor indices per candidate).
        used: list[tuple[RelationClause, np.ndarray, list[np.ndarray]]] = []
        for clause in parsed.clauses:
            raw, chosen, why_not = self._clause(clause, t, ctx)
            if why_not:
                cannot.append(why_not)
                continue
            used.append((clause, raw, chosen))
            score = score * raw
            holds = holds & (raw >= _threshold(clause))
        ranking = score * np.where(holds, 1.0, PARTIAL_WEIGHT)  # candidates that fit everything first
        order = np.argsort(-ranking, kind="stable")
        ordinal = next((a for a in parsed.target.attributes if a.rank), None)
        if ordinal is not None and not cannot:
            picked = ordinal_order(ordinal, t, np.where(holds, score, 0.0), ctx.scene.geometry, ctx.viewpoint,
                                   snapshot)
            if picked is None:  # "the second cup": not stacked things, and no order said
                ctx.notes.append(f"'{ordinal.word}' needs an order ('from the left', 'nearest'); ignored")
            elif isinstance(picked, str):
                cannot.append(picked)
            else:
                order = np.concatenate([picked, order[~np.isin(order, picked)]])
        best = int(order[0])

        def explain(k: int) -> tuple[str, tuple[int, ...]]:
            parts, ids = [], []
            for clause, raw, chosen in used:
                names = [_name(snapshot, c[k]) for c in chosen]
                word = "nearest to" if clause.relation is Relation.CLOSEST else clause.relation.value
                weak = "" if raw[k] >= _threshold(clause) else f" (does not hold: {raw[k]:.2f})"
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
            adjectives = [a.word for a in parsed.target.attributes if a.kind not in ("colour", "material")]
            head = " ".join([*adjectives, _name(snapshot, t[k])])
            if any(a.kind in ("colour", "material") for a in parsed.target.attributes):  # the colour seen
                head += f" ({snapshot.objects[t[k]].colour_name or 'colour not seen'})"
            return (f"{head}: {', '.join(parts)}" if parts else head), tuple(dict.fromkeys(ids))

        def partial(k_list) -> tuple[GroundedObject, ...]:
            return tuple(GroundedObject(snapshot.objects[t[k]], float(score[k]), *explain(k)) for k in k_list)

        seen_from = f" seen from {viewpoint.describe()}" if parsed.viewer and viewpoint is not None else ""
        if cannot:
            return self._fail(phrase, parsed, "not found: " + "; ".join(dict.fromkeys(cannot)) + f" (best partial "
                              f"candidate: {explain(best)[0]})" + _suffix(notes), by_label, partial(order[:1]))
        if not holds[best]:
            failed = [c.text for c, raw, _ in used if raw[best] < _threshold(c)] or failed_attrs
            what = "; ".join(failed) or "the phrase"
            return self._fail(phrase, parsed, f"not found: no {parsed.target.text} fits '{what}'{seen_from} (best "
                              f"partial candidate: {explain(best)[0]}, score {score[best]:.2f})" + _suffix(notes),
                              by_label, partial(order[:1]))
        if score[best] < self.config.min_score:
            return self._fail(phrase, parsed, f"not found: no {parsed.target.text} in the map worth an answer (the "
                              f"likeliest, {explain(best)[0]}, scores {score[best]:.2f})" + _suffix(notes), by_label,
                              partial(order[:1]))
        unnamed = snapshot.class_names[t[best]] == UNNAMED_CLASS
        labels = [label for label, v in by_label.items() if v >= LABEL_HOLDS]
        doubt = rank_doubt(parsed.target, t, best, used, labels, snapshot, ctx.hidden, viewpoint) or (
            unnamed_doubt(score, holds, best, [_name(snapshot, i) for i in t]) if unnamed else "")
        if doubt:
            return self._fail(phrase, parsed, f"not sure: {explain(best)[0]}{seen_from} is the one the map holds, but "
                              f"{doubt}" + _suffix(notes), by_label, partial([best]))
        if parsed.count:
            return count_answer(phrase, parsed, snapshot, t, np.where(holds, score, 0.0), explain, notes, by_label)
        # Alternatives: the other candidates that fit everything, down to 1% of the answer's score.
        picked_k = [int(k) for k in order[: self.config.max_alternatives + 1]
                    if holds[k] and (score[k] >= 0.01 * score[best] or ordinal is not None)]
        grounded = [GroundedObject(snapshot.objects[t[k]], float(score[k]), *explain(k)) for k in picked_k]
        message = (grounded[0].explanation + (f" ({seen_from.strip()})" if seen_from else "")
                   + f" (confidence {grounded[0].object.confidence:.2f}{_growing(grounded[0].object)})"
                   + _label_note(parsed.target.text, by_label) + _suffix(notes))
        if self.encoder is None:
            message += f" (synonym table only: {self.encoder_error})"
        return GroundingResult(True, message, grounded[0], tuple(grounded[1:]), phrase, parsed, by_label)


FLOOR_SCALE_M = 0.1  # "on the floor": e^-1 for a bottom this far above the lowest bottom in the memory
_FLOOR_WORDS = frozenset({"floor", "ground", "carpet", "rug"})
_STRUCTURE_WORDS = frozenset({"wall", "walls", "ceiling", "room", "corner", "kitchen", "house", "area", "space"})
# An object answers for another class than its own (in its class evidence: a plant sometimes seen as a
# book) only with at least this much evidence of it (the sum of those detections' scores): one weak
# sighting as a "bed" (0.21 in redkitchen) does not make a book the answer to "the bed".
MIN_OTHER_EVIDENCE = 0.5
# Candidates that fail a constraint rank this far below those that fit everything (they are only
# shown as the best partial candidate of a "not found").
PARTIAL_WEIGHT = 1e-3
LABEL_HOLDS = 0.5  # label confidence (synonym 1, embedding similarity, class evidence) an answer needs


def _structure(clause: RelationClause) -> str:
    """"floor" for "on the floor" (on, near, next to), the word for other parts of the room ("the
    wall"), "" for an ordinary clause."""
    if len(clause.anchors) != 1 or not clause.anchors[0].text:
        return ""
    head = clause.anchors[0].text.split()[-1]
    if head in _FLOOR_WORDS and clause.relation in (Relation.ON, Relation.NEAR, Relation.NEXT_TO, Relation.CLOSEST):
        return "floor"
    return head if head in _STRUCTURE_WORDS or head in _FLOOR_WORDS else ""


def _threshold(clause: RelationClause) -> float:
    """The score below which a clause fails: a negated one fails when the relation holds."""
    return 1.0 - satisfied_threshold(clause.relation) if clause.negated else satisfied_threshold(clause.relation)


def _growing(obj: SceneObject) -> str:
    """What to add to an answer whose box is not settled (memory/settling.py): where it is, probably."""
    return "" if getattr(obj, "settled", True) else "; its box is still growing: probably there"
