"""What a referring phrase says (target noun phrase, attributes, relations), and the rule-based parser.

The dependency parser (``dependency.py``, spaCy) fills the same structures and is used when spaCy is
installed; the hand-written grammar below is the fallback where it is not (``ParsedPhrase.parser`` says
which one read a phrase).

Grammar (case-insensitive; punctuation other than commas is ignored)::

    phrase    := [lead-in] target [clause (("," | "and" | ", and") clause)*]
    lead-in   := "find" | "show me" | "where is" | "locate" | "select" | "get" | "please" | ...
                 | "how many" | "count" (a count: how many objects fit)
    target    := [article] [ordinal] [attribute]* noun-words [viewer] [("that is" | "which is" | "that" | ...)]
    clause    := ["not"] relation anchor | ["not"] "between" anchor "and" anchor
    anchor    := [article] [attribute]* noun-words [viewer] | viewer-anchor
    attribute := size/height superlatives ("largest", "smallest", "tallest", "highest", "lowest",
                 "big", "small", ...), colours ("white", "red", "light blue", ...: the objects'
                 observed colour), viewer superlatives ("leftmost", "rightmost", "nearest", "closest",
                 "farthest", "far left")
    viewer    := ("on" | "to" | "at") ("the" | "my" | "your") ("left" | "right") ["side" | "hand side"]
                 | "from the left" | "from the right" (after an ordinal: "the second chair from the left")
    viewer-anchor := "me" | "you" | "us" | "the robot" | "the camera" | "the viewer" (after a relation:
                 "closest to me", "in front of the robot", "behind me", "on my left", "near me")
    ordinal   := "first" | "second" | ... | "2nd" | ... (with a viewer superlative or "from the left/right")

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
B and C"; "not" before a relation negates it ("the cup that is not on the table"). Viewer-centred
words ("the monitor on the left", "the nearest chair", "the cup closest to me", "the second
chair from the left") become attributes evaluated from a camera pose (``viewpoint.py``); without
an anchor, "closest"/"nearest"/"farthest" and "in front"/"behind" are viewer-centred too. A
colour word before a noun is an attribute; alone it is the noun ("the light", "the orange").
Materials and other adjectives the parser does not know ("plastic", "wooden", "glass") stay
words of the noun ("plastic box"), which the label matcher reads (its head word "box", or the
whole phrase's embedding). Not understood: relations of an anchor to another anchor (they all
qualify the target), ordinals of anything but a viewer order ("the second cup from the sink").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from enum import Enum

from ..classes import RelationType
from ..memory.object_colour import colour_word

__all__ = [
    "Attribute", "NounPhrase", "ParsedPhrase", "Relation", "RelationClause", "RelationType", "looks_english",
    "parse_phrase", "split_foreign",
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
    Relation.END: RelationType.HORIZONTAL,
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
    "at the end of": Relation.END, "at one end of": Relation.END, "at either end of": Relation.END,
    "on the end of": Relation.END, "at the head of": Relation.END, "at the short side of": Relation.END,
}
# Keyword token sequences, longest first, so that the longest match at a position wins.
_KEY_TOKENS = sorted(((tuple(k.split()), r) for k, r in _KEYWORDS.items()), key=lambda kr: -len(kr[0]))

_LEAD_INS = ("can you find", "could you find", "please find", "show me", "where is", "where's", "find me",
             "find", "locate", "select", "get", "give me", "pick", "point to", "please", "i want", "look for")
_ARTICLES = {"the", "a", "an", "this", "that", "some", "one", "any"}
_LINKERS = {"that", "which", "who", "is", "are", "it", "its", "it's", "thats", "that's", "being", "located",
            "placed", "positioned", "standing", "sitting", "lying", "also", "and", "both", "there", "here",
            "not", "isn't", "isnt", "aren't", "arent"}
_NEGATIONS = {"not", "isn't", "isnt", "aren't", "arent"}
_COUNT_LEAD_INS = ("how many", "count the", "count")
_COUNT_TAILS = (("do", "you", "see"), ("can", "you", "see"), ("are", "there"), ("is", "there"), ("in", "total"))

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
# part of it ("light blue" is blue). Materials are not colours: they stay words of the noun.
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


def _viewer_patterns() -> list[tuple[tuple[str, ...], str, int]]:
    out = []
    for side, sign in (("left", -1), ("right", 1)):
        for prep in ("on", "to", "at"):
            for det in ("the", "my", "your"):
                for tail in ((), ("side",), ("hand", "side"), ("hand-side",)):
                    out.append(((prep, det, side, *tail), "lateral", sign))
                out.append(((prep, det, "far", side), "lateral", 2 * sign))
        for lead in (("far",), ("furthest",), ("farthest",), ("most",), ("from", "the"), ("from", "my"),
                     ("from", "your")):
            out.append(((*lead, side), "lateral", 2 * sign))
    out += [(("in", "front"), "ahead", 1), (("straight", "ahead"), "ahead", 1), (("ahead",), "ahead", 1)]
    return sorted(out, key=lambda p: -len(p[0]))


_VIEWER_PATTERNS = _viewer_patterns()
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
            observed colour where a colour can tell, ``colours.material_fits``), or viewer-centred:
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

    @property
    def empty(self) -> bool:
        return not self.text


@dataclass(frozen=True)
class RelationClause:
    """One relation of the target to one anchor (two for ``between``); ``negated``: "not <relation>"."""

    relation: Relation
    anchors: tuple[NounPhrase, ...]
    text: str
    negated: bool = False


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


def _noun_phrase(tokens: list[str]) -> tuple[NounPhrase, list[str]]:
    """Tokens -> noun phrase (articles and linkers dropped, attributes split off) and notes."""
    words: list[str] = []
    attrs: list[Attribute] = []
    notes: list[str] = []
    rank = 0
    tokens = [t for t in tokens if not (t in _ARTICLES or t in _LINKERS or t == ",")]
    k = 0
    while k < len(tokens):
        tok = tokens[k]
        nxt = tokens[k + 1] if k + 1 < len(tokens) else ""
        if tok.startswith("@"):  # a viewer pattern ("on the left"), see _mark_viewer_patterns
            kind, sign, written = tok[1:].split(":")
            attrs.append(Attribute(written.replace("_", " "), kind, int(sign)))
        elif tok in _ORDINALS:
            rank = _ORDINALS[tok]
        elif tok in _SIZE_WORDS:
            kind, sign = _SIZE_WORDS[tok]
            attrs.append(Attribute(tok, kind, sign))
        elif tok in _VIEWER_ADJECTIVES:
            kind, sign = _VIEWER_ADJECTIVES[tok]
            attrs.append(Attribute(tok, kind, sign))
        elif tok in _SHADES and colour_word(nxt) and not words and any(_noun_like(t) for t in tokens[k + 2:]):
            attrs.append(Attribute(f"{tok} {nxt}", "colour", 0, colour=str(colour_word(nxt))))
            k += 1
        elif colour_word(tok) and not words and any(_noun_like(t) for t in tokens[k + 1:]):
            # A colour before a noun is an adjective; alone it is the noun ("the orange").
            attrs.append(Attribute(tok, "colour", 0, colour=str(colour_word(tok))))
        else:
            words.append(tok)
        k += 1
    if rank:
        ordered = [i for i, a in enumerate(attrs) if a.viewer and abs(a.sign) == 2]
        if ordered:
            first = attrs[ordered[0]]
            attrs[ordered[0]] = replace(first, rank=rank, word=f"{_ordinal_word(rank)} {first.word}")
        else:  # "the second shelf": stacked things count from the top (grounding/structure_words.py)
            attrs.append(Attribute(_ordinal_word(rank), STACK_KIND, 0, rank=rank))
    return NounPhrase(" ".join(words), tuple(attrs)), notes


def _ordinal_word(rank: int) -> str:
    return next(w for w, r in _ORDINALS.items() if r == rank)


def _mark_viewer_patterns(tokens: list[str]) -> list[str]:
    """Replace multi-word viewer phrases ("on the left", "from the right", "far left") by one
    "@kind:sign:words" token, unless they start an allocentric relation ("on the left side of the sofa")."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        keyword = _match_keyword(tokens, i)
        for pattern, kind, sign in _VIEWER_PATTERNS:
            n = len(pattern)
            allocentric = (keyword is not None and keyword[1] >= n) or tokens[i + n:i + n + 1] == ["of"]
            if tuple(tokens[i:i + n]) == pattern and not allocentric:
                out.append(f"@{kind}:{sign}:{'_'.join(pattern)}")
                i += n
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


