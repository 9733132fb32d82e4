"""A small rule-based parser: a referring phrase -> target noun phrase, attributes and relations.

Grammar (case-insensitive; punctuation other than commas is ignored)::

    phrase    := [lead-in] target [clause (("," | "and" | ", and") clause)*]
    lead-in   := "find" | "show me" | "where is" | "locate" | "select" | "get" | "please" | ...
    target    := [article] [attribute]* noun-words [("that is" | "which is" | "that" | "which" | "who")]
    clause    := relation anchor | "between" anchor "and" anchor
    anchor    := [article] [attribute]* noun-words
    attribute := size/height superlatives ("largest", "smallest", "tallest", "highest", "lowest",
                 "big", "small", ...) and colours ("white", "red", ...; parsed, not evaluated)

Relations (EmbodiedScan's five types; the longest keyword at a position wins, so "on the
left of" is allocentric, not support):

* horizontal proximity: near, close to, by (near: fails when far); next to, beside, adjacent to,
  closest/nearest to (the closest one, however far); farthest/furthest from, far from
* vertical proximity: above, over, higher than, below, beneath, lower than
* support: on, on top of, sitting/resting/lying/placed (on top of | on), in, inside, under,
  underneath, supporting, supports, holding
* allocentric: in front of, facing (the front of), behind, in back of, at the back of,
  (to the | on the) left/right (side) of
* between: between A and B

Every clause qualifies the target ("the cup on the table next to the monitor" = a cup that is
on a table and next to a monitor), which is also the combined form "find the X that is A, and
B and C". Without an anchor, "closest"/"nearest" and "farthest" are not understood and are
reported. A colour word before a noun is an attribute; alone it is the noun ("the light").
Not understood: relations of an anchor to another anchor (they all qualify the target),
negation ("not on"), ordinals ("the second chair"), viewer-centred directions ("on my left").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

__all__ = [
    "Attribute", "NounPhrase", "ParsedPhrase", "Relation", "RelationClause", "RelationType", "looks_english",
    "parse_phrase",
]

MAX_PHRASE_CHARS = 1000


class RelationType(Enum):
    """EmbodiedScan's five relation types."""

    HORIZONTAL = "horizontal"  # near / closest / farthest
    VERTICAL = "vertical"  # above / below
    SUPPORT = "support"  # on / under / supporting
    ALLOCENTRIC = "allocentric"  # front / behind / left / right of an oriented anchor
    BETWEEN = "between"  # two anchors


class Relation(Enum):
    """One relation; its ``value`` is the word used in explanations."""

    NEAR = "near"
    CLOSEST = "closest to"
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

    @property
    def type(self) -> RelationType:
        return _TYPES[self]


_TYPES = {
    Relation.NEAR: RelationType.HORIZONTAL, Relation.CLOSEST: RelationType.HORIZONTAL,
    Relation.FARTHEST: RelationType.HORIZONTAL, Relation.ABOVE: RelationType.VERTICAL,
    Relation.BELOW: RelationType.VERTICAL, Relation.ON: RelationType.SUPPORT, Relation.UNDER: RelationType.SUPPORT,
    Relation.SUPPORTING: RelationType.SUPPORT, Relation.FRONT: RelationType.ALLOCENTRIC,
    Relation.BEHIND: RelationType.ALLOCENTRIC, Relation.LEFT: RelationType.ALLOCENTRIC,
    Relation.RIGHT: RelationType.ALLOCENTRIC, Relation.BETWEEN: RelationType.BETWEEN,
}

_KEYWORDS: dict[str, Relation] = {
    # "next to"/"beside" name the closest one, however far; "near" also says it is close.
    "near": Relation.NEAR, "nearby": Relation.NEAR, "close to": Relation.NEAR, "by": Relation.NEAR,
    "next to": Relation.CLOSEST, "beside": Relation.CLOSEST, "adjacent to": Relation.CLOSEST,
    "alongside": Relation.CLOSEST, "right next to": Relation.CLOSEST, "just beside": Relation.CLOSEST,
    "closest to": Relation.CLOSEST, "nearest to": Relation.CLOSEST, "closest": Relation.CLOSEST,
    "nearest": Relation.CLOSEST, "farthest from": Relation.FARTHEST, "furthest from": Relation.FARTHEST,
    "far from": Relation.FARTHEST, "far away from": Relation.FARTHEST, "away from": Relation.FARTHEST,
    "farthest": Relation.FARTHEST, "furthest": Relation.FARTHEST,
    "above": Relation.ABOVE, "over": Relation.ABOVE, "higher than": Relation.ABOVE,
    "below": Relation.BELOW, "beneath": Relation.BELOW, "lower than": Relation.BELOW,
    "on": Relation.ON, "on top of": Relation.ON, "onto": Relation.ON, "upon": Relation.ON,
    "sitting on": Relation.ON, "resting on": Relation.ON, "lying on": Relation.ON, "placed on": Relation.ON,
    "standing on": Relation.ON, "in": Relation.ON, "inside": Relation.ON, "inside of": Relation.ON,
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
}
# Keyword token sequences, longest first, so that the longest match at a position wins.
_KEY_TOKENS = sorted(((tuple(k.split()), r) for k, r in _KEYWORDS.items()), key=lambda kr: -len(kr[0]))

