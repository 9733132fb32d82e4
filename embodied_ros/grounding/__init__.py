"""Grounding: referring phrases ("the cup on the table next to the monitor") to objects in the scene memory,
and back: referring expressions of objects, and the scene graph."""

from .describe import Description, check_description, describe_objects
from .engine import Grounder, GrounderConfig
from .map_view import published_snapshot
from .phrases import Attribute, NounPhrase, ParsedPhrase, Relation, RelationClause, RelationType
from .results import GroundedObject, GroundingResult
from .rule_parser import parse_phrase
from .scene_graph import scene_graph
from .text_encoder import CachedTextEncoder, TextEncoder
from .viewpoint import Viewpoint
from .vocabulary import LabelMatcher

__all__ = [
    "Attribute", "CachedTextEncoder", "Description", "GroundedObject", "Grounder", "GrounderConfig",
    "GroundingResult", "LabelMatcher", "NounPhrase", "ParsedPhrase", "Relation", "RelationClause", "RelationType",
    "TextEncoder", "Viewpoint", "check_description", "describe_objects", "parse_phrase", "published_snapshot",
    "scene_graph",
]
