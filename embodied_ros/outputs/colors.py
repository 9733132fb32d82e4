"""Class colours: one stable colour per class name, shared by markers, clouds and pictures."""

from __future__ import annotations

import zlib

import numpy as np

# Tableau-like palette: distinct on dark (RViz) and light (pictures) backgrounds.
_PALETTE = np.array(
    [
        (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
        (140, 86, 75), (227, 119, 194), (188, 189, 34), (23, 190, 207), (255, 187, 120),
        (152, 223, 138), (255, 152, 150), (197, 176, 213), (196, 156, 148), (247, 182, 210),
        (219, 219, 141), (158, 218, 229), (174, 199, 232),
    ],
    dtype=np.uint8,
)

OCCUPANCY_GREY = (150, 150, 150)


def class_color(class_name: str) -> tuple[int, int, int]:
    """RGB uint8 colour of a class, the same in every run (CRC32 of the name)."""
    r, g, b = _PALETTE[zlib.crc32(class_name.encode()) % len(_PALETTE)]
    return int(r), int(g), int(b)


def class_color_float(class_name: str) -> tuple[float, float, float]:
    """The class colour with channels in [0, 1] (RViz, matplotlib)."""
    r, g, b = class_color(class_name)
    return r / 255.0, g / 255.0, b / 255.0
