"""The room's surfaces seen so far: where things rest (floor, table, counter, shelf) and the walls.

Things rest on surfaces, and the surface right beside a thing is what shows that it rests there. A
frame does not always see it: a black worktop returns depth only at some angles, and the thing
itself hides the surface under it. So every frame's up-facing surface points are kept in a sparse
map of cells (``cell`` metres across, ``layer`` metres high); a cell holds a surface once
``min_frames`` frames saw one there. The map is bounded: past ``max_cells`` the cells seen in the
fewest frames go first. Cells are keyed like memory/object_geometry.py's voxels (their lattice index
packed into one int64, kept sorted), so adding a frame and asking about a thing are numpy set
operations.

Walls and cabinet fronts are vertical planes larger than any object (``find_walls``); the planes of all
frames are kept (``WallPlanes``): what lies flat on one is a fixture of the room (``on_wall``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..geometry.grouped import medians, percentiles
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
        return _neighbour_steps(down, up, reach), down

    def cells_near(self, points: np.ndarray, below: float, above: float,
                   reach: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(N, S) bool: which of the neighbour cells (``_steps``) of each point (N, 3) hold a surface (as
        ``surface_near`` looks), and (S,) the steps' layer offsets (a window ``below`` less deep: those >= -ceil(below
        / layer))."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        steps, down = self._steps(below, above, reach)
        layers = np.tile(np.arange(-down, len(steps) // (2 * reach + 1) ** 2 - down), (2 * reach + 1) ** 2)
        if len(self.keys) == 0:
            return np.zeros((len(points), len(steps)), bool), layers
        cells, inverse = np.unique(pack_voxels(self._cells(points)), return_inverse=True)  # points share cells
        keys = cells[:, None] + steps[None, :]
        at = np.clip(np.searchsorted(self.keys, keys), 0, len(self.keys) - 1)
        found = (self.keys[at] == keys) & (self.frames[at] >= self.min_frames)
        return found[inverse.reshape(-1)], layers

    def holds(self, points: np.ndarray, above: int = 1) -> np.ndarray:
        """(N,) bool: whether each point (N, 3) lies in a surface cell or up to ``above`` layers over one."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(points) == 0 or len(self.keys) == 0:
            return np.zeros(len(points), bool)
        keys, inverse = np.unique(pack_voxels(self._cells(points)), return_inverse=True)  # points share cells
        found = np.zeros(len(keys), bool)
        for dz in range(above + 1):
            at = np.clip(np.searchsorted(self.keys, keys - dz), 0, len(self.keys) - 1)
            found |= (self.keys[at] == keys - dz) & (self.frames[at] >= self.min_frames)
        return found[inverse.reshape(-1)]

    def surface_near(self, points: np.ndarray, below: float, above: float, reach: int = 1) -> np.ndarray:
        """(N,) bool: whether a surface lies beside each point (N, 3): in a cell within ``reach`` cells
        horizontally and between ``below`` metres under and ``above`` over its height."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(points) == 0 or len(self.keys) == 0:
            return np.zeros(len(points), bool)
        return self.cells_near(points, below, above, reach)[0].any(axis=1)

    def height_under(self, points: np.ndarray, below: float, above: float, reach: int = 1) -> float:
        """The median height (m) of the surface cells beside the points (N, 3), as ``surface_near``
        finds them; NaN where there is none."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        if len(points) == 0 or len(self.keys) == 0:
            return float("nan")
        return self.height_of(points, *self.cells_near(points, below, above, reach))

    def height_of(self, points: np.ndarray, found: np.ndarray, layers: np.ndarray) -> float:
        """``height_under`` of the points (N, 3) from their cells (``cells_near``); NaN where there is none."""
        rows, cols = np.nonzero(found)
        if len(rows) == 0:
            return float("nan")
        cell_layer = self._cells(points)[rows, 2] + layers[cols]
        return float(medians((cell_layer + 0.5) * self.layer))

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


