"""What a grounding call returns: the best object, ranked alternatives, and why."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..memory.scene_object import SceneObject
from .phrases import ParsedPhrase

__all__ = ["GroundedObject", "GroundingResult"]


@dataclass(frozen=True)
class GroundedObject:
    """One candidate answer.

    Attributes:
        object: the scene object (its id, class, 9-DoF world box, detection score).
        score: grounding score in [0, 1]: label confidence times the relation and attribute scores.
        explanation: one line, e.g. "cup #7: on table #2, nearest to monitor #4".
        anchor_ids: ids of the anchor objects named in the explanation, in phrase order.
    """

    object: SceneObject
    score: float
    explanation: str
    anchor_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class GroundingResult:
    """The answer to one phrase.

    Attributes:
        success: True when a target was found that satisfies every constraint of the phrase; ``best`` is
            then set.
        message: one line for the user: the explanation of the answer, or why there is none.
        best: the answer (None when ``success`` is False).
        alternatives: other candidates that satisfy the phrase, best first (``best`` excluded); with no
            answer, the best partial candidate (one that fits some of the phrase), if any.
        phrase: the phrase as given.
        parsed: what the parser understood.
        label_confidence: class label -> confidence that the target words name it.
        encoder_used: whether labels were matched with text embeddings (False: synonym table only).
        seconds: time the call took, seconds.
        encoder_seconds: of which in the text encoder (0 when all embeddings were cached).
        count: for "how many" phrases, the number of objects that fit (``best`` and ``alternatives``
            are those objects); None otherwise.
    """

    success: bool
    message: str
    best: GroundedObject | None
    alternatives: tuple[GroundedObject, ...]
    phrase: str
    parsed: ParsedPhrase
    label_confidence: dict[str, float] = field(default_factory=dict)
    encoder_used: bool = False
    seconds: float = 0.0
    encoder_seconds: float = 0.0
    count: int | None = None

    def to_dict(self) -> dict:
        """A JSON-ready form (for the CLI and services)."""

        def obj(g: GroundedObject) -> dict:
            o = g.object
            return {"id": o.id, "class_name": o.class_name, "score": round(g.score, 4),
                    "detection_score": round(o.score, 4), "confidence": round(float(o.confidence), 4),
                    "settled": bool(getattr(o, "settled", True)),
                    "colour": o.colour_name, "box": [round(float(v), 4) for v in o.box],
                    "explanation": g.explanation, "anchor_ids": list(g.anchor_ids)}

        return {
            "phrase": self.phrase, "success": self.success, "message": self.message,
            "best": obj(self.best) if self.best else None,
            "alternatives": [obj(a) for a in self.alternatives],
            "parsed": {"target": self.parsed.target.text,
                       "attributes": [a.word for a in self.parsed.target.attributes],
                       "relations": [{"relation": c.relation.value, "type": c.relation.type.value,
                                      "anchors": [a.text for a in c.anchors], "negated": c.negated}
                                     for c in self.parsed.clauses],
                       "notes": list(self.parsed.notes), "parser": self.parsed.parser,
                       "not_understood": list(self.parsed.unknown), "ignored": list(self.parsed.ignored)},
            "label_confidence": {k: round(v, 4) for k, v in self.label_confidence.items()},
            "encoder_used": self.encoder_used, "seconds": round(self.seconds, 6),
            "encoder_seconds": round(self.encoder_seconds, 6), "count": self.count,
        }
