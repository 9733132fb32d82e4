"""What a referring phrase says: the target noun phrase, its attributes and relations, and the word tables
both parsers read.

The dependency parser (``dependency.py``, spaCy) fills these structures when spaCy is installed; the
hand-written grammar of ``rule_parser.py`` is the fallback where it is not (``ParsedPhrase.parser`` says
which one read a phrase).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from ..classes import RelationType

__all__ = [
    "Attribute", "NounPhrase", "ParsedPhrase", "Relation", "RelationClause", "RelationType", "looks_english",
    "refusal", "split_foreign",
]

MAX_PHRASE_CHARS = 1000


class Relation(Enum):
    """One relation; its ``value`` is the word used in explanations."""

    NEAR = "near"
    NEXT_TO = "next to"  # the closest one, and close (not across the room)
    CLOSEST = "closest to"  # the closest one, however far
    FARTHEST = "farthest from"
    ABOVE = "above"
    BELOW = "below"
    ON = "on"
    UNDER = "under"
    SUPPORTING = "supporting"
    FRONT = "in front of"
    BEHIND = "behind"
    LEFT = "left of"
    RIGHT = "right of"
    BETWEEN = "between"
    END = "at the end of"  # at one of the anchor's short sides ("the chair at the end of the table")
    HANGING = "hanging from"  # held from above or from the side, not standing on anything ("the lamp hanging from")
    INSIDE = "inside"  # within the anchor's box, or resting in it ("the spoon inside the cup")

    @property
    def type(self) -> RelationType:
        return _TYPES[self]


_TYPES = {
    Relation.NEAR: RelationType.HORIZONTAL, Relation.CLOSEST: RelationType.HORIZONTAL,
    Relation.NEXT_TO: RelationType.HORIZONTAL,
    Relation.FARTHEST: RelationType.HORIZONTAL, Relation.ABOVE: RelationType.VERTICAL,
    Relation.BELOW: RelationType.VERTICAL, Relation.ON: RelationType.SUPPORT, Relation.UNDER: RelationType.SUPPORT,
    Relation.SUPPORTING: RelationType.SUPPORT, Relation.FRONT: RelationType.ALLOCENTRIC,
    Relation.BEHIND: RelationType.ALLOCENTRIC, Relation.LEFT: RelationType.ALLOCENTRIC,
    Relation.RIGHT: RelationType.ALLOCENTRIC, Relation.BETWEEN: RelationType.BETWEEN,
    Relation.END: RelationType.HORIZONTAL, Relation.HANGING: RelationType.SUPPORT,
    Relation.INSIDE: RelationType.SUPPORT,
}

_KEYWORDS: dict[str, Relation] = {
    # "next to"/"beside" name the closest one, and it must be close; "closest to" the closest one, however
    # far; "near" says it is close.
    "near": Relation.NEAR, "nearby": Relation.NEAR, "close to": Relation.NEAR, "by": Relation.NEAR,
    "next to": Relation.NEXT_TO, "beside": Relation.NEXT_TO, "adjacent to": Relation.NEXT_TO,
    "alongside": Relation.NEXT_TO, "right next to": Relation.NEXT_TO, "just beside": Relation.NEXT_TO,
    "closest to": Relation.CLOSEST, "nearest to": Relation.CLOSEST, "closest": Relation.CLOSEST,
    "nearest": Relation.CLOSEST, "farthest from": Relation.FARTHEST, "furthest from": Relation.FARTHEST,
    "far from": Relation.FARTHEST, "far away from": Relation.FARTHEST, "away from": Relation.FARTHEST,
    "farthest": Relation.FARTHEST, "furthest": Relation.FARTHEST,
    "above": Relation.ABOVE, "over": Relation.ABOVE, "higher than": Relation.ABOVE,
    "below": Relation.BELOW, "beneath": Relation.BELOW, "lower than": Relation.BELOW,
    "on": Relation.ON, "on top of": Relation.ON, "onto": Relation.ON, "upon": Relation.ON,
    "sitting on": Relation.ON, "resting on": Relation.ON, "lying on": Relation.ON, "placed on": Relation.ON,
    "standing on": Relation.ON, "in": Relation.ON, "inside": Relation.INSIDE, "inside of": Relation.INSIDE,
    "under": Relation.UNDER, "underneath": Relation.UNDER, "supporting": Relation.SUPPORTING,
    "holding": Relation.SUPPORTING, "carrying": Relation.SUPPORTING, "supports": Relation.SUPPORTING,
    "holds": Relation.SUPPORTING, "holding up": Relation.SUPPORTING,
    "sitting on top of": Relation.ON, "resting on top of": Relation.ON, "lying on top of": Relation.ON,
    "placed on top of": Relation.ON, "standing on top of": Relation.ON,
    "in front of": Relation.FRONT, "behind": Relation.BEHIND, "in back of": Relation.BEHIND,
    "at the back of": Relation.BEHIND, "facing the front of": Relation.FRONT, "at the front of": Relation.FRONT,
    "facing": Relation.FRONT,
    "left of": Relation.LEFT, "to the left of": Relation.LEFT, "on the left of": Relation.LEFT,
    "on the left side of": Relation.LEFT, "to the left side of": Relation.LEFT,
    "right of": Relation.RIGHT, "to the right of": Relation.RIGHT, "on the right of": Relation.RIGHT,
    "on the right side of": Relation.RIGHT, "to the right side of": Relation.RIGHT,
    "between": Relation.BETWEEN, "in between": Relation.BETWEEN,
    "at the end of": Relation.END, "at one end of": Relation.END, "at either end of": Relation.END,
    "on the end of": Relation.END, "at the head of": Relation.END, "at the short side of": Relation.END,
    # Held from above or from a wall (a verb and its preposition: the dependency parser joins them).
    **dict.fromkeys(("hanging from", "hanging on", "hanging off", "hangs from", "hangs on", "hung from", "hung on",
                     "suspended from", "mounted on", "mounted to", "attached to", "fixed to", "fixed on"),
                    Relation.HANGING),
}

_LEAD_INS = ("can you find", "could you find", "please find", "show me", "where is", "where's", "find me",
             "find", "locate", "select", "get", "give me", "pick", "point to", "please", "i want", "look for")
_ARTICLES = {"the", "a", "an", "this", "that", "some", "one", "any"}
_LINKERS = {"that", "which", "who", "is", "are", "it", "its", "it's", "thats", "that's", "being", "located",
            "placed", "positioned", "standing", "sitting", "lying", "also", "and", "both", "there", "here",
            "not", "isn't", "isnt", "aren't", "arent"}
_NEGATIONS = {"not", "isn't", "isnt", "aren't", "arent"}
_COUNT_LEAD_INS = ("how many", "count the", "count")
_COUNT_TAILS = (("do", "you", "see"), ("can", "you", "see"), ("are", "there"), ("is", "there"), ("in", "total"))
# Numbers of an anchor ("between the two plates", "with three cups on it"): how many anchors the relation needs.
_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "both": 2, "pair": 2, "couple": 2}
# "X with Y <relation> it": Y stands in the relation to X ("the table with the cups on it").
_PRONOUNS = {"it", "them", "itself", "themselves"}
# What "with" can name that is a part or a look of the object, not a thing the map holds ("the mug with the
# handle", "the cup with the flower pattern"): such a "with" cannot be checked.
_PART_WORDS = frozenset(
    "handle handles lid lids pattern patterns print prints stripe stripes dot dots spot spots logo logos label labels "
    "sticker stickers leg legs arm arms armrest armrests wheel wheels back backrest knob knobs button buttons door "
    "doors drawer drawers writing text words letters picture pictures photo image drawing design shape colour "
    "color edge edges corner corners spout cover top bottom side sides screen keys".split())

# Attributes: name -> (kind, sign). Size/height are evaluated on the boxes; colours are parsed only.
_SIZE_WORDS = {
    "largest": ("volume", 2), "biggest": ("volume", 2), "smallest": ("volume", -2), "tiniest": ("volume", -2),
    "big": ("volume", 1), "large": ("volume", 1), "huge": ("volume", 1), "small": ("volume", -1),
    "little": ("volume", -1), "tiny": ("volume", -1),
    "tallest": ("height", 2), "tall": ("height", 1), "shortest": ("height", -2), "short": ("height", -1),
    "highest": ("z", 2), "topmost": ("z", 2), "upper": ("z", 1), "top": ("z", 1),
    "lowest": ("z", -2), "bottom": ("z", -1), "lower": ("z", -1),
}
# Colour words are those object_colour knows ("gray", "golden" included); a shade word before one is
# part of it ("light blue" is blue). Materials are not colours (materials.py checks them).
_SHADES = {"light", "dark", "pale", "bright", "deep"}
_MATERIALS = {"wooden", "wood", "metal", "metallic", "plastic", "glass", "transparent", "striped", "colorful",
              "colourful", "leather", "ceramic", "paper", "fabric", "steel", "stainless", "white-ish", "cardboard"}

# Viewer-centred words. Multi-word forms become one "@kind:sign" token before parsing, so that they
# qualify the noun phrase they follow; single adjectives are read in _noun_phrase.
_VIEWER_ADJECTIVES = {
    "leftmost": ("lateral", -2), "left-most": ("lateral", -2), "rightmost": ("lateral", 2),
    "right-most": ("lateral", 2), "nearest": ("distance", -2), "closest": ("distance", -2),
    "farthest": ("distance", 2), "furthest": ("distance", 2),
}
_VIEWER_ANCHORS = {"me", "you", "us", "myself", "yourself", "robot", "camera", "viewer", "my", "your"}
# Relations that can be of the viewer ("next to me" is near me), and the key of _VIEWER_OF_RELATION for each.
VIEWER_RELATIONS = {Relation.NEAR: "near", Relation.NEXT_TO: "near", Relation.CLOSEST: "closest to",
                    Relation.FARTHEST: "farthest from", Relation.FRONT: "in front of", Relation.BEHIND: "behind",
                    Relation.LEFT: "left of", Relation.RIGHT: "right of"}
_VIEWER_OF_RELATION = {  # "<relation> me": (kind, sign)
    "near": ("distance", -1), "closest to": ("distance", -2), "farthest from": ("distance", 2),
    "in front of": ("ahead", 1), "behind": ("ahead", -1), "left of": ("lateral", -1), "right of": ("lateral", 1),
}


_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "1st": 1, "2nd": 2,
             "3rd": 3, "4th": 4, "5th": 5, "6th": 6}
STACK_KIND = "stack"  # Attribute.kind of an ordinal with no order of its own (grounding/structure_words.py)
_COLOURS = {"white", "black", "red", "green", "blue", "yellow", "orange", "purple", "pink", "brown", "grey", "gray",
            "silver", "golden", "gold", "beige", "tan", "violet", "magenta", "cyan", "turquoise", "navy", "maroon",
            "cream", "khaki", "lilac"}


@dataclass(frozen=True)
class Attribute:
    """An adjective of a noun phrase.

    Attributes:
        word: the word(s) as written ("largest", "light blue", "on the left").
        kind: "volume", "height" or "z" (evaluated on the boxes), "colour" (the objects' observed
            colour; ``colour`` holds the colour word), "material" ("wooden", "metal": checked on the
            observed colour, box and kind where those can tell, ``materials.material_holds``), or viewer-centred:
            "lateral" (left -/right +), "distance" (near -/far +) or "ahead" (in front +/behind -), seen
            from a viewpoint; ``STACK_KIND`` for an ordinal with no order ("the second shelf").
        sign: +2/-2 superlative (largest/smallest, leftmost/rightmost, nearest/farthest), +1/-1
            comparative adjective (big/small, on the left/right, near me, in front of/behind me); 0 for colours.
        rank: for ordinals, which one in the order the superlative gives (2: "the second chair from
            the left"); 0 when none.
        colour: the canonical colour word of a colour attribute ("gray" -> "grey"), else "".
    """

    word: str
    kind: str
    sign: int
    rank: int = 0
    colour: str = ""

    @property
    def viewer(self) -> bool:
        """Whether the attribute is seen from a viewpoint (left/right, near/far, in front/behind)."""
        return self.kind in ("lateral", "distance", "ahead")


@dataclass(frozen=True)
class NounPhrase:
    """A noun phrase: its head words (matched to class labels), attributes, and, for an anchor, its own
    relations ("the end of the table near the sink": the table's end is near the sink)."""

    text: str
    attributes: tuple[Attribute, ...] = ()
    clauses: tuple[RelationClause, ...] = ()
    count: int = 0  # how many of them the phrase names ("the two plates": 2); 0: not said (one)

    @property
    def empty(self) -> bool:
        return not self.text


@dataclass(frozen=True)
class RelationClause:
    """One relation of the target to one anchor (two for ``between``, or one counted anchor: "between the two
    cups"); ``negated``: "not <relation>"; ``inverse``: the anchor stands in the relation to the target ("the
    table with a bin under it": the bin is under the table)."""

    relation: Relation
    anchors: tuple[NounPhrase, ...]
    text: str
    negated: bool = False
    inverse: bool = False


@dataclass(frozen=True)
class ParsedPhrase:
    """What the parser understood.

    Attributes:
        text: the normalised phrase (lower case, single spaces).
        target: the target noun phrase (empty when none was found).
        clauses: relations to anchors, in phrase order.
        notes: words or constructs that were parsed but cannot be used (told to the user).
        count: the phrase asks how many objects fit ("how many chairs are there").
        parser: which parser read the phrase ("rules", or spaCy and its pipeline with versions).
        unknown: words the parser could not read (not English, or not understood in their place): an
            answer cannot be checked against them and says so.
        ignored: symbols and emoji left out (named in the answer).
    """

    text: str
    target: NounPhrase = field(default_factory=lambda: NounPhrase(""))
    clauses: tuple[RelationClause, ...] = ()
    notes: tuple[str, ...] = ()
    count: bool = False
    parser: str = "rules"
    unknown: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()

    @property
    def viewer(self) -> bool:
        """Whether any noun phrase has a viewer-centred attribute (a viewpoint is needed)."""
        phrases = [self.target, *(a for c in self.clauses for a in c.anchors)]
        return any(a.viewer for p in phrases for a in p.attributes)


def split_foreign(phrase: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """Take out the words no English parser can read: (the rest of the text, words with non-Latin letters
    ("杯子": unknown, an answer cannot be checked against them), symbols and emoji (ignored, and said so))."""
    text = str(phrase).replace("\u2019", "'").replace("\u2018", "'")
    kept, unknown, ignored = [], [], []
    for token in text.split():
        if token.isascii():
            kept.append(token)
            continue
        latin = "".join(c for c in token if c.isascii())
        foreign = "".join(c for c in token if not c.isascii())
        if any(c.isalpha() for c in foreign):  # a word of another script (or with its letters): unreadable
            unknown.append(token)
            continue
        ignored.append(foreign)
        if latin.strip(".,!?;:'\"()"):
            kept.append(latin)
    return " ".join(kept), tuple(dict.fromkeys(unknown)), tuple(dict.fromkeys(ignored))


def _normalise(phrase: str) -> str:
    text = phrase.lower().replace("’", "'")
    text = re.sub(r"[^a-z0-9',\s-]", " ", text)
    text = re.sub(r"\s*,\s*", " , ", text)
    return " ".join(text.split())


_COMMON = frozenset(
    "the a an of to on in at by is are it this that which with and or for from my your find show me where "
    "what get near next close far left right front behind above below under top side one object thing how many "
    "count there here see do can total".split()
)


def looks_english(phrase: str, extra_words: frozenset[str] = frozenset()) -> bool:
    """False for phrases of three or more words of which under 40% are English words this parser knows
    (or ``extra_words``: the words of the detector's class names)."""
    from .vocabulary import english_words  # late: vocabulary is the larger module

    words = _normalise(phrase).replace(",", " ").split()
    if len(words) < 3:
        return True
    known = (_COMMON | english_words() | _COLOURS | _SHADES | _MATERIALS | set(_SIZE_WORDS) | set(_ORDINALS)
             | set(_VIEWER_ADJECTIVES) | _VIEWER_ANCHORS | _NEGATIONS | set(_NUMBERS)
             | {w for k in _KEYWORDS for w in k.split()} | extra_words)
    return sum(w in known or w.rstrip("s") in known for w in words) >= 0.4 * len(words)


def refusal(phrase: object, vocabulary: tuple[str, ...] = (), rules: bool = True) -> str | None:
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
