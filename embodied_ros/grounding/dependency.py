"""The dependency parser: spaCy's small English pipeline reads a referring phrase into a ``ParsedPhrase``.

The parse decides the structure; the word tables of ``phrases.py`` decide what the words mean:

* the target is the head of the phrase's noun phrase (the ROOT, or the object of a lead-in verb: "find
  the cup"); "the chair at the end of the table" is about a chair, whatever nouns follow;
* compound nouns stay one noun ("PC tower", "game controller", "food container");
* adjectives are colours ("light blue"), sizes and heights ("largest", "tall"), materials ("wooden"),
  viewer-centred words ("leftmost", "nearest"), ordinals ("second") or numbers ("the two plates": how many
  anchors); another adjective ("the loose leaflets", "the open magazine") is not understood, so the answer
  cannot be checked against it;
* a prepositional phrase qualifies the noun the parse attaches it to: the target's relations are the
  phrase's clauses, an anchor's own relations ("the end of the table near the sink") stay with that
  anchor (``NounPhrase.clauses``). Relation words are read from the preposition and the words the parse
  joins to it ("next to", "in front of", "to the left of", "at the end of"), through relative clauses
  ("that is not on the table"), participles ("standing on the counter") and conjunctions ("on the table
  and near the remote");
* "X with Y [relation it]" is Y resting on or in X, or in the relation said ("the table with a bin under it");
  "hanging from", "mounted on" join the verb to the preposition (``Relation.HANGING``);
* a preposition or relation that the tables do not know ("the cup from the shelf"), or "with" a part of the
  object ("the mug with the handle"), is not understood: the answer cannot be checked against it, so it is
  "not found", and says why.

The pipeline loads once per process (``spacy_pipeline.py``, which also says how to install it), then ~4 ms
per phrase.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..memory.object_colour import colour_word
from .materials import MATERIALS
from .phrases import (
    _KEYWORDS,
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
    split_foreign,
)
from .spacy_pipeline import MODEL_PACKAGES, import_spacy, load_pipeline, parser_text, pipeline_error, strip_lead_in
from .vocabulary import label_word_groups

__all__ = ["MODEL_PACKAGES", "import_spacy", "load_pipeline", "parse_with_spacy", "pipeline_error"]


# Nouns that name a part of an anchor inside a relation: "in front of", "on top of", "to the left of".
_RELATION_NOUNS = {"front", "top", "left", "right", "side", "back", "end", "head", "middle", "edge", "bottom"}
# Adverbs and adjectives that take a preposition to make a relation ("next to", "close to", "far from").
_RELATION_MODIFIERS = {"next", "close", "closer", "closest", "near", "nearer", "nearest", "far", "farther",
                       "farthest", "further", "furthest", "away", "adjacent", "right", "left", "directly", "just",
                       "higher", "lower", "nearby"}
_INTENSIFIERS = {"right", "just", "directly", "immediately", "very", "somewhere", "exactly"}
_VERB_RELATIONS = {"holding": Relation.SUPPORTING, "supporting": Relation.SUPPORTING, "carrying": Relation.SUPPORTING,
                   "holds": Relation.SUPPORTING, "supports": Relation.SUPPORTING, "facing": Relation.FRONT}
# Words that carry no constraint: lead-in verbs, copulas, pronouns of relative clauses, placement verbs.
_FUNCTION_WORDS = {"find", "show", "locate", "select", "get", "give", "pick", "point", "look", "want", "see",
                   "where", "is", "are", "be", "that", "which", "who", "it", "its", "there", "here", "please",
                   "can", "could", "you", "me", "i", "for", "to", "standing", "sitting", "lying", "placed",
                   "located", "positioned", "resting", "kept", "put", "set", "hanging", "mounted", "stands", "sits",
                   "lies", "and", "also", "both", "the", "a", "an", "this", "some", "any", "thing", "do", "does"}
_NOUN_TAGS = ("NN", "NNS", "NNP", "NNPS", "PRP", "CD")
class _Reader:
    """One phrase's parse, read into noun phrases and relation clauses."""

    def __init__(self, doc: Any) -> None:
        self.doc = doc
        self.used: set[int] = set()
        self.notes: list[str] = []
        self.unknown: list[str] = []
        self.compound_words = label_word_groups()

    # -- the target ---------------------------------------------------------------------------------

    def target(self) -> tuple[NounPhrase, tuple[RelationClause, ...]]:
        roots = [t for t in self.doc if t.dep_ == "ROOT"]
        if not roots:
            return NounPhrase(""), ()
        root = roots[0]
        head, governors = self._head(root)
        if head is None:
            return NounPhrase(""), ()
        noun = self.noun_phrase(head, extra_governors=governors)
        return replace(noun, clauses=()), noun.clauses

    def _head(self, root: Any) -> tuple[Any | None, list[Any]]:
        """The target's head token and the verbs whose relations are the target's ("cups are on the table")."""
        if self._nominal(root):
            return root, []
        for dep in ("nsubj", "nsubjpass", "dobj", "attr", "oprd", "dative", "appos", "npadvmod"):
            for child in root.children:
                if child.dep_ == dep and self._nominal(child):
                    self.used.add(root.i)
                    return child, [root]
        for token in self.doc:  # "look for the cup": the first noun not inside a relation
            if self._nominal(token) and token.dep_ != "pobj":
                self.used.add(root.i)
                return token, [root]
        content = [t for t in self.doc if t.is_alpha and t.dep_ != "det" and t.tag_ not in ("DT", "IN", "CC")
                   and t.lower_ not in _FUNCTION_WORDS]
        return (content[0], []) if content else (None, [])

    @staticmethod
    def _nominal(token: Any) -> bool:
        return token.tag_ in _NOUN_TAGS and token.lower_ not in _VIEWER_ANCHORS and token.lower_ not in ("that", "it")

    # -- noun phrases -------------------------------------------------------------------------------

    def noun_phrase(self, head: Any, extra_governors: list[Any] | tuple[Any, ...] = (),
                    same_as: str = "") -> NounPhrase:
        """The noun phrase headed by ``head``: its noun words, attributes and relations."""
        self.used.add(head.i)
        left = sorted(self._modifiers(head), key=lambda t: t.i)
        words: list[str] = []
        attrs: list[Attribute] = []
        rank = count = 0
        skip: set[int] = set()
        for tok in left:
            if tok.i in skip:
                continue
            low = tok.lower_
            self.used.add(tok.i)
            nxt = self.doc[tok.i + 1] if tok.i + 1 < len(self.doc) else None
            if low in _NUMBERS or tok.like_num and low.isdigit():  # "the two plates", "both cups"
                count = _NUMBERS.get(low) or int(low)
            elif tok.dep_ in ("det", "predet", "poss", "punct", "cc", "case", "prep", "neg"):
                continue
            elif low in _ORDINALS:
                rank = _ORDINALS[low]
            elif low in _SHADES and nxt is not None and colour_word(nxt.lower_) and nxt.i != head.i:
                attrs.append(Attribute(f"{low} {nxt.lower_}", "colour", 0, colour=str(colour_word(nxt.lower_))))
                skip.add(nxt.i)
                self.used.add(nxt.i)
            elif colour_word(low) and f"{low} {head.lower_}" not in self.compound_words:
                attrs.append(Attribute(low, "colour", 0, colour=str(colour_word(low))))
            elif low in _SIZE_WORDS:
                kind, sign = _SIZE_WORDS[low]
                attrs.append(Attribute(low, kind, sign))
            elif low in _VIEWER_ADJECTIVES:
                kind, sign = _VIEWER_ADJECTIVES[low]
                attrs.append(Attribute(low, kind, sign))
            elif low in MATERIALS:
                attrs.append(Attribute(low, "material", 0))
            elif tok.dep_ in ("compound", "nmod") or f"{low} {head.lower_}" in self.compound_words:
                words.append(low)
            elif tok.is_alpha:  # "the loose leaflets": a word the answer cannot be checked against
                self.unknown.append(tok.text)
        text = " ".join([*words, head.lower_]).replace("_", " ")
        if head.lower_ in ("one", "ones") and same_as:  # "the pink one": one of the target's kind
            text = same_as
        clauses: list[RelationClause] = []
        for governor in (head, *extra_governors):
            if governor is not head and governor.lower_ in _VERB_RELATIONS:  # "the mug facing the window"
                found, viewer = self._verb_relation(governor, text, False), []
            elif governor is not head and (governor.lower_ in _RELATION_MODIFIERS or governor.pos_ == "ADP"):
                found, viewer = self._relation(governor, text, False)  # "the chair nearest", "cups are near ..."
            else:
                found, viewer = self._relations_of(governor, text)
            clauses += found
            attrs += viewer
        if rank:
            ordered = [k for k, a in enumerate(attrs) if a.viewer and abs(a.sign) == 2]
            word = next(w for w, r in _ORDINALS.items() if r == rank)
            if ordered:
                first = attrs[ordered[0]]
                attrs[ordered[0]] = replace(first, rank=rank, word=f"{word} {first.word}")
            else:  # "the second shelf": stacked things count from the top (grounding/structure_words.py)
                attrs.append(Attribute(word, STACK_KIND, 0, rank=rank))
        return NounPhrase(text, tuple(attrs), tuple(clauses), count)

    def _modifiers(self, head: Any) -> list[Any]:
        """Tokens before the head that modify it (compounds with their own modifiers)."""
        out = []
        for child in head.children:
            if child.i < head.i and child.dep_ not in ("relcl", "acl", "prep"):
                out.append(child)
                if child.dep_ in ("compound", "amod", "nmod", "nummod", "advmod"):
                    out += [c for c in child.subtree if c.i != child.i and c.i < head.i]
        return out

    # -- relations ----------------------------------------------------------------------------------

    def _relations_of(self, governor: Any, target_text: str,
                      negated: bool = False) -> tuple[list[RelationClause], list[Attribute]]:
        """Relation clauses and viewer attributes from the children of a noun or verb."""
        clauses: list[RelationClause] = []
        viewer: list[Attribute] = []
        negated = negated or any(c.dep_ == "neg" for c in governor.children)
        for child in governor.children:
            if child.i in self.used or child.i < governor.i and child.dep_ not in ("advmod", "neg"):
                continue
            low = child.lower_
            modifier = low in _RELATION_MODIFIERS and any(c.dep_ == "prep" for c in child.children)
            if child.dep_ == "neg":
                self.used.add(child.i)
            elif modifier:  # "next to", "left of" (spaCy reads a lone "left" as a verb)
                more, view = self._relation(child, target_text, negated)
                clauses += more
                viewer += view
            elif child.dep_ in ("relcl", "acl") or (child.dep_ in ("conj", "advcl", "xcomp") and child.pos_ in ("VERB",
                                                                                                                   "AUX")):
                self.used.add(child.i)
                if low in _VERB_RELATIONS:
                    clauses += self._verb_relation(child, target_text, negated)
                else:
                    more, view = self._relations_of(child, target_text, negated)
                    clauses += more
                    viewer += view
            elif child.dep_ in ("prep", "agent", "dative") or child.pos_ == "ADP" or (
                    low in _RELATION_MODIFIERS and child.dep_ in ("advmod", "amod", "acomp", "conj", "npadvmod")):
                more, view = self._relation(child, target_text, negated)
                clauses += more
                viewer += view
            elif child.dep_ == "conj" and self._nominal(child):
                self.notes.append(f"'{child.text}': one object at a time; ignored")
                self.used.update(t.i for t in child.subtree)
        return clauses, viewer

    def _verb_relation(self, verb: Any, target_text: str, negated: bool) -> list[RelationClause]:
        """"the table holding the cup", "the chair facing the sofa"."""
        objects = [c for c in verb.children if c.dep_ in ("dobj", "attr") and self._nominal(c)]
        if not objects:
            self.unknown.append(verb.text)
            return []
        obj = objects[0]
        of = [c for c in obj.children if c.dep_ == "prep" and c.lower_ == "of"]
        if obj.lower_ in _RELATION_NOUNS and of and self._pobj(of[0]) is not None:  # "facing the front of the sofa"
            self.used.update((obj.i, of[0].i))
            obj = self._pobj(of[0])
        anchor = self.noun_phrase(obj, same_as=target_text)
        negated = negated or any(c.dep_ == "neg" for c in verb.children)
        text = " ".join(t.text for t in verb.subtree if t.i >= verb.i).lower().replace("_", " ")
        more, _ = self._relations_of(verb, target_text, negated)  # "... supports the mug near the screen"
        return [RelationClause(_VERB_RELATIONS[verb.lower_], (anchor,), text, negated), *more]

    def _relation(self, tok: Any, target_text: str, negated: bool) -> tuple[list[RelationClause], list[Attribute]]:
        """One relation from a preposition (or "next"/"close"/"far" with its preposition), its anchor(s)
        and its conjuncts ("on the table and near the remote")."""
        if tok.lower_ == "with":
            return self._with(tok, target_text, negated), []
        self.used.add(tok.i)
        negated = negated or any(c.dep_ == "neg" for c in tok.children)
        lead = self._lead_words(tok)
        words = [tok.lower_]
        pobj = self._pobj(tok)
        if pobj is None:  # "next", "close", "far": the preposition is a child ("next to", "far from")
            pobj, more_words = self._joined_preposition(tok)
            words += more_words
        clauses, viewer = self._conjuncts(tok, target_text, negated)
        if pobj is None:
            return clauses, viewer + self._without_object(tok, " ".join([*lead, *words]), target_text)
        self.used.add(pobj.i)
        of = [c for c in pobj.children if c.dep_ == "prep" and c.lower_ == "of"]
        if pobj.lower_ in _RELATION_NOUNS and of and self._pobj(of[0]) is not None:
            # "in front of X", "to the left of X", "on the left side of X", "at the (far) end of X"
            part = pobj
            pobj, part_words, far_end = self._part_of(part, of[0])
            words += part_words
            viewer += far_end
            # The part carries the target's place: "at the end of the table near the sink" is near the sink.
            more, view = self._relations_of(part, target_text, negated)
            clauses += more
            viewer += view
        key, hanging = _relation_key(tok, lead, words)
        seen = self._viewer_words(tok, pobj, key, bool(of))
        if seen is not None:
            return clauses, viewer + seen
        text = self._clause_words(tok, words, hanging)
        relation = _KEYWORDS.get(key)
        if relation is None:
            self.unknown.append(key.replace("_", " "))
            self.used.update(t.i for t in pobj.subtree)
            return clauses, viewer
        anchors = self._anchors(tok, pobj, relation, text, target_text)
        if anchors is not None:
            clauses.insert(0, RelationClause(relation, anchors, text.replace("_", " "), negated))
        return clauses, viewer

    def _lead_words(self, tok: Any) -> list[str]:
        """The adverbs before a relation word that belong to it ("right next to", "far away from"), marked read."""
        lead = [c.lower_ for c in sorted(tok.children, key=lambda c: c.i)
                if c.i < tok.i and c.lower_ in _RELATION_MODIFIERS | _INTENSIFIERS and c.dep_ == "advmod"]
        self.used.update(c.i for c in tok.children if c.i < tok.i and c.lower_ in _RELATION_MODIFIERS | _INTENSIFIERS)
        return lead

    def _joined_preposition(self, tok: Any) -> tuple[Any | None, list[str]]:
        """The object of the preposition that makes "next", "close" or "far" a relation ("next to X"), and that
        preposition's word; (None, []) when there is none."""
        preps = [c for c in tok.children if c.dep_ == "prep" and c.i > tok.i]
        after = self.doc[tok.i + 1] if tok.i + 1 < len(self.doc) else None
        if not preps and after is not None and after.pos_ == "ADP" and after.head == tok.head \
                and after.i not in self.used:  # "farthest" and "from the door" both on the noun
            preps = [after]
        if not preps:
            return None, []
        prep = preps[0]
        self.used.add(prep.i)
        return self._pobj(prep), [prep.lower_]

    def _conjuncts(self, tok: Any, target_text: str, negated: bool) -> tuple[list[RelationClause], list[Attribute]]:
        """The relations joined to this one ("on the table and near the remote")."""
        clauses: list[RelationClause] = []
        viewer: list[Attribute] = []
        conjuncts = [c for c in tok.children if c.dep_ == "conj" and (c.pos_ == "ADP" or c.lower_ in
                                                                      _RELATION_MODIFIERS)]
        for conj in conjuncts:
            more, view = self._relation(conj, target_text, negated)
            clauses += more
            viewer += view
        return clauses, viewer

    def _without_object(self, tok: Any, key: str, target_text: str) -> list[Attribute]:
        """A relation word with no object: a viewer-centred one ("in front", "behind", "the chair nearest"), else
        not understood."""
        if key in ("in front", "ahead", "behind"):
            return [Attribute(key, "ahead", 1 if key != "behind" else -1)]
        if key in ("closest", "nearest", "farthest", "furthest"):
            return [Attribute(f"{target_text} {key}", "distance", -2 if key in ("closest", "nearest") else 2)]
        if tok.is_alpha and key not in ("nearby",):
            self.unknown.append(key)
        return []

    def _part_of(self, part: Any, of: Any) -> tuple[Any, list[str], list[Attribute]]:
        """"the end of X", "the left side of X": (X's token, the relation's words from the part, the viewer
        attribute of "the far end" if said)."""
        between = [c for c in sorted(part.children, key=lambda c: c.i) if c.i < part.i]
        self.used.update(c.i for c in between)
        far = [c for c in between if c.lower_ in ("far", "other", "near")]
        words = [c.lower_ for c in between if c not in far] + [part.lower_, "of"]
        self.used.update((of.i,))
        far_end = []
        if far and part.lower_ == "end":  # "the far end": the end far from where it is seen
            sign = -1 if far[0].lower_ == "near" else 1
            far_end.append(Attribute(f"at the {far[0].lower_} end", "distance", sign))
        anchor = self._pobj(of)
        self.used.add(anchor.i)
        return anchor, words, far_end

    def _viewer_words(self, tok: Any, pobj: Any, key: str, has_of: bool) -> list[Attribute] | None:
        """A relation to the viewer said as one to an object ("closest to me", "on the left", "on the far left",
        "in front"); None for a relation to an object."""
        low = pobj.lower_
        if low in _VIEWER_ANCHORS or any(c.lower_ in ("my", "your") for c in pobj.children) and low in ("left",
                                                                                                          "right"):
            return self._viewer(key, pobj)
        if low in ("left", "right") and not has_of:  # "on the left", "from the right", "on the far left"
            far = any(c.lower_ in ("far", "most", "very") for c in pobj.children) or key == "from"
            self.used.update(c.i for c in pobj.children)
            side = -1 if low == "left" else 1
            return [Attribute(" ".join(t.text for t in tok.subtree).lower(), "lateral", side * (2 if far else 1))]
        if key == "in" and low == "front":
            return [Attribute("in front", "ahead", 1)]
        return None

    def _clause_words(self, tok: Any, words: list[str], hanging: bool) -> str:
        """The clause's text as said ("right next to the sink", "hanging from the ceiling")."""
        text = " ".join(t.text for t in tok.subtree).lower()
        if words and words[0] in _RELATION_MODIFIERS and tok.i > 0:
            text = " ".join(t.text for t in self.doc[min(t.i for t in tok.subtree):max(t.i for t in tok.subtree) + 1])
            text = text.lower()
        return f"{tok.head.lower_} {text}" if hanging else text

    def _anchors(self, tok: Any, pobj: Any, relation: Relation, text: str,
                 target_text: str) -> tuple[NounPhrase, ...] | None:
        """The relation's anchors: the preposition's object, and for "between" a second one ("between the sink
        and the oven") or two of one kind ("between the two plates"); None, said as not understood, when
        "between" names neither."""
        second = [c for c in (*pobj.children, *tok.head.children) if c.dep_ == "conj" and c.i > pobj.i
                  and c.pos_ not in ("VERB", "AUX", "ADP", "CCONJ") and c.i not in self.used]
        if relation is Relation.BETWEEN and second:
            self.used.add(second[0].i)  # the first anchor's reading leaves it to be the second
        anchors = [self.noun_phrase(pobj, same_as=target_text)]
        if relation is Relation.BETWEEN and second:
            anchors.append(self.noun_phrase(second[0], same_as=target_text))
        elif relation is Relation.BETWEEN:  # "between the two plates", "between the cups": two of one kind
            if anchors[0].count not in (0, 2) or anchors[0].count == 0 and pobj.tag_ not in ("NNS", "NNPS"):
                self.unknown.append(f"{text} (between needs two objects)")
                return None
            anchors[0] = replace(anchors[0], count=2)
        return tuple(anchors)

    def _with(self, tok: Any, target_text: str, negated: bool) -> list[RelationClause]:
        """"X with Y": Y rests on or in X ("the table with the cups", "... with the cups on it", "the cup with the
        spoon in it"), or Y stands in the relation it is said to ("the table with a bin under it": the bin is
        under the table). A part or a look of X ("the mug with the handle") cannot be checked: the map holds
        whole objects."""
        self.used.add(tok.i)
        pobj = self._pobj(tok)
        if pobj is None:
            self.unknown.append("with")
            return []
        # The relation said with a pronoun ("on it", "next to it"): on Y, or on X after Y (parses vary).
        said = next((c for c in sorted((*pobj.children, *tok.head.children), key=lambda c: c.i)
                     if c.i > pobj.i and c.i not in self.used and c.dep_ in ("prep", "advmod", "npadvmod", "amod")
                     and any(t.lower_ in _PRONOUNS for t in c.subtree)), None)
        found = self._relation(said, target_text, negated)[0] if said is not None else []
        last = max(t.i for t in (*tok.subtree, *(said.subtree if said is not None else ())))
        text = " ".join(t.text for t in self.doc[tok.i:last + 1]).lower().replace("_", " ")
        if said is not None and not found:
            return []  # a relation the tables do not know: named by _relation
        anchor = self.noun_phrase(pobj, same_as=target_text)
        if said is None and pobj.lower_ in _PART_WORDS:
            self.unknown.append(f"{text} (a part or look of an object; the map holds whole objects)")
            return []
        relation = found[0].relation if found else Relation.SUPPORTING
        if relation is Relation.ON and said.lower_ in ("in", "into", "within"):  # "with the spoon in it": contains
            relation = Relation.INSIDE
        if relation is Relation.ON:  # "with the cups on it": it holds them
            return [RelationClause(Relation.SUPPORTING, (anchor,), text, negated)]
        return [RelationClause(relation, (anchor,), text, negated, inverse=relation is not Relation.SUPPORTING)]

    def _pobj(self, prep: Any) -> Any | None:
        objs = [c for c in prep.children if c.dep_ in ("pobj", "pcomp", "dobj")]
        if not objs:
            return None
        obj = objs[0]
        if obj.dep_ == "pcomp" and obj.pos_ == "ADP":  # "from behind the sofa"
            return self._pobj(obj)
        return obj

    def _viewer(self, key: str, anchor: Any) -> list[Attribute]:
        """A relation to the viewer ("closest to me", "behind the robot", "to my left")."""
        self.used.update(t.i for t in anchor.subtree)
        if anchor.lower_ in ("left", "right"):
            side = -1 if anchor.lower_ == "left" else 1
            return [Attribute(f"to {'my' if side else ''} {anchor.lower_}".replace("  ", " "), "lateral", side)]
        relation = _KEYWORDS.get(key)
        name = VIEWER_RELATIONS.get(relation) if relation is not None else None
        if name is None:
            self.notes.append(f"'{key} {anchor.text}' is not understood of the viewer; ignored")
            return []
        kind, sign = _VIEWER_OF_RELATION[name]
        return [Attribute(f"{key} {anchor.text}".lower(), kind, sign)]

    # -- what was not read --------------------------------------------------------------------------

    def leftovers(self) -> list[str]:
        """Words the reading did not use and that are not function words."""
        return [t.text.replace("_", " ") for t in self.doc if t.i not in self.used and t.is_alpha
                and t.lower_ not in _FUNCTION_WORDS
                and t.dep_ not in ("det", "punct", "cc", "aux", "auxpass", "nsubj", "expl", "mark", "case")]


