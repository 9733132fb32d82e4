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

import numpy as np

from ..geometry.boxes import BOX_DIM

_SPHERE_SLACK = 1e-6  # metres: keeps touching spheres (IoU 0) in, rounding never drops a real overlap


def bounding_sphere(box: np.ndarray) -> tuple[np.ndarray, float]:
    """(9,) box -> centre (3,) and radius (half the box diagonal, metres), whatever its rotation."""
    b = np.asarray(box, dtype=np.float64).reshape(BOX_DIM)
    return b[0:3].copy(), 0.5 * float(np.linalg.norm(b[3:6])) + _SPHERE_SLACK


class SpatialHashGrid:
    """Objects (integer ids) hashed into cubic cells by their bounding spheres.

    Not thread-safe by itself: SceneMemory calls it under its own lock.

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
        self._cells: dict[tuple[int, int, int], set[int]] = {}
        self._large: set[int] = set()
        self._entries: dict[int, tuple[np.ndarray, float, tuple[tuple[int, int, int], ...]]] = {}

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
        lo, hi = self._cell_range(centre, radius)
        n_cells = int(np.prod(hi - lo + 1))
        if n_cells > self.max_cells:
            cells: tuple[tuple[int, int, int], ...] = ()
            self._large.add(obj_id)
        else:
            cells = tuple(itertools.product(*(range(int(a), int(b) + 1) for a, b in zip(lo, hi, strict=True))))
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
        if not np.all(np.isfinite(centre)) or not np.isfinite(radius):
            return np.zeros(0, dtype=np.int64)
        lo, hi = self._cell_range(centre, radius)
        found: set[int] = set(self._large)
        if int(np.prod(hi - lo + 1)) > len(self._cells):
            # A query wider than the occupied part of the grid: walk the occupied cells instead.
            for cell, members in self._cells.items():
                if all(lo[k] <= cell[k] <= hi[k] for k in range(3)):
                    found |= members
        else:
            for cell in itertools.product(*(range(int(a), int(b) + 1) for a, b in zip(lo, hi, strict=True))):
                members = self._cells.get(cell)
                if members:
                    found |= members
        if not found:
            return np.zeros(0, dtype=np.int64)
        ids = np.fromiter(sorted(found), dtype=np.int64, count=len(found))
        centres = np.array([self._entries[i][0] for i in ids])
        radii = np.array([self._entries[i][1] for i in ids])
        near = np.linalg.norm(centres - centre, axis=1) <= radii + radius
        return ids[near]

    def _cell_range(self, centre: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
        lo = np.floor((centre - radius) / self.cell_size).astype(np.int64)
        hi = np.floor((centre + radius) / self.cell_size).astype(np.int64)
        return lo, hi
