"""Where the room's horizontal surfaces are: the supports (floor, table, counter, shelf) seen so far.

Things rest on surfaces, and the surface right beside a thing is what shows that it rests there. A
frame does not always see it: a black worktop returns depth only at some angles, and the thing
itself hides the surface under it. So every frame's up-facing surface points are kept in a sparse
map of cells (``cell`` metres across, ``layer`` metres high); a cell holds a surface once
``min_frames`` frames saw one there. The map is bounded: past ``max_cells`` the cells seen in the
fewest frames go first.

Cells are keyed like memory/object_geometry.py's voxels (their lattice index packed into one int64,
kept sorted), so adding a frame and asking about a thing are numpy set operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .object_geometry import pack_voxels, unpack_voxels


@dataclass
class SupportMap:
    """The horizontal surfaces seen so far (mutable; its owner serialises access).

    Attributes:
        cell: horizontal cell edge, metres.
        layer: height of a cell, metres.
        min_frames: frames that must have seen a surface in a cell before it counts.
        max_cells: bound on the cells kept.
        keys: (K,) sorted int64 cell keys.
        frames: (K,) int32 frames that saw a surface in each cell.
    """

    cell: float = 0.04
    layer: float = 0.02
    min_frames: int = 1
    max_cells: int = 400_000
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    frames: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))

    def __len__(self) -> int:
        return len(self.keys)

    def _cells(self, points: np.ndarray) -> np.ndarray:
        """(N, 3) world points -> (N, 3) int64 cell indices."""
        scale = np.array([self.cell, self.cell, self.layer])
        return np.floor(np.asarray(points, dtype=np.float64).reshape(-1, 3) / scale).astype(np.int64)

    def add(self, points: np.ndarray) -> None:
        """Count one frame's surface points (N, 3): each cell they fall in is seen once more."""
        if len(points) == 0:
            return
        new = np.unique(pack_voxels(self._cells(points)))
        at = np.clip(np.searchsorted(self.keys, new), 0, max(len(self.keys) - 1, 0))
        known = (self.keys[at] == new) if len(self.keys) else np.zeros(len(new), bool)
        self.frames[at[known]] += 1
        fresh = new[~known]
        if len(fresh):  # a new cell goes where it sorts: one copy of the arrays, not a re-sort
            where = np.searchsorted(self.keys, fresh)
            self.keys = np.insert(self.keys, where, fresh)
            self.frames = np.insert(self.frames, where, np.ones(len(fresh), np.int32))
        if len(self.keys) > self.max_cells:
            keep = np.sort(np.argsort(-self.frames, kind="stable")[: self.max_cells])
            self.keys, self.frames = self.keys[keep], self.frames[keep]

    def _steps(self, below: float, above: float, reach: int) -> tuple[np.ndarray, int]:
        """Key differences to every cell within ``reach`` cells horizontally and the layers from
        ``below`` under to ``above`` over a cell (keys add field by field: no field leaves its bits),
        and the number of layers below."""
        down, up = int(np.ceil(below / self.layer)), int(np.ceil(above / self.layer))
        ijk = np.stack(np.meshgrid(np.arange(-reach, reach + 1), np.arange(-reach, reach + 1),
                                   np.arange(-down, up + 1), indexing="ij"), axis=-1).reshape(-1, 3)
        return pack_voxels(ijk) - pack_voxels(np.zeros((1, 3), np.int64)), down

    def _found(self, points: np.ndarray, below: float, above: float, reach: int) -> tuple[np.ndarray, np.ndarray]:
        """(N, S) bool: which of the neighbour cells (``_steps``) of each point hold a surface, and (S,)
        the steps' layer offsets."""
        steps, down = self._steps(below, above, reach)
        keys = pack_voxels(self._cells(points))[:, None] + steps[None, :]
        at = np.clip(np.searchsorted(self.keys, keys), 0, len(self.keys) - 1)
        found = (self.keys[at] == keys) & (self.frames[at] >= self.min_frames)
        layers = np.tile(np.arange(-down, len(steps) // (2 * reach + 1) ** 2 - down), (2 * reach + 1) ** 2)
        return found, layers

    def holds(self, points: np.ndarray, above: int = 1) -> np.ndarray:
        """(N,) bool: whether each point (N, 3) lies in a surface cell or up to ``above`` layers over one."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(points) == 0 or len(self.keys) == 0:
            return np.zeros(len(points), bool)
        found = np.zeros(len(points), bool)
        keys = pack_voxels(self._cells(points))
        for dz in range(above + 1):
            at = np.clip(np.searchsorted(self.keys, keys - dz), 0, len(self.keys) - 1)
            found |= (self.keys[at] == keys - dz) & (self.frames[at] >= self.min_frames)
        return found

    def surface_near(self, points: np.ndarray, below: float, above: float, reach: int = 1) -> np.ndarray:
        """(N,) bool: whether a surface lies beside each point (N, 3): in a cell within ``reach`` cells
        horizontally and between ``below`` metres under and ``above`` over its height."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(points) == 0 or len(self.keys) == 0:
            return np.zeros(len(points), bool)
        return self._found(points, below, above, reach)[0].any(axis=1)

    def height_under(self, points: np.ndarray, below: float, above: float, reach: int = 1) -> float:
        """The median height (m) of the surface cells beside the points (N, 3), as ``surface_near``
        finds them; NaN where there is none."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(points) == 0 or len(self.keys) == 0:
            return float("nan")
        found, layers = self._found(points, below, above, reach)
        rows, cols = np.nonzero(found)
        if len(rows) == 0:
            return float("nan")
        cell_layer = self._cells(points)[rows, 2] + layers[cols]
        return float(np.median((cell_layer + 0.5) * self.layer))

    def levels(self, min_cells: int) -> np.ndarray:
        """(L,) heights (m) of the layers that hold a surface in at least ``min_cells`` cells: the room's
        tables, counters, shelves and floor, wherever they were seen."""
        if len(self.keys) == 0:
            return np.zeros(0)
        layer = unpack_voxels(self.keys[self.frames >= self.min_frames])[:, 2]
        if len(layer) == 0:
            return np.zeros(0)
        counts = np.bincount(layer - layer.min())
        return (np.flatnonzero(counts >= min_cells) + layer.min() + 0.5) * self.layer

    def reset(self) -> None:
        self.keys = np.zeros(0, np.int64)
        self.frames = np.zeros(0, np.int32)
