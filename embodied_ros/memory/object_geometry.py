"""An object's own geometry: the world voxels its detections covered, across every view.

One view lifts only the visible part of an object (half a table, a chair's back above the table),
so boxes of one object disagree between views. Keeping the union of the parts, and fitting the
box to all of it, gives one whole object; two fragments of one object share voxels, which is
what the memory merges on.

A view's detection also covers what surrounds the object in its 2D box (the table around a book,
the wall behind a monitor's bezel). So each voxel also counts the frames in which it was seen
(its depth confirmed) while the object was detected: a voxel of the object is covered nearly
every time it is seen, its surroundings only now and then. The object's own voxels are those
covered in at least ``min_ratio`` of the frames that saw them (``core``).

Voxels are keyed by their integer lattice index packed into one int64 (21 bits per axis,
+-1 M voxels: +-31 km at 3 cm) and kept sorted, so unions and look-ups are numpy set operations.
Each voxel keeps how many frames covered it, how many saw it, and the sum of the points in it
(its centroid is sharper than its centre). The number of voxels is bounded: past ``max_voxels``
the ones covered by the fewest frames go first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..geometry.columns import column_max, column_min, rows_all, rows_any
from ..geometry.fitting import fit_upright_box

_BITS = 21
_OFFSET = 1 << (_BITS - 1)
_MASK = (1 << _BITS) - 1
_NEIGHBOURS = np.array([(i, j, k) for i in (-1, 0, 1) for j in (-1, 0, 1) for k in (-1, 0, 1)], dtype=np.int64)
# The same 27 steps as key differences: a key plus one is its neighbour's key (no field leaves its
# 21 bits short of the lattice's edge, 31 km away at 3 cm).
_NEIGHBOUR_STEPS = (_NEIGHBOURS[:, 0] << (2 * _BITS)) + (_NEIGHBOURS[:, 1] << _BITS) + _NEIGHBOURS[:, 2]


# Cells of an object's cached near-grid (ObjectGeometry.near_count) at most: 128 KB, a 1.5 m cube at 3 cm.
_NEAR_GRID_CELLS = 1 << 17


def pack_voxels(ijk: np.ndarray) -> np.ndarray:
    """(N, 3) int lattice indices -> (N,) int64 keys."""
    ijk = np.asarray(ijk, dtype=np.int64) + _OFFSET
    return (ijk[:, 0] << (2 * _BITS)) | (ijk[:, 1] << _BITS) | ijk[:, 2]


def unpack_voxels(keys: np.ndarray) -> np.ndarray:
    """(N,) int64 keys -> (N, 3) int64 lattice indices."""
    keys = np.asarray(keys, dtype=np.int64)
    return np.stack([(keys >> (2 * _BITS)) & _MASK, (keys >> _BITS) & _MASK, keys & _MASK], axis=1) - _OFFSET


def voxel_keys(points: np.ndarray, voxel_size: float) -> np.ndarray:
    """(N, 3) world points (m) -> (N,) keys of the voxels holding them."""
    return pack_voxels(np.floor(np.asarray(points, dtype=np.float64) / voxel_size).astype(np.int64))


def _sum_by(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """(n, 3) sums of the (M, 3) ``values`` grouped by ``index`` (M,) in [0, n)."""
    return np.stack([np.bincount(index, weights=values[:, k], minlength=n) for k in range(3)], axis=1)


def neighbourhoods(keys: np.ndarray) -> np.ndarray:
    """(N, 27) keys of each voxel's 3 x 3 x 3 block (itself and its 26 neighbours)."""
    return np.asarray(keys, dtype=np.int64)[:, None] + _NEIGHBOUR_STEPS[None, :]


def near_fraction(blocks: np.ndarray, sorted_keys: np.ndarray) -> float:
    """Fraction of voxels (given by their ``neighbourhoods``) with ``sorted_keys`` holding them or one
    of their 26 neighbours: two surfaces within a voxel of each other (one object seen twice,
    sensor noise apart)."""
    if len(blocks) == 0 or len(sorted_keys) == 0:
        return 0.0
    return float(_near_hits(blocks, sorted_keys)) / len(blocks)


def _near_hits(blocks: np.ndarray, sorted_keys: np.ndarray) -> int:
    """How many rows of ``blocks`` have a key in the non-empty sorted ``sorted_keys``."""
    at = np.minimum(np.searchsorted(sorted_keys, blocks), len(sorted_keys) - 1)
    return int(np.count_nonzero(rows_any(sorted_keys[at] == blocks)))


