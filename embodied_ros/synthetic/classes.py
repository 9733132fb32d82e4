"""The synthetic world's vocabulary: object classes, structure classes, colours and synonyms.

Its detection and occupancy classes are defined in embodied_ros/classes.py (they are also the vocabulary
of old Embodied Perceptron weights files, which network/ reads without importing the synthetic world).
"""

from __future__ import annotations

import numpy as np

from ..classes import OBJECT_CLASSES, OCCUPANCY_CLASSES

__all__ = [
    "ALL_CLASSES", "OBJECT_CLASSES", "OCCUPANCY_CLASSES", "STRUCTURE_CLASSES", "SYNONYMS", "class_color",
    "class_index",
]

STRUCTURE_CLASSES: tuple[str, ...] = ("floor", "wall", "ceiling")
"""Room surfaces: no boxes, but they occupy voxels (occupancy labels) and pixels (class render)."""

SYNONYMS: dict[str, tuple[str, ...]] = {
    "chair": ("chair", "seat", "armchair"),
    "table": ("table", "desk"),
    "sofa": ("sofa", "couch", "settee"),
    "bed": ("bed",),
    "cabinet": ("cabinet", "cupboard", "dresser"),
    "shelf": ("shelf", "bookshelf", "bookcase"),
    "monitor": ("monitor", "screen", "display"),
    "lamp": ("lamp", "light"),
    "cup": ("cup", "mug"),
    "book": ("book", "notebook"),
    "bottle": ("bottle", "flask"),
    "box": ("box", "carton"),
    "plant": ("plant", "potted plant", "houseplant"),
    "bin": ("bin", "trash can", "wastebasket"),
    "door": ("door",),
    "window": ("window",),
}
"""Words a phrase may use for each class; the first is the class name itself."""

_BASE_COLORS: dict[str, tuple[int, int, int]] = {
    "chair": (200, 120, 40), "table": (150, 95, 55), "sofa": (60, 90, 170), "bed": (210, 210, 230),
    "cabinet": (120, 70, 40), "shelf": (180, 150, 100), "monitor": (30, 30, 35), "lamp": (240, 220, 120),
    "cup": (220, 60, 60), "book": (60, 160, 70), "bottle": (60, 170, 190), "box": (190, 160, 110),
    "plant": (40, 140, 40), "bin": (110, 110, 120), "door": (170, 120, 70), "window": (150, 200, 230),
    "floor": (150, 140, 125), "wall": (225, 220, 205), "ceiling": (240, 240, 240),
}

ALL_CLASSES: tuple[str, ...] = OBJECT_CLASSES + STRUCTURE_CLASSES
"""Class index space of the class render (objects first, then structure)."""


def class_color(name: str) -> np.ndarray:
    """(3,) float64 base RGB in [0, 1] of a class (each instance varies it a little)."""
    return np.asarray(_BASE_COLORS[name], dtype=np.float64) / 255.0


def class_index(name: str) -> int:
    """Index of ``name`` in ALL_CLASSES (object classes keep their OBJECT_CLASSES index)."""
    return ALL_CLASSES.index(name)
