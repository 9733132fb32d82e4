"""The rule-based parser: a hand-written grammar of referring phrases, the fallback where spaCy is not installed
(``dependency.py`` answers where it is; ``ParsedPhrase.parser`` says which one read a phrase).

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
colour word before a noun is an attribute; alone it is the noun ("the light", "the orange"); so is a
material ("the plastic box"; "the paper on the table"). "X with Y [relation it]" and numbers of an anchor
("between the two plates") are read as ``dependency.py`` reads them. Other adjectives the parser does not
know ("loose") stay words of the noun, which the label matcher reads (its head word, or the whole phrase's
embedding). Not understood: relations of an anchor to another anchor (they all qualify the target),
ordinals of anything but a viewer order ("the second cup from the sink").
"""

from __future__ import annotations

from dataclasses import replace

from ..memory.object_colour import colour_word
from .materials import MATERIALS
from .phrases import (
    _ARTICLES,
    _COUNT_LEAD_INS,
    _COUNT_TAILS,
    _KEYWORDS,
    _LEAD_INS,
    _LINKERS,
    _NEGATIONS,
    _NUMBERS,
    _ORDINALS,
    _PART_WORDS,
    _PRONOUNS,
    _SHADES,
    _SIZE_WORDS,
    _VIEWER_ADJECTIVES,
    _VIEWER_ANCHORS,
    _VIEWER_OF_RELATION,
    MAX_PHRASE_CHARS,
    STACK_KIND,
    VIEWER_RELATIONS,
    Attribute,
    NounPhrase,
    ParsedPhrase,
    Relation,
    RelationClause,
    _normalise,
    split_foreign,
)

__all__ = ["parse_phrase"]

# Keyword token sequences, longest first, so that the longest match at a position wins.
_KEY_TOKENS = sorted(((tuple(k.split()), r) for k, r in _KEYWORDS.items()), key=lambda kr: -len(kr[0]))


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

def _noun_phrase(tokens: list[str]) -> tuple[NounPhrase, list[str]]:
    """Tokens -> noun phrase (articles and linkers dropped, attributes split off) and notes."""
    words: list[str] = []
    attrs: list[Attribute] = []
    notes: list[str] = []
    rank = count = 0
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
        elif (tok in _NUMBERS or tok.isdigit()) and not words:  # "the two plates"
            count = _NUMBERS.get(tok) or int(tok)
        elif tok in MATERIALS and not words and any(_noun_like(t) for t in tokens[k + 1:]):
            attrs.append(Attribute(tok, "material", 0))  # "the plastic box"; alone it is the noun ("the paper")
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
    return NounPhrase(" ".join(words), tuple(attrs), count=count), notes


def _with(tokens: list[str]) -> tuple[list[str], RelationClause | None, list[str]]:
    """"X with Y [relation it]" (see ``dependency._Reader._with``): the tokens without it, its clause (None
    when there is none), and what cannot be read ("with a handle": a part of an object)."""
    if "with" not in tokens[1:]:
        return tokens, None, []
    w = tokens.index("with")
    rest = tokens[w + 1:]
    said = next(((k, hit) for k in range(len(rest)) if (hit := _match_keyword(rest, k)) is not None
                 and rest[k + hit[1]:k + hit[1] + 1] and rest[k + hit[1]] in _PRONOUNS), None)
    if said is not None:
        (k, (relation, n)), tail = said, rest[said[0] + said[1][1] + 1:]
        text = " ".join(["with", *rest[:k + n + 1]])
    else:
        k = next((k for k in range(len(rest)) if _match_keyword(rest, k) is not None), len(rest))
        relation, tail, text = Relation.SUPPORTING, rest[k:], " ".join(["with", *rest[:k]])
    anchor, _ = _noun_phrase(rest[:k])
    if said is None and anchor.text.split()[-1:] and anchor.text.split()[-1] in _PART_WORDS:
        return tokens[:w] + tail, None, [f"{text} (a part or look of an object; the map holds whole objects)"]
    if relation is Relation.ON and said is not None and rest[said[0]] in ("in", "into", "within"):
        relation = Relation.INSIDE  # "with the spoon in it": it contains the spoon
    if relation is Relation.ON:
        relation = Relation.SUPPORTING
    return tokens[:w] + tail, RelationClause(relation, (anchor,), text, inverse=relation is not Relation.SUPPORTING), []


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


