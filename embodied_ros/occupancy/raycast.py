"""Voxels crossed by a bundle of depth rays, found with vectorised ray sampling (numpy, no per-ray loop)."""

from __future__ import annotations

import numpy as np

_RAY_STEP = 0.5  # samples per voxel edge: half-voxel spacing visits every voxel a ray crosses but corners
_RAY_GROUPS = 6  # rays are sampled in this many groups of similar length (less padding)
_MASK_LIMIT = 1 << 25  # cells of the per-frame dense scratch mask; larger frames fall back to np.unique
# Bounds on one call's work and memory whatever the camera, pose or settings say (a camera check
# keeps real frames far inside them): a ray is cut at _MAX_RAY_VOXELS (its end then gives no hit),
# when the rays would need more than _MAX_SAMPLES samples, every k-th of them is carved, and a group's
# (rays, samples) grid holds at most _MAX_SAMPLES cells.
_MAX_RAY_VOXELS = 4096.0
_MAX_SAMPLES = 1 << 22


def trace_rays(origin: np.ndarray, seg: np.ndarray, hit: np.ndarray, carve: np.ndarray | None = None,
               hit_rows: bool = False) -> tuple[np.ndarray, ...]:
    """Voxels of a bundle of rays, in voxel units.

    Args:
        origin: (3,) ray origin (the camera), voxel units.
        seg: (3, R) vectors from the origin to each ray's endpoint, voxel units, one row per axis
            (numpy reduces the rows of an (R, 3) array along its short axis several times slower).
        hit: (R,) bool, True where the endpoint is a surface (a hit).
        carve: (R,) bool, the rays whose free space is sampled (None: every ray); the others give
            only their hit.
        hit_rows: also return, per hit ray (in ray order), the row of its endpoint voxel among
            the hit voxels (to mark where in the voxel it ended without looking the voxel up again).

    Returns:
        (H, 3) int64 unique endpoint voxels of the hit rays and (F, 3) int64 unique voxels
        crossed by the rays (samples every half voxel up to one voxel short of the endpoint),
        without the endpoint voxels; with ``hit_rows``, then the (count of hit rays,) int64 rows.
    """
    if seg.shape[1] == 0:
        empty = np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64)
        return (*empty, np.zeros(0, np.int64)) if hit_rows else empty
    length = np.sqrt(seg[0] * seg[0] + seg[1] * seg[1] + seg[2] * seg[2])  # np.linalg.norm's sum, axis by axis
    if length.max() > _MAX_RAY_VOXELS:
        cut = length > _MAX_RAY_VOXELS
        seg = np.where(cut, seg * (_MAX_RAY_VOXELS / np.maximum(length, 1e-9)), seg)
        hit, length = hit & ~cut, np.minimum(length, _MAX_RAY_VOXELS)
    n = np.where(length > 1.0, np.floor((length - 1.0) / _RAY_STEP).astype(np.int64) + 1, 0)
    end = origin[:, None] + seg
    lo = np.floor(np.minimum(origin, end.min(axis=1))).astype(np.int64) - 1  # a voxel of margin for rounding
    dims = np.floor(np.maximum(origin, end.max(axis=1))).astype(np.int64) - lo + 2
    size = int(np.prod(dims.astype(np.float64)))
    hit_cells_of_rays = np.floor(end[:, hit]).astype(np.int64) - lo[:, None]
    hit_lin = (hit_cells_of_rays[0] * dims[1] + hit_cells_of_rays[1]) * dims[2] + hit_cells_of_rays[2]
    rel = (origin - lo).astype(np.float32)
    idx_dtype = np.int32 if size < 2**31 else np.int64
    chunks = []
    # Rays sorted by sample count and cut into a few groups; within a group all rays are sampled
    # at once on a (rays, most samples) grid, a ray's surplus samples clamped onto its last one,
    # so the padding repeats a cell instead of needing a mask and stays small.
    rays = np.flatnonzero((n > 0) if carve is None else (n > 0) & carve)
    if n[rays].sum() > _MAX_SAMPLES:
        rays = rays[:: -(-int(n[rays].sum()) // _MAX_SAMPLES)]
    rays = rays[np.argsort(n[rays], kind="stable")]
    groups = max(_RAY_GROUPS, -(-len(rays) * int(n[rays].max(initial=1)) // _MAX_SAMPLES))
    for group in np.array_split(rays, min(groups, len(rays))) if len(rays) else []:
        ng = n[group]
        unit = (seg[:, group] / length[group]).astype(np.float32)  # (3, rays)
        t = np.minimum(np.arange(int(ng[-1]), dtype=np.float32)[None, :] * np.float32(_RAY_STEP),
                       ((ng - 1) * _RAY_STEP).astype(np.float32)[:, None])  # (rays, samples)
        lin = np.zeros(t.shape, dtype=idx_dtype)
        for a in range(3):
            cell = unit[a, :, None] * t
            cell += rel[a]
            lin *= idx_dtype(dims[a])
            lin += cell.astype(idx_dtype)  # non-negative (one voxel of margin), so truncation is floor
        chunks.append(lin.reshape(-1))
    # Duplicates vanish by marking a dense scratch mask around the frustum instead of sorting
    # hundreds of thousands of samples.
    if size <= _MASK_LIMIT:
        free_mask = np.zeros(size, dtype=bool)
        for lin in chunks:
            free_mask[lin] = True
        hit_mask = np.zeros(size, dtype=bool)
        hit_mask[hit_lin] = True
        hit_cells, free_cells = np.flatnonzero(hit_mask), np.flatnonzero(free_mask & ~hit_mask)
    else:
        hit_cells = np.unique(hit_lin)
        free_cells = np.setdiff1d(np.unique(np.concatenate(chunks)), hit_cells, assume_unique=True)
    voxels = unlinearise(hit_cells, lo, dims), unlinearise(free_cells, lo, dims)
    return (*voxels, np.searchsorted(hit_cells, hit_lin)) if hit_rows else voxels


def _linear(cells: np.ndarray, dims: np.ndarray) -> np.ndarray:
    return (cells[:, 0] * dims[1] + cells[:, 1]) * dims[2] + cells[:, 2]


def linearise(vox: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(M, 3) int64 voxels -> (M,) int64 linear indices in their bounding box, the box origin and size."""
    lo = vox.min(axis=0) if len(vox) else np.zeros(3, np.int64)
    dims = (vox.max(axis=0) - lo + 1) if len(vox) else np.ones(3, np.int64)
    return _linear(vox - lo, dims), lo, dims


def unlinearise(lin: np.ndarray, lo: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Inverse of linearise: (M,) linear indices -> (M, 3) int64 voxels."""
    return np.stack(np.unravel_index(lin, tuple(int(d) for d in dims)), axis=1).astype(np.int64) + lo


def backproject(K: np.ndarray, u: np.ndarray, v: np.ndarray, z: np.ndarray) -> list[np.ndarray]:
    """Camera-frame x, y, z of pixels (u, v) at depth z, written out per axis (no BLAS call)."""
    Ki = np.linalg.inv(K)
    return [(Ki[i, 0] * u + Ki[i, 1] * v + Ki[i, 2]) * z for i in range(3)]


def transform_per_axis(T: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(4, 4) rigid T applied to (N, 3) points, per axis: geometry.transforms.transform_points's (N, 3) @ (3, 3)
    product goes through BLAS, whose threads cost more than the arithmetic at a frame's size."""
    return np.stack([T[i, 0] * points[:, 0] + T[i, 1] * points[:, 1] + T[i, 2] * points[:, 2] + T[i, 3]
                     for i in range(3)], axis=1)
