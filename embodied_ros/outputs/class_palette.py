"""The class palette: one stable display colour per class name, shared by markers, clouds and pictures (not an
object's measured colour: that is memory/object_colour.py; colour words against it: grounding/colour_words.py)."""

from __future__ import annotations

import zlib

import numpy as np

# Vivid, distinct hues: boxes and labels must stand out on RViz's dark grey background and its grey
# occupancy points (the pale Tableau colours did not), and still read on photos and on white figures.
_PALETTE = np.array(
    [
        (255, 64, 64), (64, 224, 64), (64, 160, 255), (255, 200, 0), (255, 96, 255), (0, 230, 230),
        (255, 140, 0), (170, 110, 255), (160, 255, 0), (255, 120, 170), (0, 200, 140), (255, 240, 80),
        (120, 200, 255), (230, 160, 90), (200, 255, 160), (255, 170, 120),
    ],
    dtype=np.uint8,
)

OCCUPANCY_GREY = (150, 150, 150)


def class_colour(class_name: str) -> tuple[int, int, int]:
    """RGB uint8 colour of a class, the same in every run (CRC32 of the name)."""
    r, g, b = _PALETTE[zlib.crc32(class_name.encode()) % len(_PALETTE)]
    return int(r), int(g), int(b)


def class_colour_float(class_name: str) -> tuple[float, float, float]:
    """The class colour with channels in [0, 1] (RViz, matplotlib)."""
    r, g, b = class_colour(class_name)
    return r / 255.0, g / 255.0, b / 255.0