_LEAD_INS = ("can you find", "could you find", "please find", "show me", "where is", "where's", "find me",
             "find", "locate", "select", "get", "give me", "pick", "point to", "please", "i want", "look for")
_ARTICLES = {"the", "a", "an", "this", "that", "some", "one", "any"}
_LINKERS = {"that", "which", "who", "is", "are", "it", "its", "it's", "thats", "that's", "being", "located",
            "placed", "positioned", "standing", "sitting", "lying", "also", "and", "both"}

# Attributes: name -> (kind, sign). Size/height are evaluated on the boxes; colours are parsed only.
_SIZE_WORDS = {
    "largest": ("volume", 2), "biggest": ("volume", 2), "smallest": ("volume", -2), "tiniest": ("volume", -2),
    "big": ("volume", 1), "large": ("volume", 1), "huge": ("volume", 1), "small": ("volume", -1),
    "little": ("volume", -1), "tiny": ("volume", -1),
    "tallest": ("height", 2), "tall": ("height", 1), "shortest": ("height", -2), "short": ("height", -1),
    "highest": ("z", 2), "topmost": ("z", 2), "upper": ("z", 1), "top": ("z", 1),
    "lowest": ("z", -2), "bottom": ("z", -1), "lower": ("z", -1),
}
_COLOURS = {"white", "black", "red", "green", "blue", "yellow", "orange", "purple", "pink", "brown", "grey",
            "gray", "silver", "golden", "gold", "wooden", "metal", "metallic", "plastic", "glass", "dark",
            "light", "beige", "transparent", "striped", "colorful", "colourful"}


@dataclass(frozen=True)
class Attribute:
    """An adjective of a noun phrase.

    Attributes:
        word: the word as written.
        kind: "volume", "height" or "z" (evaluated on the boxes) or "colour" (not observable here).
        sign: +2/-2 superlative (largest/smallest), +1/-1 comparative adjective (big/small); 0 for colours.
    """

    word: str
    kind: str
    sign: int


