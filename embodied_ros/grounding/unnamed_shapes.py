"""What everyday things look like (sizes), for answering with an unnamed object and for telling whether one could
be another instance of a class.

"the box next to the mug" may answer with an unnamed object (class ``object``) only when that object could be a
box, and is more likely a box than any other kind of thing of this table: a robot acts on the answer, so a word
whose shape is not known here ("the flurbo"), an object of the wrong size for it ("the plate on the table" when
the one unnamed thing there is 10 cm tall), or one whose size fits another kind better ("the plate" for a thing
of a game controller's size, "the plastic container" for a thing of a hand-held size) gives "not found" rather
than whatever unnamed object the place picks out. And since no detection confirms the class word, an unnamed
answer must stand out: when another unnamed object fits the phrase nearly as well, the answer is "not sure"
("the plastic container" with three box-sized things in the map).

Each kind has the ranges its upright box may have (``Shape``: the longer horizontal side and the height) and a
typical size: its extents sorted (largest, middle, smallest) with a spread in log scale; a box's likelihood for
a kind is ``exp(-0.5 * sum(((log extent - log typical) / spread) ** 2))``. Sizes are everyday ones with room for a
fitted box's error (a box fitted to a partly seen thing is smaller or larger than the thing), not sizes measured
in any recording.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..memory.class_shapes import plausible_size
from ..memory.scene_object import MemorySnapshot
from .phrases import NounPhrase
from .vocabulary import canonical_label

__all__ = ["SHAPES", "UNNAMED_CLASS", "Shape", "best_kind", "could_be", "shape_of", "unnamed_candidates",
           "unnamed_doubt"]

UNNAMED_CLASS = "object"  # the class of the map's objects that no detector named (answered by colour, size, place)


@dataclass(frozen=True)
class Shape:
    """A kind of thing: the ranges, metres, of an upright box that can hold one (the longer horizontal side and
    the height), and its typical extents sorted largest first, with their spread (log scale)."""

    name: str
    long: tuple[float, float]
    height: tuple[float, float]
    typical: tuple[float, float, float]
    spread: tuple[float, float, float]
    family: str = ""  # kinds of one family are not rivals ("container" is a kind of "box"); "": its name

    def fits(self, box: np.ndarray) -> bool:
        """Whether a (9,) gravity-aligned box (x, y, z, dx, dy, dz, ...) has this shape's size."""
        long, height = float(max(box[3], box[4])), float(box[5])
        return self.long[0] <= long <= self.long[1] and self.height[0] <= height <= self.height[1]

    def likelihood(self, box: np.ndarray) -> float:
        """How well a (9,) box's size fits the typical one, in (0, 1]."""
        extents = np.sort(np.maximum(np.abs(np.asarray(box[3:6], dtype=np.float64)), 1e-3))[::-1]
        z = np.log(extents / np.array(self.typical)) / np.array(self.spread)
        return float(np.exp(-0.5 * np.sum(z ** 2)))


_BOXY = Shape("box", (0.04, 0.8), (0.02, 0.7), (0.20, 0.15, 0.10), (0.7, 0.7, 0.7))  # boxes come in all sizes
_CONTAINER = Shape("container", (0.08, 0.6), (0.03, 0.4), (0.25, 0.18, 0.10), (0.4, 0.4, 0.4), "box")  # food, storage
_DISH = Shape("flat dish", (0.1, 0.5), (0.0, 0.06), (0.26, 0.26, 0.03), (0.3, 0.3, 0.7))  # round: as wide as long
_PAPER = Shape("sheet of paper", (0.1, 0.5), (0.0, 0.06), (0.30, 0.22, 0.015), (0.35, 0.35, 0.9))
_HANDHELD = Shape("hand-held thing", (0.06, 0.35), (0.01, 0.15), (0.15, 0.10, 0.05), (0.35, 0.35, 0.35))
_TOWER = Shape("tower", (0.2, 0.75), (0.28, 0.75), (0.45, 0.42, 0.20), (0.3, 0.3, 0.3))
_VESSEL = Shape("vessel", (0.04, 0.4), (0.04, 0.45), (0.18, 0.15, 0.15), (0.4, 0.4, 0.4))
KINDS = (_BOXY, _CONTAINER, _DISH, _PAPER, _HANDHELD, _TOWER, _VESSEL)

