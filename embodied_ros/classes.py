"""What the code knows about object classes (fronts, room axes, supports, seats, wood), and the relation types.

One place for the class lists that the memory, lifting, grounding and the synthetic prompts read.
Names are as the detectors give them (COCO's "couch", "tv", "diningtable") and as
``detections.class_key`` writes them, plus the synthetic world's ("table", "monitor"). Two other
tables stay beside their one user: the size priors of the object map (``memory/class_shapes.py``)
and the label synonyms of grounding (``grounding/vocabulary.py``). The synthetic world's detection and
occupancy classes are here (``OBJECT_CLASSES``, ``OCCUPANCY_CLASSES``), since they are also the vocabulary
of Embodied Perceptron weights files that name none (network/perceptron_file.py); its colours and
synonyms stay in ``synthetic/classes.py``.
"""

from __future__ import annotations

from enum import Enum

__all__ = [
    "FRONTED_CLASSES", "LONG_FRONT", "MOVER_CLASSES", "OBJECT_CLASSES", "OCCUPANCY_CLASSES", "ORIENTED_CLASSES",
    "PERSON_CLASSES", "ROOM_AXIS_CLASSES", "ROOM_FACING_CLASSES", "SEAT_CLASSES", "SHORT_FRONT", "SUPPORT_CLASSES",
    "SURFACE_CLASSES", "WOODEN_CLASSES",
    "RelationType", "is_mover",
]


class RelationType(Enum):
    """EmbodiedScan's five relation types (of phrases the grounder parses and prompts the synthetic world makes)."""

    HORIZONTAL = "horizontal"  # near / closest / farthest
    VERTICAL = "vertical"  # above / below
    SUPPORT = "support"  # on / under / supporting
    ALLOCENTRIC = "allocentric"  # front / behind / left / right of an oriented anchor
    BETWEEN = "between"  # two anchors


# Fronts. Classes whose front lies across their depth, along the shorter horizontal extent, and those
# whose front lies along the longer one (a bed's foot); MemoryConfig.front_from_shape.
SHORT_FRONT: frozenset[str] = frozenset({"sofa", "couch", "cabinet", "shelf", "bookshelf", "bookcase", "monitor",
                                         "tv", "tvmonitor", "door", "window"})
LONG_FRONT: frozenset[str] = frozenset({"bed"})

# Classes whose yaw tells the room's axes (they stand against, or in, walls).
ROOM_AXIS_CLASSES: tuple[str, ...] = ("bed", "cabinet", "door", "shelf", "sofa", "window")
# Classes whose front is taken to face the room's interior.
ROOM_FACING_CLASSES: tuple[str, ...] = (*ROOM_AXIS_CLASSES, "monitor")
# Objects whose front means something in the scene graph (the others have no "in front of").
FRONTED_CLASSES = frozenset({*ROOM_FACING_CLASSES, "chair", "sofa", "couch", "bed", "tv", "tvmonitor", "toilet",
                             "refrigerator", "microwave", "oven", "laptop"})
ORIENTED_CLASSES = frozenset({"chair", "sofa", "bed", "cabinet", "shelf", "monitor", "door", "window"})
"""Synthetic classes with a meaningful front, usable as allocentric anchors of the generated prompts."""

# Supports. Classes that ARE support surfaces: lifting removes their bottom layer only when another
# dense layer (the top) lies high enough above it (LiftingParams.surface_classes).
SURFACE_CLASSES: tuple[str, ...] = ("diningtable", "dining table", "table", "desk", "bed", "bench", "counter")
SUPPORT_CLASSES = frozenset({"diningtable", "table", "desk", "counter", "bench", "bed", "sofa", "couch", "shelf",
                             "bookshelf", "cabinet"})
"""Named furniture that things rest on (``detections.class_key`` names): a thing on a table is not part of
the table, however much of it the table's lifted detections took in."""
# Classes whose box holds a backrest above the surface things rest on (grounding.relations.SEAT_HEIGHT).
SEAT_CLASSES = frozenset({"chair", "sofa", "couch", "bench", "armchair", "toilet"})

# Movers: people and animals are not part of the room. Their detections never enter the static map; they are
# published as what the camera sees now (memory/movers.py).
MOVER_CLASSES = frozenset({"person", "man", "woman", "child", "people", "pedestrian", "bird", "cat", "dog", "horse",
                           "sheep", "cow", "elephant", "bear", "zebra", "giraffe"})
PERSON_CLASSES = frozenset({"person", "man", "woman", "child", "people", "pedestrian"})
"""The movers whose shape is a person's (MemoryConfig.person_min_height)."""

# Classes usually made of wood: described as brown whenever brown fits their measured colour.
WOODEN_CLASSES = frozenset({"chair", "diningtable", "dining table", "table", "desk", "bench", "shelf", "bookcase"})

OBJECT_CLASSES: tuple[str, ...] = (
    "chair", "table", "sofa", "bed", "cabinet", "shelf", "monitor", "lamp",
    "cup", "book", "bottle", "box", "plant", "bin", "door", "window",
)
"""The synthetic world's detection classes: every object with a 9-DoF ground-truth box (label = index here)."""

OCCUPANCY_CLASSES: tuple[str, ...] = OBJECT_CLASSES + ("floor", "wall")
"""The synthetic world's occupancy label vocabulary (label = index here; -1 = empty). The ceiling lies above
the grid."""


def is_mover(class_name: str) -> bool:
    """Whether a class is a person's or an animal's (``MOVER_CLASSES``, names compared as ``class_key`` does)."""
    return "".join(class_name.lower().split()) in MOVER_CLASSES