@dataclass(frozen=True)
class NounPhrase:
    """A noun phrase: its head words (matched to class labels) and attributes."""

    text: str
    attributes: tuple[Attribute, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.text


@dataclass(frozen=True)
class RelationClause:
    """One relation of the target to one anchor (two for ``between``)."""

    relation: Relation
    anchors: tuple[NounPhrase, ...]
    text: str


@dataclass(frozen=True)
class ParsedPhrase:
    """What the parser understood.

    Attributes:
        text: the normalised phrase (lower case, single spaces).
        target: the target noun phrase (empty when none was found).
        clauses: relations to anchors, in phrase order.
        notes: words or constructs that were parsed but cannot be used (told to the user).
    """

    text: str
    target: NounPhrase = field(default_factory=lambda: NounPhrase(""))
    clauses: tuple[RelationClause, ...] = ()
    notes: tuple[str, ...] = ()


def _noun_phrase(tokens: list[str]) -> tuple[NounPhrase, list[str]]:
    """Tokens -> noun phrase (articles and linkers dropped, attributes split off) and notes."""
    words, attrs, notes = [], [], []
    tokens = [t for t in tokens if not (t in _ARTICLES or t in _LINKERS or t == ",")]
    for k, tok in enumerate(tokens):
        if tok in _SIZE_WORDS:
            kind, sign = _SIZE_WORDS[tok]
            attrs.append(Attribute(tok, kind, sign))
        elif tok in _COLOURS and not words and any(_noun_like(t) for t in tokens[k + 1:]):
            # A colour before a noun is an adjective; alone it is the noun ("the light", "the glass").
            attrs.append(Attribute(tok, "colour", 0))
            notes.append(f"colour '{tok}' is not observed by the memory; ignored")
        else:
            words.append(tok)
    return NounPhrase(" ".join(words), tuple(attrs)), notes


_SUPERLATIVE_RELATIONS = {"closest", "nearest", "farthest", "furthest"}


def _content(token: str) -> bool:
    """Whether a token can be (part of) a noun: not an article, linker, comma, size word or
    superlative; colour words can ("the light", "the glass")."""
    return not (token in _ARTICLES or token in _LINKERS or token == "," or token in _SIZE_WORDS
                or token in _SUPERLATIVE_RELATIONS)


def _noun_like(token: str) -> bool:
    """A content word that is not a colour."""
    return _content(token) and token not in _COLOURS


def _clause_text(tokens: list[str]) -> str:
    while tokens and tokens[-1] in (",", "and"):
        tokens = tokens[:-1]
    return " ".join(tokens)


def _match_keyword(tokens: list[str], i: int) -> tuple[Relation, int] | None:
    for key, rel in _KEY_TOKENS:
        if tuple(tokens[i:i + len(key)]) == key:
            return rel, len(key)
    return None


def _normalise(phrase: str) -> str:
    text = phrase.lower().replace("’", "'")
    text = re.sub(r"[^a-z0-9',\s-]", " ", text)
    text = re.sub(r"\s*,\s*", " , ", text)
    return " ".join(text.split())


_COMMON = frozenset(
    "the a an of to on in at by is are it this that which with and or for from my your find show me where "
    "what get near next close far left right front behind above below under top side one object thing".split()
)


def looks_english(phrase: str) -> bool:
    """False for phrases of three or more words of which under 40% are English words this parser knows."""
    from .vocabulary import english_words  # late: vocabulary is the larger module

    words = _normalise(phrase).replace(",", " ").split()
    if len(words) < 3:
        return True
    known = _COMMON | english_words() | _COLOURS | set(_SIZE_WORDS) | {w for k in _KEYWORDS for w in k.split()}
    return sum(w in known for w in words) >= 0.4 * len(words)


def parse_phrase(phrase: str) -> ParsedPhrase:
    """Parse a referring phrase (see the module docstring for the grammar). Never raises.

    Args:
        phrase: any text; longer than ``MAX_PHRASE_CHARS`` is cut there (the caller refuses it first).

    Returns:
        The parse; ``target.empty`` when no target words were found.
    """
    text = _normalise(str(phrase)[:MAX_PHRASE_CHARS])
    for lead in _LEAD_INS:
        if text == lead or text.startswith(lead + " "):
            text = text[len(lead):].strip()
            break
    tokens = text.split()
    # Cut the token list at relation keywords; the words before the first keyword are the target.
    spans: list[tuple[Relation, int, int]] = []  # (relation, keyword start, anchor start)
    early_notes: list[str] = []
    i = 0
    while i < len(tokens):
        # A relation needs a target before it ("the closest chair" has none: "closest" is then an adjective).
        has_target = any(_content(t) for t in tokens[:i])
        hit = _match_keyword(tokens, i) if has_target else None
        if hit is None:
            if tokens[i] in _SUPERLATIVE_RELATIONS and not has_target:
                early_notes.append(f"'{tokens[i]}' without an object is not understood ({tokens[i]} to what?)")
            i += 1
            continue
        spans.append((hit[0], i, i + hit[1]))
        i += hit[1]
    end = spans[0][1] if spans else len(tokens)
    target, notes = _noun_phrase([t for t in tokens[:end] if t not in _SUPERLATIVE_RELATIONS])
    notes = early_notes + notes
    clauses = []
    for k, (rel, start, anchor_start) in enumerate(spans):
        stop = spans[k + 1][1] if k + 1 < len(spans) else len(tokens)
        anchor_tokens = tokens[anchor_start:stop]
        while anchor_tokens and anchor_tokens[-1] in _LINKERS | {","}:
            anchor_tokens = anchor_tokens[:-1]
        if rel is Relation.BETWEEN:
            joint = anchor_tokens.index("and") if "and" in anchor_tokens else len(anchor_tokens)
            parts = [anchor_tokens[:joint], anchor_tokens[joint + 1:]]
            anchors = []
            for part in parts:
                np_, n = _noun_phrase(part)
                anchors.append(np_)
                notes += n
            if any(a.empty for a in anchors):
                notes.append("'between' needs two objects (between A and B)")
                continue
            clauses.append(RelationClause(rel, tuple(anchors), _clause_text(tokens[start:stop])))
            continue
        anchor, n = _noun_phrase(anchor_tokens)
        notes += n
        if anchor.empty:
            if rel in (Relation.CLOSEST, Relation.FARTHEST):
                notes.append(f"'{rel.value}' without an object is not understood (closest to what?)")
            else:
                notes.append(f"'{' '.join(tokens[start:anchor_start])}' has no object after it; ignored")
            continue
        clauses.append(RelationClause(rel, (anchor,), _clause_text(tokens[start:stop])))
    return ParsedPhrase(" ".join(tokens), target, tuple(clauses), tuple(dict.fromkeys(notes)))
