"""Where in its voxel a surface passed: a bit per sub-cell (n x n x n, n <= 4: one 64-bit mask per voxel).

Depth hits set the bit of the sub-cell they fall in; ``surface_labels`` voxelises those sub-cells into
a caller's grid, so a grid turned against the map's lattice gets the surfaces where they are, not
where the map voxel under its centre says.
"""

from __future__ import annotations

import numpy as np

from ..geometry.columns import rows_all, sorted_unique
from ..geometry.grid import GridSpec
from .raycast import transform_per_axis
from .voxel_blocks import MAX_VOXEL_COORD, VoxelBlocks


def mark_surface(blocks: VoxelBlocks, n: int, points: np.ndarray, flat: np.ndarray | None = None) -> None:
    """Set the surface bit of the sub-cell each (N, 3) point (voxel units) lies in.

    Args:
        blocks: the map's voxels; their "surface" field is updated.
        n: sub-cells per voxel edge (< 2: nothing is marked).
        points: (N, 3) points in voxel units.
        flat: the points' voxels' flat indices when known (-1 for none), else they are looked up.
    """
    if n < 2 or len(points) == 0:
        return
    vox = np.floor(points)
    if flat is None:
        ok = rows_all((vox >= -MAX_VOXEL_COORD) & (vox < MAX_VOXEL_COORD))
        vox, points = vox[ok], points[ok]
        flat = blocks.lookup(vox.astype(np.int64), allocate=False)
    have = flat >= 0
    sub = np.clip(np.floor((points[have] - vox[have]) * n).astype(np.int64), 0, n - 1)
    bit = (sub[:, 0] * n + sub[:, 1]) * n + sub[:, 2]
    # One OR per voxel of all its hits' bits: the (voxel, bit) pairs, unique, ORed voxel by voxel.
    cell, bit = np.divmod(sorted_unique(flat[have] * 64 + bit), 64)
    if len(cell) == 0:
        return
    first = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
    masks = np.left_shift(np.uint64(1), bit.astype(np.uint64))
    blocks.data["surface"][cell[first]] |= np.bitwise_or.reduceat(masks, first)


def surface_labels(blocks: VoxelBlocks, origin: np.ndarray, voxel_size: float, n: int, occupied_threshold: float,
                   T: np.ndarray, spec: GridSpec, n_classes: int) -> np.ndarray:
    """Per grid voxel (flat, x slowest), the majority label of the surface sub-cells in it; -1 for none.

    Args:
        blocks: the map's voxels.
        origin: (3,) world position of the map lattice's origin; ``voxel_size``: its voxel edge, metres.
        n: sub-cells per voxel edge.
        occupied_threshold: log-odds above which a voxel is occupied (only those count).
        T: (4, 4) pose of the grid's voxel (0, 0, 0) corner in the world; ``spec``: the grid.
        n_classes: size of the vocabulary; this label stands for occupied voxels without a class vote.
    """
    shape = np.asarray(spec.shape)
    corners = np.indices((2, 2, 2)).reshape(3, -1).T * shape * spec.voxel_size
    world = transform_per_axis(T, corners)
    lo = np.floor((world.min(axis=0) - origin) / voxel_size).astype(np.int64)
    hi = np.floor((world.max(axis=0) - origin) / voxel_size).astype(np.int64)
    out = np.full(int(np.prod(shape)), -1, dtype=np.int64)
    if np.any(lo < -MAX_VOXEL_COORD) or np.any(hi >= MAX_VOXEL_COORD):
        return out
    d = blocks.data
    flat = blocks.voxels_in_range(lo, hi)
    occupied = d["observed"][flat] & (d["log_odds"][flat] > occupied_threshold)
    flat = flat[occupied & (d["surface"][flat] != 0)]
    if flat.size == 0:
        return out
    bits = (d["surface"][flat][:, None] >> np.arange(n**3, dtype=np.uint64)) & np.uint64(1)
    which, bit = np.nonzero(bits)
    sub = np.stack([bit // (n * n), (bit // n) % n, bit % n], axis=1)
    points = (blocks.voxel_coords(flat)[which] + (sub + 0.5) / n) * voxel_size + origin
    idx = np.floor(transform_per_axis(np.linalg.inv(T), points) / spec.voxel_size).astype(np.int64)
    inside = np.all((idx >= 0) & (idx < shape), axis=1)
    label = d["label"][flat][which][inside].astype(np.int64)
    label = np.where(label >= 0, label, n_classes)
    lin = np.ravel_multi_index(idx[inside].T, tuple(shape))
    votes = np.bincount(lin * (n_classes + 1) + label, minlength=out.size * (n_classes + 1))
    votes = votes.reshape(out.size, n_classes + 1)  # per grid voxel, sub-cells per label
    return np.where(votes.max(axis=1) > 0, votes.argmax(axis=1), -1)