def _members(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """(N,) bool: which ``keys`` are in the sorted array ``sorted_keys`` (``np.isin`` for a sorted right side)."""
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


def fraction_in(keys: np.ndarray, sorted_keys: np.ndarray) -> float:
    """Fraction of ``keys`` found in the sorted array ``sorted_keys`` (0 for no keys)."""
    if len(keys) == 0 or len(sorted_keys) == 0:
        return 0.0
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return float(np.count_nonzero(sorted_keys[at] == keys)) / len(keys)


@dataclass
class ObjectGeometry:
    """The voxels of one object (mutable; the scene memory owns it under its lock).

    Attributes:
        voxel_size: voxel edge, metres.
        max_voxels: bound on the voxels kept.
        keys: (K,) sorted int64 voxel keys.
        counts: (K,) int32 frames that covered each voxel.
        seen: (K,) int32 frames that saw each voxel while the object was detected (>= counts).
        sums: (K, 3) float64 sum of the points that fell in each voxel (centroid = sums / hits).
        hits: (K,) int32 points that fell in each voxel.
    """

    voxel_size: float
    max_voxels: int
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    sums: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    hits: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    # What the memory asks of the geometry every frame and changes only with its voxels (sample,
    # bounds): computed once per change, dropped by _combine.
    _cache: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, points: np.ndarray) -> np.ndarray:
        """Add one view's points (N, 3) of the object: each voxel they fall in counts this frame once.

        Returns:
            The sorted keys of the voxels the (finite) points fell in.
        """
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        points = points[rows_all(np.isfinite(points))]
        if len(points) == 0:
            return np.zeros(0, np.int64)
        keys, inverse, hits = np.unique(voxel_keys(points, self.voxel_size), return_inverse=True, return_counts=True)
        sums = _sum_by(inverse.reshape(-1), points, len(keys))
        ones = np.ones(len(keys), np.int32)
        self._combine(keys, ones, ones, sums, hits.astype(np.int32))
        return keys

    def merge(self, other: ObjectGeometry) -> None:
        """Take in another object's voxels (a fragment of the same object)."""
        self._combine(other.keys, other.counts, other.seen, other.sums, other.hits)

    def mark_seen(self, seen: np.ndarray, covered_keys: np.ndarray) -> None:
        """Count a frame that detected the object: ``seen`` (K,) bool marks the voxels its depth
        confirmed, besides the ``covered_keys`` that this frame's detection added (already counted)."""
        self.seen[seen & ~_members(self.keys, covered_keys)] += 1

    def _combine(self, keys: np.ndarray, counts: np.ndarray, seen: np.ndarray, sums: np.ndarray,
                 hits: np.ndarray) -> None:
        """Add voxels given by sorted unique ``keys`` and their counts and sums to this geometry's.

        Both key arrays are sorted: the new keys go in at their places (no sort of the union). Sums add
        as ``np.bincount`` over both would: each voxel's own value first, then the added one.
        """
        at = np.minimum(np.searchsorted(self.keys, keys), max(len(self.keys) - 1, 0))
        fresh = keys[self.keys[at] != keys] if len(self.keys) else keys
        uniq = np.insert(self.keys, np.searchsorted(self.keys, fresh), fresh)
        n = len(uniq)
        old = np.arange(len(self.keys)) + np.searchsorted(fresh, self.keys)  # the old voxels' new places
        new = np.searchsorted(uniq, keys)

        def total(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            out = np.zeros(n, np.int64)
            out[old] = a
            out[new] += b
            return out.astype(np.int32)

        self._cache.clear()
        self.counts, self.seen, self.hits = total(self.counts, counts), total(self.seen, seen), total(self.hits, hits)
        summed = np.zeros((n, 3))
        summed[old] = self.sums + 0.0  # + 0.0: a -0.0 reads 0.0, as bincount's sum from 0.0 makes it
        summed[new] += sums
        self.keys, self.sums = uniq, summed
        if n > self.max_voxels:
            keep = np.sort(np.argsort(-self.counts, kind="stable")[: self.max_voxels])
            self.keys, self.counts, self.seen, self.sums, self.hits = (
                self.keys[keep], self.counts[keep], self.seen[keep], self.sums[keep], self.hits[keep])

    def core(self, min_count: int = 1, min_ratio: float = 0.0) -> np.ndarray:
        """(K,) bool: voxels covered by at least ``min_count`` frames and in at least ``min_ratio``
        of the frames that saw them."""
        return (self.counts >= min_count) & (self.counts >= min_ratio * np.maximum(self.seen, 1))

    def points(self, min_count: int = 1, min_ratio: float = 0.0) -> np.ndarray:
        """(K', 3) centroids of the ``core`` voxels."""
        keep = self.core(min_count, min_ratio)
        return self.sums[keep] / np.maximum(self.hits[keep], 1)[:, None]

    def centroids(self) -> np.ndarray:
        """(K, 3) centroids of all voxels, in key order."""
        return self.sums / np.maximum(self.hits, 1)[:, None]

    def sample(self, n: int) -> np.ndarray:
        """At most ``n`` voxel centroids spread over the object (deterministic), for visibility tests."""
        if ("sample", n) not in self._cache:
            k = len(self.keys)
            idx = np.linspace(0, k - 1, num=min(n, k)).astype(np.int64) if k else []
            self._cache["sample", n] = self.sums[idx] / np.maximum(self.hits[idx], 1)[:, None]
        return self._cache["sample", n]

    def sample_bounds(self, n: int) -> np.ndarray:
        """(2, 3) lowest and highest coordinates of ``sample(n)`` (kept until the geometry changes)."""
        if ("sample_bounds", n) not in self._cache:
            points = self.sample(n)
            self._cache["sample_bounds", n] = np.stack([column_min(points), column_max(points)])
        return self._cache["sample_bounds", n]

    def index_bounds(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """The lowest and highest lattice index (i, j, k) of the voxels; None without voxels."""
        if "index_bounds" not in self._cache:
            bounds = None
            if len(self.keys):  # i is the keys' most significant field: the first and last key hold its bounds
                j, k = (self.keys >> _BITS) & _MASK, self.keys & _MASK
                i_lo, i_hi = (int(self.keys[0] >> (2 * _BITS)) - _OFFSET, int(self.keys[-1] >> (2 * _BITS)) - _OFFSET)
                bounds = ((i_lo, int(j.min()) - _OFFSET, int(k.min()) - _OFFSET),
                          (i_hi, int(j.max()) - _OFFSET, int(k.max()) - _OFFSET))
            self._cache["index_bounds"] = bounds
        return self._cache["index_bounds"]

    def near_count(self, ijk: np.ndarray) -> int:
        """How many of the (M, 3) lattice indices ``ijk`` lie within one voxel of this geometry's voxels
        (on one of them or one of its 26 neighbours): ``near_fraction``'s count, without its 27 binary
        searches per voxel when the geometry's dilated occupancy grid is small enough to keep."""
        grid = self._near_grid()
        if grid is None:
            return _near_hits(neighbourhoods(pack_voxels(ijk)), self.keys) if len(self.keys) and len(ijk) else 0
        lo, near = grid
        at = np.asarray(ijk, dtype=np.int64) - lo
        inside = rows_all((at >= 0) & (at < near.shape))
        at = at[inside]
        return int(np.count_nonzero(near[at[:, 0], at[:, 1], at[:, 2]]))

    def _near_grid(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(lowest index, bool grid): the voxels within one voxel of this geometry's, over its index bounds
        grown by one; None when empty or when the grid would hold more than ``_NEAR_GRID_CELLS`` cells."""
        if "near_grid" not in self._cache:
            bounds = self.index_bounds()
            grid = None
            if bounds is not None:
                lo, hi = np.array(bounds[0]) - 1, np.array(bounds[1]) + 1
                shape = tuple((hi - lo + 1).tolist())
                if np.prod(np.array(shape, dtype=np.float64)) <= _NEAR_GRID_CELLS:
                    near = np.zeros(shape, dtype=bool)
                    at = unpack_voxels(self.keys) - lo
                    near[at[:, 0], at[:, 1], at[:, 2]] = True
                    for axis in range(3):  # the 3 x 3 x 3 neighbourhood is one step along each axis in turn
                        grown = near.copy()
                        lower = [slice(None)] * 3
                        upper = [slice(None)] * 3
                        lower[axis], upper[axis] = slice(None, -1), slice(1, None)
                        grown[tuple(upper)] |= near[tuple(lower)]
                        grown[tuple(lower)] |= near[tuple(upper)]
                        near = grown
                    grid = (lo, near)
            self._cache["near_grid"] = grid
        return self._cache["near_grid"]

    def fit_box(self, min_count: int = 1, min_ratio: float = 0.0,
                trim_percentiles: tuple[float, float] = (2.0, 98.0)) -> np.ndarray | None:
        """The upright box of the ``core`` voxels (fewer than 4: of all voxels), or None when
        there are fewer than 4 voxels."""
        pts = self.points(min_count, min_ratio)
        if len(pts) < 4:
            pts = self.points(1)
        if len(pts) < 4:
            return None
        # Centroids of points lie inside the surface, but less than a voxel's centre does: half a voxel.
        return fit_upright_box(pts, trim_percentiles, pad=0.5 * self.voxel_size)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: lattice indices, frame counts, point sums and point counts."""
        return {"voxel_size": self.voxel_size, "max_voxels": self.max_voxels,
                "voxels": unpack_voxels(self.keys).tolist(), "counts": self.counts.tolist(),
                "seen": self.seen.tolist(), "sums": self.sums.tolist(), "hits": self.hits.tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ObjectGeometry:
        geometry = cls(float(data["voxel_size"]), int(data["max_voxels"]))
        ijk = np.array(data["voxels"], dtype=np.int64).reshape(-1, 3)
        if len(ijk):
            keys = pack_voxels(ijk)
            order = np.argsort(keys)
            geometry.keys = keys[order]
            geometry.counts = np.array(data["counts"], dtype=np.int32)[order]
            geometry.seen = np.array(data["seen"], dtype=np.int32)[order]
            geometry.sums = np.array(data["sums"], dtype=np.float64).reshape(-1, 3)[order]
            geometry.hits = np.array(data["hits"], dtype=np.int32)[order]
        return geometry