SHAPES: dict[str, Shape] = {
    **dict.fromkeys(("box", "case", "package", "packet", "parcel", "carton", "crate", "bag",
                     "basket", "bin", "toy", "speaker", "device", "folder", "binder", "file",
                     "printer", "router", "charger", "figure", "model", "statue", "ornament", "decoration"),
                    _BOXY),
    **dict.fromkeys(("container", "food container", "storage container", "lunch box", "lunchbox", "food box",
                     "storage box", "tupperware", "tub"), _CONTAINER),
    **dict.fromkeys(("plate", "dish", "tray", "lid", "mat", "coaster"), _DISH),
    **dict.fromkeys(("brochure", "leaflet", "leaflets", "magazine", "paper", "papers", "newspaper", "notebook",
                     "envelope", "flyer", "sheet"), _PAPER),
    **dict.fromkeys(("controller", "gamepad", "joystick", "game controller", "pad", "wallet", "glasses",
                     "stapler", "torch", "flashlight"), _HANDHELD),
    **dict.fromkeys(("tower", "pc", "pc tower", "computer", "computer tower", "desktop", "desktop computer"),
                    _TOWER),
    **dict.fromkeys(("jar", "pot", "pan", "can", "tin", "kettle", "teapot", "jug", "pitcher",
                     "thermos", "flask", "candle"), _VESSEL),
}
# Typical sizes of the detector's classes (their names as ``canonical_label`` spells them): "of that size" for
# another instance of one among the unnamed objects.
_CLASSES = {name: Shape(name, (0.0, 9.0), (0.0, 9.0), typical, spread) for name, typical, spread in (
    ("chair", (0.85, 0.50, 0.45), (0.3, 0.3, 0.3)), ("monitor", (0.80, 0.48, 0.10), (0.4, 0.4, 0.8)),
    ("cup", (0.11, 0.09, 0.08), (0.3, 0.3, 0.3)), ("book", (0.28, 0.20, 0.03), (0.35, 0.35, 0.9)),
    ("mouse", (0.11, 0.065, 0.04), (0.3, 0.3, 0.3)), ("keyboard", (0.45, 0.15, 0.03), (0.3, 0.3, 0.8)),
    ("bottle", (0.25, 0.08, 0.08), (0.35, 0.35, 0.35)), ("laptop", (0.35, 0.25, 0.03), (0.3, 0.3, 0.8)),
    ("remote", (0.18, 0.05, 0.025), (0.35, 0.35, 0.35)), ("cell phone", (0.15, 0.07, 0.01), (0.3, 0.3, 0.8)),
    ("bowl", (0.18, 0.18, 0.08), (0.35, 0.35, 0.35)), ("vase", (0.30, 0.15, 0.15), (0.4, 0.4, 0.4)),
    ("plant", (0.50, 0.35, 0.35), (0.5, 0.5, 0.5)), ("clock", (0.30, 0.30, 0.05), (0.4, 0.4, 0.4)),
    ("sink", (0.55, 0.45, 0.20), (0.3, 0.3, 0.3)), ("microwave", (0.50, 0.38, 0.30), (0.25, 0.25, 0.25)),
    ("table", (1.50, 0.85, 0.75), (0.35, 0.35, 0.35)), ("bin", (0.45, 0.30, 0.30), (0.4, 0.4, 0.4)),
    ("lamp", (0.50, 0.30, 0.30), (0.5, 0.5, 0.5)),
)}
LIKELIER = 2.0  # another kind at least this many times as likely for a box: the box is more likely that kind
MARGIN = 1.25  # an unnamed answer's score beats every other unnamed candidate's by this (as describe.MARGIN)


