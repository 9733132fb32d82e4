"""What everyday things the detector cannot name look like, for answering with an unnamed object.

"the box next to the mug" may answer with an unnamed object (class ``object``) only when that object
could be a box. A robot acts on the answer, so a word whose shape is not known here ("the flurbo"),
or an object of the wrong size for it ("the plate on the table" when the one unnamed thing there is
10 cm tall), gives "not found" rather than whatever unnamed object the place picks out.

Sizes are everyday ones with room for a fitted box's error (a box fitted to a partly seen thing is
smaller or larger than the thing), not sizes measured in any recording.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Shape:
    """Ranges, metres, of an upright box that can hold such a thing: the longer horizontal side and the
    height."""

    long: tuple[float, float]
    height: tuple[float, float]

    def fits(self, box: np.ndarray) -> bool:
        """Whether a (9,) gravity-aligned box (x, y, z, dx, dy, dz, ...) has this shape's size."""
        long, height = float(max(box[3], box[4])), float(box[5])
        return self.long[0] <= long <= self.long[1] and self.height[0] <= height <= self.height[1]


_BOXY = Shape(long=(0.04, 0.8), height=(0.02, 0.7))
_FLAT = Shape(long=(0.1, 0.5), height=(0.0, 0.06))
_HANDHELD = Shape(long=(0.06, 0.35), height=(0.01, 0.15))
_TOWER = Shape(long=(0.2, 0.75), height=(0.28, 0.75))
_VESSEL = Shape(long=(0.04, 0.4), height=(0.04, 0.45))

SHAPES: dict[str, Shape] = {
    **dict.fromkeys(("box", "container", "case", "package", "packet", "parcel", "carton", "crate", "bag",
                     "basket", "bin", "tub", "toy", "speaker", "device", "folder", "binder", "file",
                     "printer", "router", "charger", "figure", "model", "statue", "ornament", "decoration"),
                    _BOXY),
    **dict.fromkeys(("plate", "dish", "tray", "lid", "mat", "coaster", "brochure", "leaflet", "leaflets",
                     "magazine", "paper", "papers", "newspaper", "notebook", "envelope"), _FLAT),
    **dict.fromkeys(("controller", "gamepad", "joystick", "game controller", "pad", "wallet", "glasses",
                     "stapler", "torch", "flashlight"), _HANDHELD),
    **dict.fromkeys(("tower", "pc", "pc tower", "computer", "computer tower", "desktop", "desktop computer"),
                    _TOWER),
    **dict.fromkeys(("jar", "pot", "pan", "can", "tin", "kettle", "teapot", "jug", "pitcher",
                     "thermos", "flask", "candle"), _VESSEL),
}


def shape_of(noun: str) -> Shape | None:
    """The shape a noun phrase's head names ("the PC tower": its whole text, then its last word), or
    None when no shape is known for it."""
    words = noun.lower().split()
    for key in (" ".join(words), " ".join(words[-2:]), words[-1] if words else ""):
        if key in SHAPES:
            return SHAPES[key]
    return None
