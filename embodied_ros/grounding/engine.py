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
memory's label vocabulary is given.
The engine reads only the immutable ``MemorySnapshot`` (never the live memory), so a grounding
call never holds the memory's lock; what it derives from a snapshot (box geometry, class codes)
is cached per snapshot, and parses and label embeddings per text.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..classes import ROOM_FACING_CLASSES
from ..errors import ModelError
from ..memory.change_events import ChangeEvent
from ..memory.object_colour import colour_similarity
from ..memory.scene_object import MemorySnapshot
from .change_questions import answer_change_question, parse_change_question
from .colours import CHECKABLE_MATERIALS, colour_fits, material_fits
from .dependency import load_pipeline, parse_with_spacy, pipeline_error
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
from .relations import (
    SceneGeometry,
    Supports,
    between_scores,
    pair_scores,
    satisfied_threshold,
    supports,
)
from .results import GroundedObject, GroundingResult
from .room_frame import face_the_room
from .text_encoder import TextEncoder
from .unnamed_shapes import shape_of
from .viewpoint import Viewpoint, viewer_order, viewer_scores
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
    # Prior factor of unconfirmed objects (0 ignores them). The existence confidence already weighs
    # how often and from where an object was seen, so 1 adds nothing to it: synthetic Acc@0.25 on
    # tuning seeds 10004..10011 / 10028..10043 0.637 / 0.613 with 1, 0.622 / 0.600 with 0.4 (the
    # weight chosen before objects had a confidence); the redkitchen phrases 43/66 with either.
    unconfirmed_weight: float = 1.0
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
    # An answer (or an anchor) must be an object whose existence confidence (SceneObject.confidence,
    # from the memory's evidence for and against it) is at least this; below it the answer is "not found"
    # and says how likely the best candidate is. Below the memory's bar for publishing (0.7): a robot
    # that saw an object from few places may still name it, with its confidence. Synthetic grounding
    # Acc@0.25 on tuning seeds 10004..10011 / 10028..10043: 0.613 / 0.570 at 0.7, 0.622 / 0.600 at 0.6,
    # 0.613 / 0.595 at 0.5 (0.644 / 0.619 before objects had a confidence).
    min_confidence: float = 0.6
    # Which parser reads phrases: "auto" (spaCy when installed, else the rules), "spacy" or "rules".
    parser: str = "auto"

    def __post_init__(self) -> None:
        if self.parser not in ("auto", "spacy", "rules"):
            raise ValueError(f"parser must be 'auto', 'spacy' or 'rules', got {self.parser!r}")
        for name in ("unconfirmed_weight", "score_floor", "min_confidence"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not self.evidence_power > 0.0:
            raise ValueError(f"evidence_power must be positive (inf: an object's own class only), got "
                             f"{self.evidence_power}")
        object.__setattr__(self, "room_facing_classes", tuple(self.room_facing_classes))


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


def _refuse(phrase: object, vocabulary: tuple[str, ...] = (), rules: bool = True) -> str | None:
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
    words = frozenset(w for label in vocabulary for w in label.lower().split())
    # The dependency parser names the words it cannot read; the rules need the phrase to look English.
    if sum(c.isascii() for c in letters) < 0.5 * len(letters) or rules and not looks_english(phrase, words):
        return "only English phrases are understood"
    return None


def _attribute_scores(attr: Attribute, g: SceneGeometry, t: np.ndarray) -> np.ndarray | None:
    """(T,) score of a size/height attribute over the candidates, or None for other kinds."""
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


@dataclass(frozen=True)
class _Context:
    """What one grounding call evaluates against."""

    snapshot: MemorySnapshot
    scene: _SceneCache
    viewpoint: Viewpoint | None
    vocabulary: tuple[str, ...]
    notes: list[str]


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
            reason = _refuse(phrase, tuple(vocabulary), self._pipeline is None)
            if reason is not None:
                result = self._fail(phrase, empty, reason)
            else:
                result = self._ground(phrase, self._parse(phrase), snapshot, head_scores, viewpoint, tuple(vocabulary))
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

    def _no_target(self, parsed: ParsedPhrase, conf: np.ndarray, ctx: _Context, vocabulary: tuple[str, ...]) -> str:
        """Why no object can answer: none of the class, none confident, or a class the detector does not know."""
        noun = parsed.target.text
        named = np.flatnonzero(conf >= LABEL_HOLDS)
        weak = np.flatnonzero((conf > 0) & (conf < LABEL_HOLDS) & ctx.scene.confident)
        if len(named) == 0 and len(weak):
            k = int(weak[np.argmax(conf[weak])])
            return (f"no {noun} in the map: {_name(ctx.snapshot, k)} was seen as one at times, too rarely to say "
                    f"it is one ({conf[k]:.2f}; an answer needs {LABEL_HOLDS:.2f})")
        if len(named):
            candidates = named[ctx.scene.prior[named] > 0]
            if len(candidates) == 0:
                return f"no {noun} seen often enough yet (at least {self.config.min_observations} times)"
            best = int(candidates[np.argmax([ctx.snapshot.objects[i].confidence for i in candidates])])
            return (f"no confident {noun}: the likeliest, {_name(ctx.snapshot, best)}, exists with confidence "
                    f"{ctx.snapshot.objects[best].confidence:.2f} (an answer needs {self.config.min_confidence:.2f})")
        if vocabulary:
            known = self.matcher.match(noun, vocabulary)
            if known:
                label = max(known, key=lambda k: (known[k], len(k)))  # "teddy bear" before "bear"
                return f"no {noun} in the scene memory: the detector can see {label} but has found none here"
            shown = ", ".join(vocabulary[:12]) + (", ..." if len(vocabulary) > 12 else "")
            return f"the detector does not know '{noun}': it detects {len(vocabulary)} classes ({shown})"
        return f"unknown target '{noun}': no object in the memory is of a class with that name"

    def _candidates(self, noun: NounPhrase, ctx: _Context) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
        """(indices of the confident objects the noun names, their label confidence, per-label confidences)."""
        conf, by_label = self._confidence(noun, ctx.scene, ctx.vocabulary)
        # A name holds for an object when it names its class, or a class it was seen as often enough
        # (LABEL_HOLDS); weaker evidence (a book once seen as a remote) is not an answer to "the remote".
        idx = np.flatnonzero((conf >= LABEL_HOLDS) & (ctx.scene.prior > 0) & ctx.scene.confident)
        return idx, conf, by_label

    def _unnamed_candidates(self, parsed: ParsedPhrase, ctx: _Context) -> tuple[np.ndarray, np.ndarray]:
        """For a class no object of the map has and the detector cannot name ("the PC tower", "the box next
        to the mug"), the confident unnamed objects (class ``UNNAMED_CLASS``) as candidates at label
        confidence ``LABEL_HOLDS``, when the phrase says more than the name (a colour, a size, a place)
        and the object has the size of such a thing (``unnamed_shapes``): the rest of the phrase then
        picks one out, and the answer says that it is unnamed."""
        noun = parsed.target
        none = np.zeros(0, np.int64), np.zeros(len(ctx.snapshot))
        if not (noun.attributes or parsed.clauses) or self.matcher.match(noun.text, ctx.vocabulary or KNOWN_LABELS):
            return none
        unnamed = np.array([c == UNNAMED_CLASS for c in ctx.snapshot.class_names], dtype=bool)
        idx = np.flatnonzero(unnamed & (ctx.scene.prior > 0) & ctx.scene.confident)
        shape = shape_of(noun.text)  # "the box": only an unnamed thing that could be one
        if shape is None:
            ctx.notes.append(f"no shape is known for '{noun.text}', so no unnamed object can be said to be one")
            return none
        fitting = np.array([shape.fits(ctx.snapshot.boxes[i]) for i in idx], dtype=bool)
        if len(idx) and not fitting.any():
            ctx.notes.append(f"no unnamed object has the size of a {noun.text}")
        idx = idx[fitting]
        conf = np.where(unnamed, LABEL_HOLDS, 0.0)
        return idx, conf

    def _attributes(self, noun: NounPhrase, idx: np.ndarray, ctx: _Context) -> tuple[np.ndarray, np.ndarray, list[str]]:
        """Over a noun phrase's candidates: (score: product of its attribute scores, ordinals excluded;
        holds: whether every checkable attribute holds; why an attribute cannot be checked at all)."""
        g = ctx.scene.geometry
        out = np.ones(len(idx))
        holds = np.ones(len(idx), dtype=bool)
        cannot: list[str] = []
        for attr in noun.attributes:
            if attr.rank:
                continue  # an ordinal picks from the ranking below, it does not score
            if attr.kind == "colour":
                if not ctx.scene.coloured:
                    cannot.append(f"colour '{attr.word}' cannot be checked: the map observes no colours")
                    continue
                objs = [ctx.snapshot.objects[i] for i in idx]
                fits = np.array([colour_fits(attr.colour, o.colour_lab, o.class_name) for o in objs], dtype=bool)
                exact = np.array([colour_similarity(attr.colour, o.colour_name) >= 1.0 for o in objs])
                out *= np.where(exact, 1.0, np.where(fits, COLOUR_NEAR_SCORE, 0.0))
                holds &= fits
            elif attr.kind == "material":
                fits_m = [material_fits(attr.word, ctx.snapshot.objects[i].colour_lab, ctx.snapshot.class_names[i])
                          for i in idx]
                if all(f is None for f in fits_m) and attr.word in CHECKABLE_MATERIALS:
                    cannot.append(f"'{attr.word}' cannot be checked: the map observes no colours")
                elif any(f is not None for f in fits_m):
                    holds &= np.array([f is not False for f in fits_m], dtype=bool)
                else:
                    ctx.notes.append(f"'{attr.word}' is not checked (the map does not observe materials)")
            elif attr.viewer:
                assert ctx.viewpoint is not None  # refused earlier
                s = viewer_scores(attr.kind, attr.sign, ctx.viewpoint, g.centers[idx], self._distances(g, idx, ctx))
                out *= s
                holds &= s >= VIEWER_HOLDS
            else:
                s = _attribute_scores(attr, g, idx)
                if s is not None:
                    out *= s
        return out, holds, cannot

    @staticmethod
    def _distances(g: SceneGeometry, idx: np.ndarray, ctx: _Context) -> np.ndarray:
        assert ctx.viewpoint is not None
        return ctx.viewpoint.distances(g.centers[idx], g.half_local[idx], g.axes[idx])

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
        if structure:
            why = f"'{clause.text}' cannot be checked: the map holds objects, not the {structure}"
            return np.zeros(len(t)), [], why
        limit = self.config.max_between_anchors if clause.relation is Relation.BETWEEN else self.config.max_anchors
        anchor_sets = [self._anchors(anchor, ctx, limit, depth) for anchor in clause.anchors]
        missing = [why for _, _, why in anchor_sets if why]
        if missing:
            return np.zeros(len(t)), [], f"'{clause.text}' cannot be checked: {missing[0]}"
        rows = np.arange(len(t))
        if clause.relation is Relation.BETWEEN:
            (a, wa, _), (b, wb, _) = anchor_sets
            s3 = between_scores(g, t, a, b)  # (T, A, B)
            w3 = wa[:, None] * wb[None, :]
            flat = (s3 * (w3 / w3.max())[None]).reshape(len(t), -1)
            ja, jb = np.unravel_index(flat.argmax(axis=1), (len(a), len(b)))
            raw, chosen = s3[rows, ja, jb], [a[ja], b[jb]]
        else:
            a, wa, _ = anchor_sets[0]
            support = clause.relation in (Relation.ON, Relation.UNDER, Relation.SUPPORTING)
            s2 = pair_scores(clause.relation, g, t, a, ctx.scene.supports() if support else None)  # (T, A)
            j = (s2 * (wa / wa.max())[None, :]).argmax(axis=1)
            raw, chosen = s2[rows, j], [a[j]]
        if clause.negated:  # "not on the table": none of the tables holds it
            raw = 1.0 - raw
        return raw, chosen, ""

    def _ground(self, phrase: str, parsed: ParsedPhrase, snapshot: MemorySnapshot,
                head_scores: np.ndarray | None, viewpoint: Viewpoint | None,
                vocabulary: tuple[str, ...]) -> GroundingResult:
        notes = list(parsed.notes)
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
        ctx = _Context(snapshot, scene, viewpoint, vocabulary, notes)
        t, conf, by_label = self._candidates(parsed.target, ctx)
        if len(t) == 0:
            unnamed, unnamed_conf = self._unnamed_candidates(parsed, ctx)
            if len(unnamed):
                t, conf = unnamed, unnamed_conf
                notes.append(f"the detector has no class '{parsed.target.text}': an unnamed object that fits the "
                             "rest of the phrase")
        if len(t) == 0:
            return self._fail(phrase, parsed, "; ".join([*cannot, self._no_target(parsed, conf, ctx, vocabulary)])
                              + _suffix(notes), by_label)
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
            picked = self._ordinal(ordinal, t, np.where(holds, score, 0.0), ctx)
            if isinstance(picked, str):
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
                parts.append((f"between {names[0]} and {names[1]}" if len(names) == 2 else f"{word} {names[0]}") + weak)
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
        if parsed.count:
            return self._count(phrase, parsed, snapshot, t, np.where(holds, score, 0.0), explain, notes, by_label)
        # Alternatives: the other candidates that fit everything, down to 1% of the answer's score.
        picked_k = [int(k) for k in order[: self.config.max_alternatives + 1]
                    if holds[k] and (score[k] >= 0.01 * score[best] or ordinal is not None)]
        grounded = [GroundedObject(snapshot.objects[t[k]], float(score[k]), *explain(k)) for k in picked_k]
        message = (grounded[0].explanation + (f" ({seen_from.strip()})" if seen_from else "")
                   + f" (confidence {grounded[0].object.confidence:.2f})"
                   + _label_note(parsed.target.text, by_label) + _suffix(notes))
        if self.encoder is None:
            message += f" (synonym table only: {self.encoder_error})"
        return GroundingResult(True, message, grounded[0], tuple(grounded[1:]), phrase, parsed, by_label)

    def _ordinal(self, attr: Attribute, t: np.ndarray, score: np.ndarray, ctx: _Context) -> np.ndarray | str:
        """Candidate positions in the viewer's order, the asked one first ("the second chair from the
        left": the second of the chairs that fit), or why there is none."""
        assert ctx.viewpoint is not None
        g = ctx.scene.geometry
        key, pool = viewer_order(attr.kind, attr.sign, ctx.viewpoint, g.centers[t], self._distances(g, t, ctx))
        fits = np.flatnonzero(pool & (score >= ORDINAL_FIT * score.max()))
        ranked = fits[np.argsort(key[fits], kind="stable")]
        if len(ranked) < attr.rank:
            return f"only {len(ranked)} fitting object(s) to count '{attr.word}' among"
        return np.concatenate([ranked[attr.rank - 1:attr.rank], ranked[:attr.rank - 1], ranked[attr.rank:]])

    @staticmethod
    def _count(phrase: str, parsed: ParsedPhrase, snapshot: MemorySnapshot, t: np.ndarray, score: np.ndarray,
               explain: Callable[[int], tuple[str, tuple[int, ...]]], notes: list[str],
               by_label: dict[str, float]) -> GroundingResult:
        """How many candidates fit: every constraint holds (``score`` is 0 where one does not) and a score
        near the best one's."""
        ok = (score > 0) & (score >= COUNT_FIT * score.max())
        counted = np.flatnonzero(ok)
        counted = counted[np.argsort(-score[counted], kind="stable")]
        grounded = [GroundedObject(snapshot.objects[t[k]], float(score[k]), *explain(k)) for k in counted]
        names = ", ".join(g.explanation.split(":")[0] for g in grounded[:10])
        message = f"{len(grounded)} x {parsed.target.text}: {names}" + _suffix(notes)
        return GroundingResult(True, message, grounded[0], tuple(grounded[1:]), phrase, parsed, by_label,
                               count=len(grounded))


UNNAMED_CLASS = "object"  # the class of the map's objects that no detector named (answered by colour, size, place)
FLOOR_SCALE_M = 0.1  # "on the floor": e^-1 for a bottom this far above the lowest bottom in the memory
_FLOOR_WORDS = frozenset({"floor", "ground", "carpet", "rug"})
_STRUCTURE_WORDS = frozenset({"wall", "walls", "ceiling", "room", "corner", "kitchen", "house", "area", "space"})
# An object answers for another class than its own (in its class evidence: a plant sometimes seen as a
# book) only with at least this much evidence of it (the sum of those detections' scores): one weak
# sighting as a "bed" (0.21 in redkitchen) does not make a book the answer to "the bed".
MIN_OTHER_EVIDENCE = 0.5
ORDINAL_FIT = 0.3  # an ordinal counts the candidates scoring at least this fraction of the best
# Candidates that fail a constraint rank this far below those that fit everything (they are only
# shown as the best partial candidate of a "not found").
PARTIAL_WEIGHT = 1e-3
LABEL_HOLDS = 0.5  # label confidence (synonym 1, embedding similarity, class evidence) an answer needs
COLOUR_NEAR_SCORE = 0.6  # a colour word that fits within measurement error, not the measured name
# A viewer-centred word holds for a candidate scoring at least this: "behind me" for nothing in front.
VIEWER_HOLDS = 0.2
COUNT_FIT = 0.25  # "how many": candidates scoring at least this fraction of the best (relations all satisfied)


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


def _name(snapshot: MemorySnapshot, i: int) -> str:
    name = snapshot.class_names[i]
    if name == UNNAMED_CLASS:  # a thing the map holds without knowing what it is
        return f"unnamed object #{int(snapshot.ids[i])}"
    return f"{name} #{int(snapshot.ids[i])}"


def _suffix(notes: list[str]) -> str:
    return f" (note: {'; '.join(notes)})" if notes else ""


def _label_note(noun: str, by_label: dict[str, float]) -> str:
    """Say how a word was read when it was not an exact or synonym match."""
    soft = {k: v for k, v in by_label.items() if v < 1.0}
    if not soft or len(by_label) > 3:
        return ""
    return " (read '" + noun + "' as " + ", ".join(f"{k} {v:.2f}" for k, v in soft.items()) + ")"
