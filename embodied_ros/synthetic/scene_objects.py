"""The ground-truth records of a synthetic scene: its objects and its room shell."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.boxes import FRONT_AXIS, box_rotations
from .classes import OBJECT_CLASSES
from .meshes import Part, parts_mesh
from .objects import Surface

SUPPORT_FLOOR = -1
"""``SyntheticObject.support`` of an object standing on the floor."""
SUPPORT_WALL = -2
"""``SyntheticObject.support`` of a door or window set in a wall."""


@dataclass(frozen=True, eq=False)
class SyntheticObject:
    """One object of a synthetic scene with its exact 9-DoF box.

    Attributes:
        instance_id: unique id in the scene, 0..N-1 (the instance render uses id + 1; 0 is "none").
        class_name: one of classes.OBJECT_CLASSES.
        box: (9,) float64 world box (geometry.boxes convention), tight around the parts.
        parts: primitives in the box frame (see objects.py).
        color: (3,) float64 base RGB in [0, 1] of this instance.
        support: instance id of the object it stands on, SUPPORT_FLOOR or SUPPORT_WALL.
        surfaces: horizontal surfaces others stand on, in the box frame.
    """

    instance_id: int
    class_name: str
    box: np.ndarray
    parts: tuple[Part, ...]
    color: np.ndarray
    support: int
    surfaces: tuple[Surface, ...] = ()

    @property
    def label(self) -> int:
        """Index of the class in OBJECT_CLASSES."""
        return OBJECT_CLASSES.index(self.class_name)

    @property
    def rotation(self) -> np.ndarray:
        """(3, 3) box frame -> world rotation."""
        return box_rotations(self.box)[0]

    @property
    def front(self) -> np.ndarray:
        """(3,) unit world direction the object faces."""
        return self.rotation @ FRONT_AXIS

    def world_mesh(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(V, 3) world vertices, (T, 3) triangles and (T,) part index of each triangle."""
        v, t, owner = parts_mesh(self.parts)
        return v @ self.rotation.T + self.box[:3], t, owner

    def world_surfaces(self) -> list[tuple[np.ndarray, np.ndarray, float, float]]:
        """Surfaces in the world: (centre (3,), half extents (2,), yaw, clearance) each.

        Only meaningful for upright objects (beta = gamma = 0), the only ones that carry others.
        """
        out = []
        for s in self.surfaces:
            c = self.rotation @ np.asarray(s.center) + self.box[:3]
            out.append((c, np.asarray(s.half, dtype=np.float64), float(self.box[6]), float(s.clearance)))
        return out


@dataclass(frozen=True, eq=False)
class RoomShell:
    """Floor, walls (with door and window openings) and ceiling of a rectangular room.

    The room spans x in [-width/2, width/2], y in [-depth/2, depth/2], z in [0, height]; walls
    stand outside that interior.

    Attributes:
        width, depth, height: interior size, metres.
        parts: world-frame primitives (Part.center in world coordinates, yaw about z).
        part_classes: structure class name of each part ("floor", "wall", "ceiling").
        openings: per door or window, (wall index 0..3, centre along the wall, bottom, width, height, kind).
    """

    width: float
    depth: float
    height: float
    parts: tuple[Part, ...]
    part_classes: tuple[str, ...]
    openings: tuple[tuple[int, float, float, float, float, str], ...]

    def contains_xy(self, xy: np.ndarray, margin: float = 0.0) -> np.ndarray:
        """(N,) bool: points (N, 2) inside the interior by at least ``margin`` metres."""
        xy = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
        return (np.abs(xy[:, 0]) <= self.width / 2 - margin) & (np.abs(xy[:, 1]) <= self.depth / 2 - margin)
