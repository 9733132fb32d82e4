"""Material words ("plastic", "wooden", "metal", "glass", "paper") against what the map knows of an object: its
measured colour, its box, and what things of its kind are usually made of.

The map observes no material, so a material word is checked only where something measured can tell:

* colour tells wood and metal: "wooden" needs a wood colour (brown, within measurement error); "metal" a grey,
  white or black one. Furniture usually made of wood that looks like wood (``colour_words.object_colours``) is wood:
  "metal", "glass", "plastic" and "paper" do not hold of it ("the glass table" is not the wooden one).
* shape tells paper: a paper thing is thin (its smallest extent at most ``PAPER_THICK_M``: a magazine, a
  leaflet), unless its kind is made of paper anyway (a book).
* the kind tells what is usual (``USUAL``): a material that things of the object's kind are not usually made
  of ("the wooden cup", "the paper cup", "the glass book") is not an answer, since nothing measured can show
  that this one is the exception; a usual one that colour and shape cannot check ("the plastic container",
  "the glass bottle") is taken, and the answer says that it was not checked.
* glass and plastic: neither colour nor shape tells them (a glass shows what is behind it; plastic comes in
  every colour): they are taken only where the kind is usually of them. An object whose kind is unknown (an
  unnamed "thing") is answered only for a material its colour or shape can check.
"""

from __future__ import annotations

import numpy as np

from ..detections import class_key
from .colour_words import object_colours
from .vocabulary import canonical_label

__all__ = ["MATERIALS", "PAPER_THICK_M", "USUAL", "material_holds"]

# Words of a material, and the one each stands for.
_SAME = {"wood": "wooden", "metallic": "metal", "steel": "metal", "stainless": "metal", "iron": "metal",
         "aluminium": "metal", "aluminum": "metal", "porcelain": "ceramic", "china": "ceramic",
         "transparent": "glass", "acrylic": "plastic", "cloth": "fabric"}
MATERIALS = frozenset({"wooden", "metal", "plastic", "glass", "paper", "ceramic", "leather", "fabric", "cardboard",
                       *_SAME})
PAPER_THICK_M = 0.05  # a paper thing's smallest extent at most this (a lifted magazine measures 2-4 cm)
_METAL = frozenset({"grey", "white", "black"})
_WOOD_LIKE = frozenset({"brown"})

_TECH = ("plastic", "metal", "glass")
_FURNITURE = ("wooden", "metal", "plastic", "glass")
_BOX = ("plastic", "cardboard", "paper", "wooden", "metal")
_PAPER = ("paper", "cardboard")
# What things of a kind are usually made of (by canonical label or everyday noun).
USUAL: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    "cup": ("ceramic",), "bottle": ("plastic", "glass"), "wine glass": ("glass",), "bowl": ("ceramic", "glass",
                                                                                            "plastic", "wooden"),
    "vase": ("glass", "ceramic"), "chair": ("wooden", "metal", "plastic", "fabric", "leather"),
    "table": _FURNITURE, "desk": _FURNITURE, "cabinet": _FURNITURE, "shelf": _FURNITURE, "door": _FURNITURE,
    "window": ("glass", "wooden", "plastic", "metal"), "bed": ("wooden", "metal", "fabric"),
    "sofa": ("fabric", "leather"), "bench": ("wooden", "metal", "plastic"),
    "monitor": _TECH, "laptop": _TECH, "keyboard": ("plastic",), "mouse": ("plastic",), "remote": ("plastic",),
    "cell phone": _TECH, "microwave": ("metal", "plastic"), "oven": ("metal",), "toaster": ("metal", "plastic"),
    "refrigerator": ("metal", "plastic"), "sink": ("metal", "ceramic"), "toilet": ("ceramic",),
    "book": _PAPER, "clock": ("plastic", "metal", "wooden", "glass"), "lamp": ("metal", "plastic", "glass",
                                                                              "ceramic", "fabric"),
    "scissors": ("metal", "plastic"), "knife": ("metal", "plastic"), "fork": ("metal", "plastic"),
    "spoon": ("metal", "plastic", "wooden"), "plant": ("ceramic", "plastic"), "bin": ("plastic", "metal"),
    "backpack": ("fabric", "leather", "plastic"), "handbag": ("fabric", "leather", "plastic"),
    "suitcase": ("fabric", "leather", "plastic"), "box": _BOX, "container": ("plastic", "glass", "metal"),
    "package": _BOX, "carton": _PAPER, "crate": ("wooden", "plastic"), "tub": ("plastic",),
    "gamepad": ("plastic",), "controller": ("plastic",), "joystick": ("plastic",),
    "magazine": _PAPER, "leaflet": _PAPER, "leaflets": _PAPER, "brochure": _PAPER, "paper": _PAPER,
    "papers": _PAPER, "newspaper": _PAPER, "notebook": _PAPER, "envelope": _PAPER, "folder": ("paper", "plastic",
                                                                                           "cardboard"),
    "model": ("wooden", "plastic", "metal", "ceramic"), "figure": ("wooden", "plastic", "metal", "ceramic"),
    "tower": ("metal", "plastic"), "pc": ("metal", "plastic"), "computer": _TECH,
    "plate": ("ceramic", "glass", "plastic", "paper"), "dish": ("ceramic", "glass", "plastic"),
    "tray": ("plastic", "metal", "wooden"), "jar": ("glass", "plastic", "ceramic"), "pot": ("metal", "ceramic"),
    "kettle": ("metal", "plastic"), "pan": ("metal",), "can": ("metal",), "tin": ("metal",),
}.items()}