def parse_phrase(phrase: str) -> ParsedPhrase:
    """Parse a referring phrase (see the module docstring for the grammar). Never raises.

    Args:
        phrase: any text; longer than ``MAX_PHRASE_CHARS`` is cut there (the caller refuses it first).

    Returns:
        The parse; ``target.empty`` when no target words were found.
    """
    clean, unknown, ignored = split_foreign(str(phrase)[:MAX_PHRASE_CHARS])
    words, count = _without_lead_in(_normalise(clean))
    tokens, with_clause, unread = _with(_mark_viewer_patterns(words))
    spans = _relation_spans(tokens)
    end = spans[0][1] if spans else len(tokens)  # the words before the first keyword are the target
    target, notes = _noun_phrase(tokens[:end])
    clauses = [with_clause] if with_clause is not None and not with_clause.anchors[0].empty else []
    viewer_attrs: list[Attribute] = []
    for k, span in enumerate(spans):
        stop = spans[k + 1][1] if k + 1 < len(spans) else len(tokens)
        clause, viewer, span_notes, span_unread = _span_clause(span, tokens, stop)
        clauses += [clause] if clause is not None else []
        viewer_attrs += viewer
        notes += span_notes
        unread += span_unread
    if viewer_attrs:
        target = NounPhrase(target.text, target.attributes + tuple(viewer_attrs))
    return ParsedPhrase(" ".join(words), target, tuple(clauses), tuple(dict.fromkeys(notes)), count, "rules",
                        (*unknown, *unread), ignored)


def _without_lead_in(text: str) -> tuple[list[str], bool]:
    """The normalised phrase's words without lead-ins ("find", "show me", "how many ... are there"), and whether
    it asks for a count."""
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
    return words, count


# A relation keyword in the token list: (relation, keyword start, anchor start, negated).
_Span = tuple[Relation, int, int, bool]


def _relation_spans(tokens: list[str]) -> list[_Span]:
    """Where the token list is cut at relation keywords. A superlative before the target takes "to"/"from" as
    its relation ("the nearest chair to the sink"): its token is then replaced by "," in ``tokens``."""
    lead_sup = next((i for i, t in enumerate(tokens) if t in _SUPERLATIVE_RELATIONS
                     and not any(_content(x) for x in tokens[:i])), None)
    spans: list[_Span] = []
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
    return spans


# What one relation span reads as: (its clause or None, viewer attributes of the target, notes, words not read).
_SpanReading = tuple[RelationClause | None, list[Attribute], list[str], list[str]]


def _span_clause(span: _Span, tokens: list[str], stop: int) -> _SpanReading:
    """The relation of the span up to ``stop`` (where the next one starts): a clause, or the target's viewer
    attributes ("closest to me"), or a note why it is ignored."""
    rel, start, anchor_start, negated = span
    anchor_tokens = tokens[anchor_start:stop]
    while anchor_tokens and anchor_tokens[-1] in _LINKERS | {","}:
        anchor_tokens = anchor_tokens[:-1]
    text = _clause_text(tokens[start:stop])
    if rel is Relation.BETWEEN:
        return _between(anchor_tokens, text, negated)
    anchor, notes = _noun_phrase(anchor_tokens)
    viewer = _viewer_attribute(rel, anchor, text)
    if viewer is not None:
        return None, viewer[0], notes + viewer[1], []
    if anchor.empty:
        return None, [], notes + [f"'{' '.join(tokens[start:anchor_start])}' has no object after it; ignored"], []
    return RelationClause(rel, (anchor,), text, negated), [], notes, []


def _between(anchor_tokens: list[str], text: str, negated: bool) -> _SpanReading:
    """"between A and B", or two of one kind ("between the two cups", "between the cups")."""
    if "and" not in anchor_tokens:
        anchor, notes = _noun_phrase(anchor_tokens)
        if anchor.count in (0, 2) and (anchor.count or anchor.text.endswith("s")):
            return RelationClause(Relation.BETWEEN, (replace(anchor, count=2),), text, negated), [], notes, []
        return None, [], notes, [f"{text} (between needs two objects)"]
    joint = anchor_tokens.index("and")
    anchors, notes = [], []
    for part in (anchor_tokens[:joint], anchor_tokens[joint + 1:]):
        np_, n = _noun_phrase(part)
        anchors.append(np_)
        notes += n
    if any(a.empty for a in anchors):
        return None, [], notes, [f"{text} (between needs two objects)"]
    return RelationClause(Relation.BETWEEN, tuple(anchors), text, negated), [], notes, []


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