def _relation_key(tok: Any, lead: list[str], words: list[str]) -> tuple[str, bool]:
    """The relation's key in ``_KEYWORDS`` ("far away from", "right next to", else the words without their lead),
    and whether the verb before it makes it "hanging from"/"mounted on" (then the key includes the verb)."""
    key = " ".join([*lead, *words])
    key = key if key in _KEYWORDS else " ".join(words)
    held = f"{tok.head.lower_} {key}"  # "hanging from", "mounted on": the verb makes the relation
    hanging = tok.head.i < tok.i and _KEYWORDS.get(held) is Relation.HANGING
    return (held if hanging else key), hanging


def parse_with_spacy(phrase: str, pipeline: tuple[Any, str] | None = None) -> ParsedPhrase | None:
    """Parse a referring phrase with spaCy (``load_pipeline()`` unless given); None when spaCy is not installed.

    Never raises on any text: words of other scripts and emoji are taken out first (``split_foreign``).
    """
    pipeline = pipeline or load_pipeline()
    if pipeline is None:
        return None
    nlp, name = pipeline
    clean, unknown, ignored = split_foreign(str(phrase)[:MAX_PHRASE_CHARS])
    text, count = strip_lead_in(" ".join(clean.split()))
    if not text:
        return ParsedPhrase("", count=count, parser=name, unknown=unknown, ignored=ignored)
    reader = _Reader(nlp(parser_text(text)))
    target, clauses = reader.target()
    # Words the reading did not place are not understood: the answer cannot be checked against them.
    extra = reader.leftovers()
    return ParsedPhrase(text.lower(), target, clauses, tuple(dict.fromkeys(reader.notes)), count, name,
                        tuple(dict.fromkeys((*unknown, *reader.unknown, *extra))), ignored)