def _kind(class_name: str, noun: str) -> frozenset[str] | None:
    """What things of the object's kind are usually made of: by its class, or (for an unnamed object) by the
    noun of the phrase; None when the kind is unknown."""
    for name in (class_name, noun):
        if not name:
            continue
        words = name.lower().split()
        for key in (canonical_label(class_key(name)), canonical_label(name), " ".join(words[-2:]), words[-1]):
            if key in USUAL:
                return USUAL[key]
            if key.endswith("s") and key[:-1] in USUAL:
                return USUAL[key[:-1]]
    return None


def material_holds(word: str, class_name: str, lab: tuple[float, float, float] | None, box: np.ndarray,
                   noun: str = "") -> tuple[bool | None, str]:
    """Whether a material word holds of an object: (True, "" when measured, or why it was not checked),
    (False, why not), or (None, why it cannot be checked).

    Args:
        word: the material word ("wooden", "steel", "plastic", ...).
        class_name: the object's class ("object" for an unnamed one: its kind is then read from ``noun``).
        lab: its measured CIELAB colour (None: never seen in colour).
        box: its (9,) box (extents at [3:6], metres).
        noun: the phrase's noun ("container"), for objects the detector has no class for.
    """
    material = _SAME.get(word.lower(), word.lower())
    named = class_name if class_name != "object" else ""
    usual = _kind(named, noun)
    colours = object_colours(named, lab) if lab is not None else frozenset()
    looks_wooden = colours == _WOOD_LIKE and usual is not None and "wooden" in usual
    kind = canonical_label(class_key(named)) if named else (noun or "thing")
    if usual is not None and material not in usual:
        return False, f"a {kind} is not usually {material}, and colour and shape cannot show this one is"
    if material == "wooden" or material == "metal":
        if lab is None:
            return None, f"'{word}' is checked on the colour, and the map observed none"
        fits = bool(colours & (_WOOD_LIKE if material == "wooden" else _METAL)) and not (
            material == "metal" and looks_wooden)
        return fits, "" if fits else f"its colour ({'/'.join(sorted(colours))}) is not {material}'s"
    if looks_wooden:
        return False, f"it looks like wood, not {material}"
    if material == "paper" and (usual is None or "paper" not in usual):
        thin = float(np.min(np.abs(box[3:6]))) <= PAPER_THICK_M
        return thin, "" if thin else f"it is {100 * float(np.min(np.abs(box[3:6]))):.0f} cm thick, not a paper thing"
    if usual is None:
        return None, f"colour and shape cannot tell {material}"
    return True, f"'{word}' not checked: a {kind} is usually {material}, and colour and shape cannot tell"