_SUPERLATIVE_RELATIONS = {"closest", "nearest", "farthest", "furthest"}


def _content(token: str) -> bool:
    """Whether a token can be (part of) a noun: not an article, linker, comma, size word,
    superlative, ordinal or viewer pattern; colour words can ("the light", "the glass")."""
    return not (token in _ARTICLES or token in _LINKERS or token == "," or token in _SIZE_WORDS
                or token in _SUPERLATIVE_RELATIONS or token in _ORDINALS or token in _VIEWER_ADJECTIVES
                or token.startswith("@"))


def _noun_like(token: str) -> bool:
    """A content word that is not a colour or a shade."""
    return _content(token) and not colour_word(token) and token not in _SHADES


def _clause_text(tokens: list[str]) -> str:
    while tokens and tokens[-1] in (",", "and"):
        tokens = tokens[:-1]
    return " ".join(tokens)


def _match_keyword(tokens: list[str], i: int) -> tuple[Relation, int] | None:
    for key, rel in _KEY_TOKENS:
        if tuple(tokens[i:i + len(key)]) == key:
            return rel, len(key)
    return None


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
             | set(_VIEWER_ADJECTIVES) | _VIEWER_ANCHORS | _NEGATIONS | {w for k in _KEYWORDS for w in k.split()}
             | extra_words)
    return sum(w in known or w.rstrip("s") in known for w in words) >= 0.4 * len(words)


