"""The grounding engine's settings (``GrounderConfig``): one frozen dataclass, the one place their defaults live."""

from __future__ import annotations

from dataclasses import dataclass

from ..classes import ROOM_FACING_CLASSES

__all__ = ["GrounderConfig"]


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
