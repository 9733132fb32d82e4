"""A uniform hash grid over objects' bounding spheres: which objects might overlap a box.

Scene memory association must not slow down as the scene fills up. Each object is entered in
every grid cell that its bounding sphere's axis-aligned bounds touch, so a query only visits
the cells around the query box and the cost depends on the local object density, not on the
number of objects. (Keying objects by their centre alone would need every query to grow by
the largest object radius in the map, and one huge false detection would slow every query;
here the rare object wider than ``max_cells`` cells goes to a short list checked by every
query instead.)

The index is conservative: it returns every object whose bounding sphere intersects the query
box's bounding sphere, a superset of the objects with a non-zero IoU.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..geometry.boxes import BOX_DIM

_SPHERE_SLACK = 1e-6  # metres: keeps touching spheres (IoU 0) in, rounding never drops a real overlap


def bounding_sphere(box: np.ndarray) -> tuple[tuple[float, float, float], float]:
    """(9,) box -> centre (x, y, z) and radius (half the box diagonal, metres), whatever its rotation."""
    x, y, z, dx, dy, dz = np.asarray(box, dtype=np.float64).reshape(BOX_DIM)[:6].tolist()
    return (x, y, z), 0.5 * math.sqrt(dx * dx + dy * dy + dz * dz) + _SPHERE_SLACK


_Cell = tuple[int, int, int]


class SpatialHashGrid:
    """Objects (integer ids) hashed into cubic cells by their bounding spheres.

    Not thread-safe by itself: SceneMemory calls it under its own lock. Scalar maths is plain
    Python on purpose: a query touches a handful of cells and objects, where numpy's per-call
    overhead would dominate.

    Args:
        cell_size: cell edge in metres; about one object wide keeps both the cells per
            object and the objects per cell small.
        max_cells: objects whose sphere bounds touch more cells than this are kept in a
            list that every query checks, so insertion cost stays bounded.
    """

    def __init__(self, cell_size: float = 1.0, max_cells: int = 64) -> None:
        if not cell_size > 0.0:
            raise ValueError(f"cell_size must be positive, got {cell_size}")
        self.cell_size = float(cell_size)
        self.max_cells = int(max_cells)
        self._cells: dict[_Cell, set[int]] = {}
        self._large: set[int] = set()
        self._entries: dict[int, tuple[tuple[float, float, float], float, tuple[_Cell, ...]]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, obj_id: object) -> bool:
        return obj_id in self._entries

    def clear(self) -> None:
        """Forget every object."""
        self._cells.clear()
        self._large.clear()
        self._entries.clear()

    def insert(self, obj_id: int, box: np.ndarray) -> None:
        """Add object ``obj_id`` with its (9,) world box, or move it if it is already indexed."""
        if obj_id in self._entries:
            self.remove(obj_id)
        centre, radius = bounding_sphere(box)
        ranges = self._cell_ranges(centre, radius)
        cells: tuple[_Cell, ...] = ()
        if ranges is None or math.prod(len(r) for r in ranges) > self.max_cells:
            self._large.add(obj_id)
        else:
            cells = tuple(itertools.product(*ranges))
            for cell in cells:
                self._cells.setdefault(cell, set()).add(obj_id)
        self._entries[obj_id] = (centre, radius, cells)

    update = insert  # a box change is a re-insertion; the name reads better at call sites

    def remove(self, obj_id: int) -> None:
        """Drop object ``obj_id``; unknown ids are ignored."""
        entry = self._entries.pop(obj_id, None)
        if entry is None:
            return
        self._large.discard(obj_id)
        for cell in entry[2]:
            members = self._cells[cell]
            members.discard(obj_id)
            if not members:
                del self._cells[cell]  # empty cells would make the dict grow with the path walked

    def query(self, box: np.ndarray) -> np.ndarray:
        """Ids (sorted int64) of objects whose bounding sphere intersects that of the (9,) ``box``."""
        centre, radius = bounding_sphere(box)
        ranges = self._cell_ranges(centre, radius)
        if ranges is None:
            return np.zeros(0, dtype=np.int64)
        found: set[int] = set(self._large)
        if math.prod(len(r) for r in ranges) > len(self._cells):
            # A query wider than the occupied part of the grid: walk the occupied cells instead.
            for cell, members in self._cells.items():
                if all(cell[k] in ranges[k] for k in range(3)):
                    found |= members
        else:
            for cell in itertools.product(*ranges):
                members = self._cells.get(cell)
                if members:
                    found |= members
        near = [i for i in found if math.dist(self._entries[i][0], centre) <= self._entries[i][1] + radius]
        return np.array(sorted(near), dtype=np.int64)

    def _cell_ranges(self, centre: tuple[float, float, float], radius: float) -> tuple[range, ...] | None:
        """Cell index ranges per axis covered by a sphere; None for a non-finite one."""
        if not all(math.isfinite(v) for v in (*centre, radius)):
            return None
        s = self.cell_size
        return tuple(range(math.floor((c - radius) / s), math.floor((c + radius) / s) + 1) for c in centre)
