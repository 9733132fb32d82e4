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
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..classes import RelationType
from ..errors import ModelError
from ..memory.change_events import ChangeEvent
from ..memory.scene_object import MemorySnapshot, SceneObject
from .attributes import attribute_scores
from .change_questions import answer_change_question, parse_change_question
from .clause_scores import clause_threshold, score_clause
from .completeness import rank_doubt
from .dependency import load_pipeline, parse_with_spacy, pipeline_error
from .explanation import Explainer, UsedClause
from .grounder_config import GrounderConfig
from .map_view import unpublished
from .phrases import (
    Attribute,
    NounPhrase,
    ParsedPhrase,
    Relation,
    RelationClause,
    refusal,
)
from .ranking import count_answer, ordinal_order
from .results import GroundedObject, GroundingResult
from .rule_parser import parse_phrase
from .scene_cache import SceneCache, scene_cache
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
class _Context:
    """What one grounding call evaluates against."""

    snapshot: MemorySnapshot
    scene: SceneCache
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
        self._scenes: weakref.WeakKeyDictionary[MemorySnapshot, SceneCache] = weakref.WeakKeyDictionary()
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

    def _scene(self, snapshot: MemorySnapshot) -> SceneCache:
        with self._lock:
            hit = self._scenes.get(snapshot)
        if hit is None:
            hit = scene_cache(snapshot, self.config)
            with self._lock:
                self._scenes[snapshot] = hit
        return hit

    def _confidence(self, noun: NounPhrase, scene: SceneCache,
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
            holds &= raw >= clause_threshold(clause)
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
        notes = _call_notes(parsed)
        # Reasons the answer cannot be given: every constraint must hold, and every word be understood.
        cannot = [f"'{w}' is not understood, so the answer cannot be checked against it" for w in parsed.unknown]
        refused = self._refuse(phrase, parsed, snapshot, viewpoint, cannot, notes)
        if refused is not None:
            return refused
        ctx = _Context(snapshot, self._scene(snapshot), viewpoint, vocabulary, notes, hidden)
        t, conf, by_label = self._targets(parsed, ctx)
        if len(t) == 0:
            why = no_target(parsed.target.text, conf, snapshot, ctx.scene.prior, ctx.scene.confident, vocabulary,
                            self.matcher, self.config, LABEL_HOLDS)
            return self._fail(phrase, parsed, "; ".join([*cannot, why]) + _suffix(notes), by_label)
        fit = self._fit(parsed, t, conf, head_scores, ctx, cannot)
        explain = Explainer(snapshot, parsed.target, t, fit.used)
        failed = self._unanswered(phrase, parsed, fit, explain, by_label, ctx)
        if failed is not None:
            return failed
        if parsed.count:
            return count_answer(phrase, parsed, snapshot, t, np.where(fit.holds, fit.score, 0.0), explain, notes,
                                by_label)
        return self._answer(phrase, parsed, fit, explain, by_label, ctx)

    def _refuse(self, phrase: str, parsed: ParsedPhrase, snapshot: MemorySnapshot, viewpoint: Viewpoint | None,
                cannot: list[str], notes: list[str]) -> GroundingResult | None:
        """The failure for a phrase that cannot be grounded at all (no target, an empty memory, viewer-centred
        words without a viewpoint); None when it can."""
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
        return None

    def _targets(self, parsed: ParsedPhrase, ctx: _Context) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """The target's candidates as ``_candidates`` gives them; when no object is named so, the unnamed
        objects that fit the rest of the phrase (``unnamed_shapes.py``), said in a note."""
        t, conf, by_label = self._candidates(parsed.target, ctx)
        if len(t) == 0:
            known = bool(self.matcher.match(parsed.target.text, ctx.vocabulary or KNOWN_LABELS))
            usable = (ctx.scene.prior > 0) & ctx.scene.confident
            unnamed, unnamed_conf = unnamed_candidates(parsed.target, bool(parsed.clauses), known, ctx.snapshot,
                                                       usable, LABEL_HOLDS, ctx.notes)
            if len(unnamed):
                t, conf = unnamed, unnamed_conf
                ctx.notes.append(f"the detector has no class '{parsed.target.text}': an unnamed object that fits "
                                 "the rest of the phrase")
        return t, conf, by_label

    def _fit(self, parsed: ParsedPhrase, t: np.ndarray, conf: np.ndarray, head_scores: np.ndarray | None,
             ctx: _Context, cannot: list[str]) -> _Fit:
        """Score the candidates ``t`` by every part of the phrase and rank them (``cannot`` grows by what
        could not be checked)."""
        score = conf[t] * ctx.scene.prior[t] * self._head_factor(head_scores, t, ctx)
        attr, holds, why = self._attributes(parsed.target, t, ctx)
        cannot += why
        score = score * attr
        used: list[UsedClause] = []
        for clause in parsed.clauses:
            raw, chosen, why_not = self._clause(clause, t, ctx)
            if why_not:
                cannot.append(why_not)
                continue
            used.append((clause, raw, chosen))
            score = score * raw
            holds = holds & (raw >= clause_threshold(clause))
        ranking = score * np.where(holds, 1.0, PARTIAL_WEIGHT)  # candidates that fit everything first
        order = np.argsort(-ranking, kind="stable")
        ordinal = next((a for a in parsed.target.attributes if a.rank), None)
        if ordinal is not None and not cannot:
            order = _by_ordinal(ordinal, order, t, np.where(holds, score, 0.0), ctx, cannot)
        return _Fit(t, score, holds, used, order, ordinal, cannot)

    def _head_factor(self, head_scores: np.ndarray | None, t: np.ndarray, ctx: _Context) -> np.ndarray | float:
        """The grounding head's factor ``head_score ** head_weight`` per candidate; 1 without usable scores."""
        if head_scores is None:
            return 1.0
        head = np.asarray(head_scores, dtype=np.float64).reshape(-1)
        if head.shape == (len(ctx.snapshot),) and np.isfinite(head).all():
            return np.clip(head[t], 0.0, 1.0) ** self.config.head_weight
        ctx.notes.append(f"grounding-head scores ignored (shape {head.shape}, {len(ctx.snapshot)} objects)")
        return 1.0

    def _unanswered(self, phrase: str, parsed: ParsedPhrase, fit: _Fit, explain: Explainer,
                    by_label: dict[str, float], ctx: _Context) -> GroundingResult | None:
        """The "not found" or "not sure" for the best candidate: a part of the phrase that cannot be checked or
        does not hold, too low a score, or doubt about a pick by rank; None when it answers."""
        best, score, notes = fit.best, fit.score, ctx.notes
        seen_from = _seen_from(parsed, ctx.viewpoint)
        if fit.cannot:
            return self._fail(phrase, parsed, "not found: " + "; ".join(dict.fromkeys(fit.cannot)) + f" (best "
                              f"partial candidate: {explain(best)[0]})" + _suffix(notes), by_label,
                              explain.grounded(fit.order[:1], score))
        if not fit.holds[best]:
            failed = [c.text for c, raw, _ in fit.used if raw[best] < clause_threshold(c)] or [
                a.word for a in parsed.target.attributes if a.kind in ("colour", "material") or a.viewer]
            what = "; ".join(failed) or "the phrase"
            return self._fail(phrase, parsed, f"not found: no {parsed.target.text} fits '{what}'{seen_from} (best "
                              f"partial candidate: {explain(best)[0]}, score {score[best]:.2f})" + _suffix(notes),
                              by_label, explain.grounded(fit.order[:1], score))
        if score[best] < self.config.min_score:
            return self._fail(phrase, parsed, f"not found: no {parsed.target.text} in the map worth an answer (the "
                              f"likeliest, {explain(best)[0]}, scores {score[best]:.2f})" + _suffix(notes), by_label,
                              explain.grounded(fit.order[:1], score))
        doubt = self._doubt(parsed, fit, by_label, ctx)
        if doubt:
            return self._fail(phrase, parsed, f"not sure: {explain(best)[0]}{seen_from} is the one the map holds, but "
                              f"{doubt}" + _suffix(notes), by_label, explain.grounded([best], score))
        return None

    @staticmethod
    def _doubt(parsed: ParsedPhrase, fit: _Fit, by_label: dict[str, float], ctx: _Context) -> str:
        """Why the best candidate may not be the one meant ("" when it is): unpublished evidence of another
        instance ranking before a pick by rank, or another unnamed object fitting nearly as well."""
        snapshot, t, best = ctx.snapshot, fit.t, fit.best
        labels = [label for label, v in by_label.items() if v >= LABEL_HOLDS]
        return rank_doubt(parsed.target, t, best, fit.used, labels, snapshot, ctx.hidden, ctx.viewpoint) or (
            unnamed_doubt(fit.score, fit.holds, best, [_name(snapshot, i) for i in t])
            if snapshot.class_names[t[best]] == UNNAMED_CLASS else "")

    def _answer(self, phrase: str, parsed: ParsedPhrase, fit: _Fit, explain: Explainer, by_label: dict[str, float],
                ctx: _Context) -> GroundingResult:
        """The answer and its alternatives: the other candidates that fit everything, down to 1% of the answer's
        score (every one that fits, for a pick by rank)."""
        score, best = fit.score, fit.best
        picked_k = [int(k) for k in fit.order[: self.config.max_alternatives + 1]
                    if fit.holds[k] and (score[k] >= 0.01 * score[best] or fit.ordinal is not None)]
        grounded = explain.grounded(picked_k, score)
        seen_from = _seen_from(parsed, ctx.viewpoint)
        message = (grounded[0].explanation + (f" ({seen_from.strip()})" if seen_from else "")
                   + f" (confidence {grounded[0].object.confidence:.2f}{_growing(grounded[0].object)})"
                   + _label_note(parsed.target.text, by_label) + _suffix(ctx.notes))
        if self.encoder is None:
            message += f" (synonym table only: {self.encoder_error})"
        return GroundingResult(True, message, grounded[0], grounded[1:], phrase, parsed, by_label)


@dataclass(frozen=True)
class _Fit:
    """How the candidates fit a phrase."""

    t: np.ndarray  # (T,) the candidates' object indices
    score: np.ndarray  # (T,) each one's score over every part of the phrase that could be checked
    holds: np.ndarray  # (T,) bool: whether it fits every part
    used: list[UsedClause]  # the clauses evaluated
    order: np.ndarray  # positions in ``t``, the answer first
    ordinal: Attribute | None  # the pick by rank ("the second chair from the left"), if any
    cannot: list[str]  # why parts of the phrase cannot be checked

    @property
    def best(self) -> int:
        return int(self.order[0])


def _call_notes(parsed: ParsedPhrase) -> list[str]:
    """The notes an answer starts with: the parser's, one for a number asked for, and the words ignored."""
    notes = list(parsed.notes) + ([f"{parsed.target.count} asked for: one is answered, the others that fit are its "
                                   "alternatives"] if parsed.target.count > 1 and not parsed.count else [])
    if parsed.ignored:
        notes.append("ignored: " + ", ".join(f"'{w}'" for w in parsed.ignored))
    return notes


def _by_ordinal(ordinal: Attribute, order: np.ndarray, t: np.ndarray, fitting: np.ndarray, ctx: _Context,
                cannot: list[str]) -> np.ndarray:
    """``order`` with the k-th candidate of an ordinal ("the second chair from the left") first; unchanged, with
    a note or a reason it cannot be checked, when no order is said or it cannot be followed."""
    picked = ordinal_order(ordinal, t, fitting, ctx.scene.geometry, ctx.viewpoint, ctx.snapshot)
    if picked is None:  # "the second cup": not stacked things, and no order said
        ctx.notes.append(f"'{ordinal.word}' needs an order ('from the left', 'nearest'); ignored")
    elif isinstance(picked, str):
        cannot.append(picked)
    else:
        order = np.concatenate([picked, order[~np.isin(order, picked)]])
    return order


def _seen_from(parsed: ParsedPhrase, viewpoint: Viewpoint | None) -> str:
    """" seen from the camera of frame 460" for a viewer-centred phrase, else ""."""
    return f" seen from {viewpoint.describe()}" if parsed.viewer and viewpoint is not None else ""


FLOOR_SCALE_M = 0.1  # "on the floor": e^-1 for a bottom this far above the lowest bottom in the memory
_FLOOR_WORDS = frozenset({"floor", "ground", "carpet", "rug"})
_STRUCTURE_WORDS = frozenset({"wall", "walls", "ceiling", "room", "corner", "kitchen", "house", "area", "space"})
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


def _growing(obj: SceneObject) -> str:
    """What to add to an answer whose box is not settled (memory/settling.py): where it is, probably."""
    return "" if getattr(obj, "settled", True) else "; its box is still growing: probably there"