def shape_of(noun: str) -> Shape | None:
    """The shape a noun phrase's head names ("the PC tower": its whole text, then its last word), or
    None when no shape is known for it."""
    words = noun.lower().split()
    for key in (" ".join(words), " ".join(words[-2:]), words[-1] if words else ""):
        if key in SHAPES:
            return SHAPES[key]
    return None


def best_kind(shape: Shape, box: np.ndarray) -> tuple[bool, str]:
    """Whether a box may be this kind of thing: no other kind of the table is ``LIKELIER`` times as likely for
    its size (a thing of a game controller's size is not "the plate"); and the likeliest other kind."""
    own = shape.likelihood(box)
    rival = max((k for k in KINDS if (k.family or k.name) != (shape.family or shape.name)),
                key=lambda k: k.likelihood(box))
    return rival.likelihood(box) < LIKELIER * own, rival.name


def could_be(label: str, box: np.ndarray) -> bool:
    """Whether a thing of this (9,) box's size is likeliest an instance of a detector class: a size the memory's
    prior allows for the class, and no kind of thing here (the table's kinds, the other classes) likelier for
    it (False for classes of no known size). Stricter than ``best_kind``: the detector looked at the thing and
    did not name it, so only a size that says the class best makes it another instance."""
    own = _CLASSES.get(canonical_label(label))
    box = np.asarray(box, dtype=np.float64)
    if own is None or not plausible_size(box, label):
        return False
    best = max(k.likelihood(box) for k in (*KINDS, *_CLASSES.values()) if k is not own)
    return own.likelihood(box) >= best


def unnamed_candidates(noun: NounPhrase, has_clauses: bool, detector_knows: bool, snapshot: MemorySnapshot,
                       usable: np.ndarray, label_holds: float, notes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """For a class no object of the map has and the detector cannot name ("the PC tower", "the box next to the
    mug"): (indices of the usable unnamed objects that can answer it, (N,) their label confidence).

    They answer only when the phrase says more than the name (a colour, a size, a place), the object has the
    size of such a thing, and no other kind of the table is clearly likelier for its size; their confidence is
    ``label_holds``, and the answer must stand out among them (``unnamed_doubt``). Why none can answer is added
    to ``notes``.
    """
    none = np.zeros(0, np.int64), np.zeros(len(snapshot))
    if not (noun.attributes or has_clauses) or detector_knows:
        return none
    unnamed = np.array([c == UNNAMED_CLASS for c in snapshot.class_names], dtype=bool)
    idx = np.flatnonzero(unnamed & usable)
    shape = shape_of(noun.text)  # "the box": only an unnamed thing that could be one
    if shape is None:
        notes.append(f"no shape is known for '{noun.text}', so no unnamed object can be said to be one")
        return none
    sized = [i for i in idx if shape.fits(snapshot.boxes[i])]
    if len(idx) and not sized:
        notes.append(f"no unnamed object has the size of a {noun.text}")
    kinds = [best_kind(shape, snapshot.boxes[i]) for i in sized]
    likelier = [f"#{int(snapshot.ids[i])} (a {k})" for i, (ok, k) in zip(sized, kinds, strict=True) if not ok]
    if likelier:
        notes.append(f"unnamed object(s) {', '.join(likelier[:3])} have a size more like another kind of thing "
                     f"than a {noun.text}")
    keep = np.array([i for i, (ok, _) in zip(sized, kinds, strict=True) if ok], dtype=np.int64)
    return keep, np.where(unnamed, label_holds, 0.0)


def unnamed_doubt(score: np.ndarray, holds: np.ndarray, best: int, names: list[str]) -> str:
    """Why an unnamed answer is not sure: another unnamed candidate fits every word of the phrase nearly as well
    (within ``MARGIN``), so neither the words nor the class word, which no detection confirms, single one out;
    "" when the answer is clear."""
    rivals = [k for k in np.flatnonzero(holds) if k != best and MARGIN * score[k] >= score[best]]
    if not rivals:
        return ""
    return (f"the words fit {len(rivals) + 1} unnamed objects alike ({', '.join(names[k] for k in [best, *rivals][:4])}"
            f"{', ...' if len(rivals) > 3 else ''}), and no detection says which is one")
