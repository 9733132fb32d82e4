"""Grounding: referring phrases ("the cup on the table next to the monitor") to objects in the scene memory."""

from .engine import Grounder, GrounderConfig
from .phrases import Attribute, NounPhrase, ParsedPhrase, Relation, RelationClause, RelationType, parse_phrase
from .results import GroundedObject, GroundingResult
from .text_encoder import TextEncoder
from .vocabulary import LabelMatcher

__all__ = [
    "Attribute", "GroundedObject", "Grounder", "GrounderConfig", "GroundingResult", "LabelMatcher", "NounPhrase",
    "ParsedPhrase", "Relation", "RelationClause", "RelationType", "TextEncoder", "parse_phrase",
]