def parse_phrase(phrase: str) -> ParsedPhrase:
    """Parse a referring phrase (see the module docstring for the grammar). Never raises.

    Args:
        phrase: any text; longer than ``MAX_PHRASE_CHARS`` is cut there (the caller refuses it first).

    Returns:
        The parse; ``target.empty`` when no target words were found.
    """
    clean, unknown, ignored = split_foreign(str(phrase)[:MAX_PHRASE_CHARS])
    text = _normalise(clean)
    count = False
    for lead in _COUNT_LEAD_INS:
        if text.startswith(lead + " "):
            text, count = text[len(lead):].strip(), True
            break
    for lead in _LEAD_INS:
        if text == lead or text.startswith(lead + " "):
            text = text[len(lead):].strip()
            break
    words = text.split()
    if count:
        for tail in _COUNT_TAILS:
            if tuple(words[-len(tail):]) == tail:
                words = words[:-len(tail)]
    tokens = _mark_viewer_patterns(words)
    # "the nearest chair to the sink": a superlative before the target takes "to"/"from" as its relation.
    lead_sup = next((i for i, t in enumerate(tokens) if t in _SUPERLATIVE_RELATIONS
                     and not any(_content(x) for x in tokens[:i])), None)
    # Cut the token list at relation keywords; the words before the first keyword are the target.
    spans: list[tuple[Relation, int, int, bool]] = []  # (relation, keyword start, anchor start, negated)
    i = 0
    while i < len(tokens):
        # A relation needs a target before it ("the closest chair" has none: "closest" is then an adjective).
        has_target = any(_content(t) for t in tokens[:i])
        hit = _match_keyword(tokens, i) if has_target else None
        if hit is None and lead_sup is not None and has_target and tokens[i] in ("to", "from"):
            hit = (Relation.FARTHEST if tokens[lead_sup] in ("farthest", "furthest") else Relation.CLOSEST, 1)
            tokens[lead_sup] = ","  # the superlative is the relation now, no longer an adjective
            lead_sup = None
        if hit is None:
            i += 1
            continue
        negated = any(t in _NEGATIONS for t in tokens[max(0, i - 2):i])
        spans.append((hit[0], i, i + hit[1], negated))
        i += hit[1]
    end = spans[0][1] if spans else len(tokens)
    target, notes = _noun_phrase(tokens[:end])
    clauses = []
    viewer_attrs: list[Attribute] = []
    for k, (rel, start, anchor_start, negated) in enumerate(spans):
        stop = spans[k + 1][1] if k + 1 < len(spans) else len(tokens)
        anchor_tokens = tokens[anchor_start:stop]
        while anchor_tokens and anchor_tokens[-1] in _LINKERS | {","}:
            anchor_tokens = anchor_tokens[:-1]
        text = _clause_text(tokens[start:stop])
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
            clauses.append(RelationClause(rel, tuple(anchors), text, negated))
            continue
        anchor, n = _noun_phrase(anchor_tokens)
        notes += n
        viewer = _viewer_attribute(rel, anchor, text)
        if viewer is not None:
            viewer_attrs += viewer[0]
            notes += viewer[1]
            continue
        if anchor.empty:
            notes.append(f"'{' '.join(tokens[start:anchor_start])}' has no object after it; ignored")
            continue
        clauses.append(RelationClause(rel, (anchor,), text, negated))
    if viewer_attrs:
        target = NounPhrase(target.text, target.attributes + tuple(viewer_attrs))
    return ParsedPhrase(" ".join(words), target, tuple(clauses), tuple(dict.fromkeys(notes)), count, "rules",
                        unknown, ignored)


def _viewer_attribute(rel: Relation, anchor: NounPhrase, text: str) -> tuple[list[Attribute], list[str]] | None:
    """A relation to the viewer ("closest to me", "behind the robot") or to nothing ("in front",
    "the chair nearest") as the target's viewer attributes (and notes); None for an ordinary relation."""
    words = anchor.text.split()
    if words and not all(w in _VIEWER_ANCHORS for w in words):
        return None
    if rel in (Relation.CLOSEST, Relation.FARTHEST) and not words:  # "the chair nearest"
        return [Attribute(text, "distance", -2 if rel is Relation.CLOSEST else 2)], []
    if not words and rel not in (Relation.FRONT, Relation.BEHIND):
        return None  # "on the" ... with nothing after it: noted by the caller
    key = VIEWER_RELATIONS.get(rel)
    if key is None:
        return [], [f"'{text}' is not understood of the viewer; ignored"]
    kind, sign = _VIEWER_OF_RELATION[key]
    return [Attribute(text, kind, sign), *anchor.attributes], []