@dataclass
class WallPlanes:
    """The structure planes seen so far (walls, cabinet fronts): rows of normal angle (rad, [0, pi)),
    offset, extent along the plane (m, start and end) and frames that saw it; a plane of a frame within
    ``angle_tol`` and ``offset_tol`` of a known one is that one. The ``max_planes`` seen most are kept."""

    angle_tol: float = np.deg2rad(5.0)
    offset_tol: float = 0.05
    max_planes: int = 64
    rows: np.ndarray = field(default_factory=lambda: np.zeros((0, 5)))

    def add(self, planes: list[np.ndarray]) -> None:
        for plane in planes:
            near = np.flatnonzero((angle_apart(self.rows[:, 0], plane[0]) < self.angle_tol)
                                  & (np.abs(self.rows[:, 1] - plane[1]) < self.offset_tol))
            if len(near):
                row = self.rows[near[0]]
                row[2], row[3] = min(row[2], plane[2]), max(row[3], plane[3])
                row[4] += 1
            else:
                self.rows = np.vstack([self.rows, np.append(plane, 1.0)])
        if len(self.rows) > self.max_planes:
            self.rows = self.rows[np.argsort(-self.rows[:, 4], kind="stable")[: self.max_planes]]

    def seen(self, planes: list[np.ndarray], min_frames: int = 2) -> np.ndarray:
        """(W, 4) the planes of this frame and those seen in at least ``min_frames`` frames."""
        known = self.rows[self.rows[:, 4] >= min_frames, :4]
        return np.vstack([np.array(planes).reshape(-1, 4), known])


@lru_cache(maxsize=64)
def _neighbour_steps(down: int, up: int, reach: int) -> np.ndarray:
    """(S,) packed key differences to the cells within ``reach`` horizontally and ``down`` layers under to ``up``
    over a cell (``SupportMap._steps``; the same few neighbourhoods are asked for again and again)."""
    ijk = np.stack(np.meshgrid(np.arange(-reach, reach + 1), np.arange(-reach, reach + 1),
                               np.arange(-down, up + 1), indexing="ij"), axis=-1).reshape(-1, 3)
    steps = pack_voxels(ijk) - pack_voxels(np.zeros((1, 3), np.int64))
    steps.setflags(write=False)
    return steps


def find_walls(points: np.ndarray, normal: np.ndarray, has_normal: np.ndarray, valid: np.ndarray,
               p: Any) -> tuple[np.ndarray, list[np.ndarray]]:
    """(h, w) bool: the samples on vertical planes larger than any object (walls, cabinet fronts), and
    those planes (``_plane``); ``p``: the rules (DiscoveryParams: wall_cos, wall_tol, min_wall_span,
    min_points)."""
    out = np.zeros_like(valid)
    walls: list[np.ndarray] = []
    at = np.flatnonzero(valid)  # the valid samples, as flat arrays
    xy = points.reshape(-1, 3)[at, :2]
    z = points.reshape(-1, 3)[at, 2]
    n = normal.reshape(-1, 3)[at]
    known = has_normal.ravel()[at]
    vertical = known & (np.abs(n[:, 2]) < p.wall_cos)
    if vertical.sum() < 4 * p.min_points:
        return out, walls
    upright = np.flatnonzero(vertical)  # the normals' angles where asked for: arctan2 is the costly step
    theta = _angles(n[upright])  # a plane's two sides alike
    step = np.deg2rad(3.0)
    hist = np.bincount((theta / step).astype(np.int64) % 60, minlength=60)
    band = hist + np.roll(hist, 1) + np.roll(hist, -1)
    done: list[float] = []
    wall = np.zeros(len(at), bool)
    for k in np.argsort(-band)[:4]:
        if band[k] < 0.1 * vertical.sum():
            break
        angle = (k + 0.5) * step
        if any(angle_apart(np.array([angle]), a)[0] < np.deg2rad(20) for a in done):
            continue
        done.append(angle)
        facing = np.zeros(len(at), bool)
        facing[upright] = angle_apart(theta, angle) < np.deg2rad(8)
        offsets = xy @ np.array([np.cos(angle), np.sin(angle)], dtype=np.float32)
        for rho in histogram_peaks(offsets[facing], 0.02, max(4 * p.min_points, 0.01 * len(at))):
            on = facing & (np.abs(offsets - rho) < p.wall_tol)
            plane = _plane(xy, z, n, known, on, p)
            if plane is not None:
                wall |= plane[0]
                walls.append(plane[1])
    out.ravel()[at] = wall
    return out, walls

