"""Words to class labels: a synonym table first, then text embeddings, with a confidence.

Class names come from the perceptor (COCO's "tvmonitor", "diningtable", ... today; the
project's "monitor", "table", "sofa", ... later). Each label is described by a few texts (its
name spelt out plus synonyms: "tvmonitor" -> "tv monitor", "tv", "monitor", "screen"), whose
embeddings are computed once and cached. A noun phrase matches a label with confidence 1.0 when
its head word is one of the label's texts; otherwise with the best cosine similarity between
the phrase and the label's texts, kept only above ``min_similarity`` (so "giraffe" is an
unknown target, not a wild guess). Without an encoder only the table is used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from ..memory.structure_rules import STRUCTURE_CLASSES
from .text_encoder import TextEncoder

__all__ = ["KNOWN_LABELS", "LabelMatcher", "canonical_label", "english_words", "label_texts", "label_word_groups"]

# Groups of words naming the same kind of thing; a label in a group gets all of the group's words.
_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("monitor", "tv", "tvmonitor", "tv monitor", "television", "screen", "display", "computer screen"),
    ("table", "diningtable", "dining table", "desk", "kitchen table"),
    ("counter", "countertop", "counter top", "kitchen counter", "worktop", "work surface", "work top"),
    ("cup", "mug", "coffee cup", "coffee mug", "teacup", "glass", "tumbler"),
    ("sofa", "couch", "settee", "loveseat", "love seat", "divan", "sofa bed"),
    ("chair", "seat", "stool", "armchair", "office chair"),
    ("bin", "trash can", "trash bin", "wastebasket", "garbage can", "rubbish bin", "waste bin"),
    ("plant", "pottedplant", "potted plant", "houseplant", "flower", "flowers"),
    ("cell phone", "phone", "cellphone", "mobile phone", "smartphone", "mobile"),
    ("refrigerator", "fridge", "freezer"),
    ("book", "books", "notebook", "magazine", "booklet", "brochure", "leaflet", "pamphlet", "journal"),
    ("bottle", "water bottle", "flask"),
    ("laptop", "notebook computer", "computer"),
    ("cabinet", "cupboard", "drawer", "drawers", "wardrobe", "dresser", "sideboard", "chest of drawers"),
    ("shelf", "shelves", "bookshelf", "bookcase", "rack"),
    ("lamp", "light", "desk lamp", "floor lamp"),
    ("bed",),
    ("box", "carton", "package", "crate", "container", "food container", "food box", "lunch box", "tupperware"),
    ("remote", "remote control", "controller", "game controller", "gamepad", "joystick"),
    ("mouse", "computer mouse"),
    ("keyboard",),
    ("sink", "basin", "washbasin"),
    ("microwave", "microwave oven"),
    ("bowl", "dish"),
    ("person", "man", "woman", "human", "people"),
)
_MARGIN = 0.08  # embedding matches within this of the best label are kept as alternatives
# Things that are none of the classes, however close their embedding: MiniLM puts "teapot" at 0.77 of
# "cup" and "plate" near "bowl". A noun naming one of them is that thing (absent from the map), never a
# class read by similarity.
OTHER_THINGS = frozenset(
    "teapot kettle plate pan pot jar tray frame picture painting poster curtain cushion rug carpet basket candle "
    "fireplace radiator stove napkin towel holder stand tower model".split())
_WORD_TO_GROUP = {w: g for g in _SYNONYMS for w in g}
# Class names the perceptors use today (COCO) and later (the project's own classes).
KNOWN_LABELS = (
    "person", "bench", "chair", "sofa", "couch", "pottedplant", "potted plant", "bed", "diningtable", "dining table",
    "toilet", "tvmonitor", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone", "microwave", "oven",
    "toaster", "sink", "refrigerator", "book", "clock", "vase", "bottle", "wine glass", "cup", "fork", "knife",
    "spoon", "bowl", "backpack", "handbag", "suitcase", "table", "cabinet", "shelf", "monitor", "lamp", "box",
    "plant", "bin", "door", "window", "pillow", "desk", "counter", "wall", "floor",
)


def label_word_groups() -> frozenset[str]:
    """The multi-word names of the synonym table and the known labels ("dining table", "coffee mug"): an
    adjective that makes one of them with its noun is part of the noun."""
    return frozenset(t for t in (*KNOWN_LABELS, *_WORD_TO_GROUP) if " " in t)


def english_words() -> frozenset[str]:
    """Every word of the synonym table and the known labels (for the language check)."""
    return frozenset(w for text in (*KNOWN_LABELS, *_WORD_TO_GROUP) for w in text.split())


# Words that ask for any object ("the thing on the table").
GENERIC_WORDS = frozenset({"object", "thing", "item", "stuff", "something", "one", "objects", "things", "items"})


def _spelt(label: str) -> str:
    """'tvmonitor' -> 'tv monitor', 'dining_table' -> 'dining table' (display form)."""
    text = re.sub(r"[_\-]+", " ", label.lower()).strip()
    fixes = {"tvmonitor": "tv monitor", "diningtable": "dining table", "pottedplant": "potted plant"}
    return fixes.get(text, text)


def label_texts(label: str) -> tuple[str, ...]:
    """Texts that describe a class label: its spelt-out name, then its synonyms."""
    spelt = _spelt(label)
    group = _WORD_TO_GROUP.get(label.lower()) or _WORD_TO_GROUP.get(spelt) or ()
    return tuple(dict.fromkeys((spelt, *group)))


def canonical_label(label: str) -> str:
    """The table's first word for a class label ('tvmonitor' -> 'monitor', 'couch' -> 'sofa'), or
    the label spelt out when the table has no group for it."""
    group = _WORD_TO_GROUP.get(label.lower()) or _WORD_TO_GROUP.get(_spelt(label)) or ()
    return group[0] if group else _spelt(label)


def _head_variants(noun: str) -> list[str]:
    """The noun phrase, its last word and its singular: where a table lookup may hit."""
    words = noun.split()
    out = [noun, " ".join(words[-2:]), words[-1]] if words else []
    out += [w[:-1] for w in out if w.endswith("s") and not w.endswith("ss")]
    return list(dict.fromkeys(out))


class LabelMatcher:
    """Scores class labels for a noun phrase; label embeddings are cached.

    Args:
        encoder: the text encoder, or None for table-only matching.
        min_similarity: cosine similarity below which an embedding match is no match.
    """

    def __init__(self, encoder: TextEncoder | None, min_similarity: float = 0.66) -> None:
        self.encoder = encoder
        self.min_similarity = min_similarity
        self._label_cache: dict[str, tuple[tuple[str, ...], np.ndarray | None]] = {}

    def _label(self, label: str) -> tuple[tuple[str, ...], np.ndarray | None]:
        hit = self._label_cache.get(label)
        if hit is None:
            texts = label_texts(label)
            emb = self.encoder.encode(texts) if self.encoder is not None else None
            hit = self._label_cache[label] = (texts, emb)
        return hit

    def prepare(self, labels: Iterable[str]) -> None:
        """Compute and cache the embeddings of these labels' texts now (one encoder batch)."""
        todo = [label for label in dict.fromkeys(labels) if label not in self._label_cache]
        if self.encoder is not None and todo:
            self.encoder.encode([t for label in todo for t in label_texts(label)])
        for label in todo:
            self._label(label)

    def _names(self, variants: list[str], label: str) -> bool:
        """Whether one of a noun's variants is one of the label's texts or in its synonym group."""
        texts = label_texts(label)
        return any(v in texts or _WORD_TO_GROUP.get(v, ()) == _WORD_TO_GROUP.get(texts[0], 1) for v in variants)

    def similarities(self, noun: str, labels: Iterable[str]) -> dict[str, float]:
        """Cosine similarity of the noun to each label (best over the label's texts); needs the encoder."""
        if self.encoder is None:
            raise ValueError("similarities need a text encoder")
        query = self.encoder.encode(noun)[0]
        return {label: float((self._label(label)[1] @ query).max()) for label in dict.fromkeys(labels)}

    def match(self, noun: str, labels: Iterable[str], known: Iterable[str] = ()) -> dict[str, float]:
        """Confidence in [0, 1] that ``noun`` names each label (only labels above the threshold).

        Args:
            noun: the noun phrase's words ("white mug" has had its attributes removed: "mug").
            labels: candidate class names (those present in the memory).
            known: other class names that exist (the detector's, the project's): a noun that names
                one of them exactly ("bed") means that class, absent here, not the closest embedding
                among ``labels``.

        Returns:
            label -> confidence; empty when nothing matches. A generic noun ("object", "thing")
            matches every label with 1.0.
        """
        labels = list(dict.fromkeys(labels))
        if not noun or not labels:
            return {}
        if noun in GENERIC_WORDS or noun.split()[-1] in GENERIC_WORDS:  # any object; the room is no "thing"
            return dict.fromkeys((label for label in labels if label not in STRUCTURE_CLASSES), 1.0)
        variants = _head_variants(noun)
        exact = {label: 1.0 for label in labels if self._names(variants, label)}
        if exact or self.encoder is None:
            return exact
        if any(self._names(variants, label) for label in dict.fromkeys(known)):
            return {}
        if noun.split()[-1] in OTHER_THINGS or noun in OTHER_THINGS:
            return {}
        sims = self.similarities(noun, labels)
        best = max(sims.values())
        # Labels clearly behind the best one are other things, not synonyms.
        return {k: v for k, v in sims.items() if v >= max(self.min_similarity, best - _MARGIN)}
