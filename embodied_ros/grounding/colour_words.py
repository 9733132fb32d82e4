"""Colour and material words against an object's measured colour: which words fit, and which one to say.

The memory names each object's colour from its CIELAB mode (``memory.object_colour.colour_name``), with
hard thresholds: a dark wooden chair of chroma 12 is "grey", one of chroma 14 "brown". A word someone
asks for fits when it names the measured colour or the colour a small measurement error away
(lightness +-``L_TOLERANCE``, chroma +-``CHROMA_TOLERANCE``, hue +-``HUE_TOLERANCE_DEG``, one at a time:
a dull colour's hue is noise, so hue and chroma are not moved together). "The brown chair" then fits
that grey-named chair, "the green cup" fits no white cup, and "the pink brochure" does not fit a purple
magazine (hue 323, L* 56).

What a description says is stricter: the colour people call the object. Furniture that is usually made
of wood (``WOODEN_CLASSES``) is called brown when brown fits at all, never grey or black from a
shadowed measurement ("a wooden chair is not grey"). Material words are read from these colours in
``materials.py``.
"""

from __future__ import annotations

import math

from ..classes import WOODEN_CLASSES
from ..memory.object_colour import colour_name, colour_word

__all__ = ["WOODEN_CLASSES", "colour_fits", "fitting_colours", "object_colours", "spoken_colour"]

L_TOLERANCE = 8.0  # CIELAB lightness units a measurement may be off (lighting, white balance)
CHROMA_TOLERANCE = 6.0  # chroma units
HUE_TOLERANCE_DEG = 10.0  # hue degrees


def fitting_colours(lab: tuple[float, float, float] | None) -> frozenset[str]:
    """The colour words a measured CIELAB colour may be called, within measurement error (empty for None)."""
    if lab is None:
        return frozenset()
    L, a, b = (float(v) for v in lab)
    chroma, hue = math.hypot(a, b), math.atan2(b, a)
    words = set()
    for dL, dC, dh in ((0, 0, 0), (L_TOLERANCE, 0, 0), (-L_TOLERANCE, 0, 0), (0, CHROMA_TOLERANCE, 0),
                       (0, -CHROMA_TOLERANCE, 0), (0, 0, HUE_TOLERANCE_DEG), (0, 0, -HUE_TOLERANCE_DEG)):
        c, h = max(chroma + dC, 0.0), hue + math.radians(dh)
        words.add(str(colour_name((L + dL, c * math.cos(h), c * math.sin(h)))))
    return frozenset(words)


def object_colours(class_name: str, lab: tuple[float, float, float] | None) -> frozenset[str]:
    """The colour words an object of this class and measured colour may be called: those that fit the
    measurement, but only brown for wooden furniture that brown fits (not the grey or red of a shadow)."""
    fits = fitting_colours(lab)
    if class_name.lower() in WOODEN_CLASSES and _looks_wooden(lab):
        return frozenset({"brown"})
    return fits


def _looks_wooden(lab: tuple[float, float, float] | None) -> bool:
    """Whether a colour may be wood seen in a room's light: not white, dull, and warm or nearly grey
    (redkitchen's chairs measure L* 31-35, chroma 12-19, hue 45-61; its table L* 75, chroma 22, hue 78)."""
    if lab is None:
        return False
    L, a, b = (float(v) for v in lab)
    chroma, hue = math.hypot(a, b), math.degrees(math.atan2(b, a)) % 360.0
    warm = 15.0 <= hue <= 110.0
    return chroma < 45.0 and (warm and chroma >= 8.0 or 25.0 <= L < 66.0 and chroma < 13.0 + CHROMA_TOLERANCE)


def colour_fits(word: str, lab: tuple[float, float, float] | None, class_name: str = "") -> bool:
    """Whether an asked colour word ("gray", "light blue" -> its colour) fits an object's measured colour."""
    asked = colour_word(word.split()[-1]) if word else None
    return asked is not None and asked in object_colours(class_name, lab)


def spoken_colour(class_name: str, lab: tuple[float, float, float] | None,
                  measured: str | None = None) -> str | None:
    """The colour word a description uses for an object: brown for wooden furniture that looks like wood,
    otherwise the measured name when no other name is within measurement error; None when unclear or
    never seen."""
    if lab is None:
        return None
    if class_name.lower() in WOODEN_CLASSES:
        return "brown" if _looks_wooden(lab) else None  # wood that looks like neither: say no colour
    word = measured or colour_name(lab)
    # Only a clear colour: a white cup under warm light measures between white and brown, and is not "brown".
    return word if fitting_colours(lab) == frozenset({word}) else None