def _angles(normals: np.ndarray) -> np.ndarray:
    """(N,) the horizontal directions (rad, in [0, pi)) of (N, 3) normals, a plane's two sides alike."""
    return np.mod(np.arctan2(normals[:, 1], normals[:, 0]), np.pi)


def _plane(xy: np.ndarray, z: np.ndarray, normals: np.ndarray, known: np.ndarray, on: np.ndarray,
           p: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """The vertical plane through the ``on`` samples when it is structure (larger than any object;
    else None): (V,) bool its samples (near it, along its extent, not facing across it), and the
    plane as (4,) normal angle (rad, in [0, pi)), offset along that normal and its extent along
    the plane (m). ``normals``: (V, 3) the samples' normals (their angles are taken where needed)."""
    pts = xy[on].astype(np.float64)
    if len(pts) < 4 * p.min_points:
        return None
    centre = pts.mean(axis=0)
    _, vectors = np.linalg.eigh((pts - centre).T @ (pts - centre))  # the plane's normal, refined
    normal = vectors[:, 0]
    along = np.array([-normal[1], normal[0]])
    span = percentiles((pts @ along)[:, None], (1, 99))[:, 0]
    height = percentiles(z[on][:, None], (1, 99))[:, 0]
    if span[1] - span[0] < p.min_wall_span and height[1] - height[0] < p.min_wall_span:
        return None
    near = np.abs((xy - centre) @ normal) < p.wall_tol
    t = xy[near] @ along
    near[near] = (t >= span[0] - 0.05) & (t <= span[1] + 0.05)
    refined = np.mod(np.arctan2(normal[1], normal[0]), np.pi)
    near[near] = ~known[near] | (angle_apart(_angles(normals[near]), refined) < np.deg2rad(30))
    refined_normal = np.array([np.cos(refined), np.sin(refined)])
    along = np.array([-refined_normal[1], refined_normal[0]])
    ends = percentiles((pts @ along)[:, None], (1, 99))[:, 0]
    return near, np.array([refined, float(centre @ refined_normal), ends[0], ends[1]])


def on_wall(points: np.ndarray, walls: np.ndarray, depth: float) -> bool:
    """Whether nearly all the (N, 3) points lie within ``depth`` metres of one of the (W, 4) vertical
    planes (``ObjectDiscovery._plane``), along its extent."""
    if len(walls) == 0:
        return False
    normals = np.stack([np.cos(walls[:, 0]), np.sin(walls[:, 0])])  # (2, W)
    along = points[:, :2].mean(axis=0) @ np.stack([-normals[1], normals[0]])
    beside = (along >= walls[:, 2] - 0.1) & (along <= walls[:, 3] + 0.1)
    if not beside.any():
        return False
    gap = np.abs(points[:, :2] @ normals[:, beside] - walls[beside, 1])  # (N, W')
    return bool((percentiles(gap, (95,))[0] <= depth).any())


def histogram_peaks(values: np.ndarray, bin_size: float, min_count: float) -> list[float]:
    """Heights of the histogram peaks (a bin with its two neighbours holding ``min_count``), apart by
    more than three bins, refined to the mean of their values."""
    if len(values) == 0:
        return []
    lo = float(values.min())
    hist = np.bincount(((values - lo) / bin_size).astype(np.int64))
    band = hist + np.concatenate([hist[1:], [0]]) + np.concatenate([[0], hist[:-1]])
    out: list[int] = []
    for k in np.argsort(-band):
        if band[k] < min_count:
            break
        if all(abs(int(k) - j) > 3 for j in out):
            out.append(int(k))
    peaks = []
    for k in out:
        centre = lo + (k + 0.5) * bin_size
        peaks.append(float(values[np.abs(values - centre) < 1.5 * bin_size].mean()))
    return peaks


def angle_apart(theta: np.ndarray, angle: float) -> np.ndarray:
    """Angles between undirected horizontal directions (radians in [0, pi/2])."""
    d = np.abs(np.mod(theta - angle, np.pi))
    return np.minimum(d, np.pi - d)
