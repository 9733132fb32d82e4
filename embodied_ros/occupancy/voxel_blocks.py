"""Sparse, bounded voxel storage: 8x8x8 blocks found through a dict, voxel values in flat numpy arrays.

A frame touches a few thousand voxels but only tens of blocks, so the per-frame Python work
is one dict look-up per touched block (as in voxblox/nvblox) and everything per voxel is numpy
fancy indexing; the cost of a frame does not depend on the size of the map. Memory is bounded
by ``max_voxels``: when a frame needs new blocks and the bound would be exceeded, the blocks
farthest from the given position (the latest camera) are evicted first.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

BLOCK_EDGE = 8
"""Voxels per block edge."""
BLOCK_VOXELS = BLOCK_EDGE**3
_BITS = 21  # per packed block coordinate: +-2^20 blocks = +-1,340 km of 0.16 m voxels
_OFFSET = 1 << (_BITS - 1)
MAX_VOXEL_COORD = _OFFSET * BLOCK_EDGE
"""Voxel coordinates must lie in [-MAX_VOXEL_COORD, MAX_VOXEL_COORD)."""
_EVICT_SLACK = 0.05  # evict 5 % more than needed, so eviction does not run on every frame at the bound


def _pack(blocks: np.ndarray) -> np.ndarray:
    """(M, 3) int64 block coordinates -> (M,) int64 keys."""
    b = blocks + _OFFSET
    return (b[:, 0] << (2 * _BITS)) | (b[:, 1] << _BITS) | b[:, 2]


class VoxelBlocks:
    """Voxel values in blocks of 8x8x8, allocated on demand, evicted when over the bound.

    Each field is a flat array of ``capacity * 512`` values; the voxel at flat index ``f``
    lies in slot ``f // 512`` at local index ``f % 512`` (x-major, then y, then z).

    Args:
        max_voxels: bound on allocated voxels (a multiple of 512 is used: max_voxels // 512 blocks).
        fields: name -> (dtype, fill value of a fresh voxel).
    """

    def __init__(self, max_voxels: int, fields: Mapping[str, tuple[np.dtype | type, float]]) -> None:
        self.max_blocks = max(1, int(max_voxels) // BLOCK_VOXELS)
        self._fields = dict(fields)
        self.data: dict[str, np.ndarray] = {}
        self.n_evicted = 0
        self.clear()

    def clear(self) -> None:
        """Drop every block (the eviction counter too)."""
        self._slot_of: dict[int, int] = {}
        self._free: list[int] = []
        self.block_coords = np.zeros((0, 3), dtype=np.int64)  # (capacity, 3); only used slots are meaningful
        self.used = np.zeros(0, dtype=bool)  # (capacity,)
        self.data = {name: np.zeros(0, dtype=dt) for name, (dt, _) in self._fields.items()}
        self.n_evicted = 0

    @property
    def n_blocks(self) -> int:
        return len(self._slot_of)

    @property
    def nbytes(self) -> int:
        """Bytes held by the arrays (capacity, not just used blocks)."""
        return int(sum(a.nbytes for a in self.data.values()) + self.block_coords.nbytes + self.used.nbytes)

    def lookup(self, voxels: np.ndarray, allocate: bool = False, near: np.ndarray | None = None) -> np.ndarray:
        """Flat indices of voxels, allocating their blocks if asked.

        Args:
            voxels: (M, 3) int64 voxel coordinates (within +-MAX_VOXEL_COORD).
            allocate: create missing blocks (evicting far blocks when over the bound).
            near: (3,) position in voxel units that eviction keeps close (the camera);
                required when ``allocate``.

        Returns:
            (M,) int64 flat indices into the field arrays; -1 for voxels without a block
            (not allocated, or dropped because one frame alone needs more than the bound).
        """
        voxels = np.asarray(voxels, dtype=np.int64).reshape(-1, 3)
        if len(voxels) == 0:
            return np.zeros(0, dtype=np.int64)
        blocks = voxels >> 3  # floor division by 8, also for negative coordinates
        keys, first, inverse = np.unique(_pack(blocks), return_index=True, return_inverse=True)
        slots = np.fromiter((self._slot_of.get(k, -1) for k in keys.tolist()), dtype=np.int64, count=len(keys))
        if allocate and (slots < 0).any():
            missing = np.flatnonzero(slots < 0)
            slots[missing] = self._allocate(keys[missing], blocks[first[missing]], set(keys[slots >= 0].tolist()),
                                            np.asarray(near, dtype=np.float64))
        local = voxels & (BLOCK_EDGE - 1)
        lin = (local[:, 0] * BLOCK_EDGE + local[:, 1]) * BLOCK_EDGE + local[:, 2]
        slot = slots[inverse.reshape(-1)]
        return np.where(slot >= 0, slot * BLOCK_VOXELS + lin, -1)

    def voxel_coords(self, flat: np.ndarray) -> np.ndarray:
        """(M,) flat indices -> (M, 3) int64 voxel coordinates."""
        flat = np.asarray(flat, dtype=np.int64)
        slot, lin = np.divmod(flat, BLOCK_VOXELS)
        local = np.stack([lin // (BLOCK_EDGE * BLOCK_EDGE), (lin // BLOCK_EDGE) % BLOCK_EDGE, lin % BLOCK_EDGE], axis=1)
        return self.block_coords[slot] * BLOCK_EDGE + local

    def voxels_in_range(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Flat indices of every stored voxel of the blocks overlapping voxel range [lo, hi] (inclusive)."""
        blo, bhi = np.asarray(lo, dtype=np.int64) >> 3, np.asarray(hi, dtype=np.int64) >> 3
        if np.prod((bhi - blo + 1).astype(np.float64)) > 4 * max(self.n_blocks, 1):
            # A range wider than the map: test the stored blocks instead of enumerating the range.
            inside = np.all((self.block_coords >= blo) & (self.block_coords <= bhi), axis=1) & self.used
            slots = np.flatnonzero(inside)
        else:
            axes = (np.arange(a, b + 1) for a, b in zip(blo, bhi, strict=True))
            grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1)
            keys = _pack(grid.reshape(-1, 3))
            slots = np.array([s for s in (self._slot_of.get(k, -1) for k in keys.tolist()) if s >= 0], dtype=np.int64)
        return (slots[:, None] * BLOCK_VOXELS + np.arange(BLOCK_VOXELS)).reshape(-1)

    def voxels_in_ranges(self, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``voxels_in_range`` of many ranges (R, 3) at once: the flat indices and, for each, its range.

        The blocks of all ranges are enumerated together and looked up once per distinct block; a
        range wider than the map is answered by ``voxels_in_range`` on its own.
        """
        blo, bhi = np.asarray(lo, dtype=np.int64) >> 3, np.asarray(hi, dtype=np.int64) >> 3
        span = bhi - blo + 1
        wide = np.prod(span.astype(np.float64), axis=1) > 4 * max(self.n_blocks, 1)
        n = np.where(wide, 0, np.prod(span, axis=1))
        owner = np.repeat(np.arange(len(n)), n)
        local = np.arange(int(n.sum())) - (np.cumsum(n) - n)[owner]
        sy, sz = span[owner, 1], span[owner, 2]
        coords = blo[owner] + np.stack([local // (sy * sz), (local // sz) % sy, local % sz], axis=1)
        keys, inverse = np.unique(_pack(coords), return_inverse=True)
        slots = np.fromiter((self._slot_of.get(k, -1) for k in keys.tolist()), dtype=np.int64, count=len(keys))
        slot = slots[inverse.reshape(-1)]
        stored = slot >= 0
        slot, owner = slot[stored], owner[stored]
        for r in np.flatnonzero(wide):  # rare: the stored blocks tested instead of the range enumerated
            extra = self.voxels_in_range(lo[r], hi[r])[::BLOCK_VOXELS] // BLOCK_VOXELS
            at = np.searchsorted(owner, r)
            slot, owner = np.insert(slot, at, extra), np.insert(owner, at, np.full(len(extra), r))
        flat = (slot[:, None] * BLOCK_VOXELS + np.arange(BLOCK_VOXELS)).reshape(-1)
        return flat, np.repeat(owner, BLOCK_VOXELS)

    def export(self) -> dict[str, np.ndarray]:
        """The used blocks as arrays (``block_coords`` (B, 3) and each field (B, 512)), for saving."""
        slots = np.flatnonzero(self.used)
        out = {"block_coords": self.block_coords[slots]}
        for name, arr in self.data.items():
            out[name] = arr.reshape(-1, BLOCK_VOXELS)[slots]
        return out

    def restore(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the content with ``export()``'s arrays (the first max_blocks blocks if more)."""
        self.clear()
        coords = np.asarray(arrays["block_coords"], dtype=np.int64).reshape(-1, 3)[: self.max_blocks]
        n = len(coords)
        self._grow(n)
        self._free = [s for s in self._free if s >= n]
        self.block_coords[:n] = coords
        self.used[:n] = True
        self._slot_of = dict(zip(_pack(coords).tolist(), range(n), strict=True))
        for name in self.data:
            self.data[name][: n * BLOCK_VOXELS] = np.asarray(arrays[name]).reshape(-1)[: n * BLOCK_VOXELS]

    def _allocate(self, keys: np.ndarray, coords: np.ndarray, protected: set[int], near: np.ndarray) -> np.ndarray:
        """Slots for new blocks ``keys`` (sorted); -1 for those that cannot fit even after eviction."""
        centres = (coords * BLOCK_EDGE + BLOCK_EDGE / 2) - near  # voxel units
        order = np.argsort(np.einsum("ij,ij->i", centres, centres), kind="stable")  # nearest first
        over = self.n_blocks + len(keys) - self.max_blocks
        if over > 0:
            self._evict(over + int(_EVICT_SLACK * self.max_blocks), protected, near)
        room = self.max_blocks - self.n_blocks
        out = np.full(len(keys), -1, dtype=np.int64)
        fit = order[: max(room, 0)]  # a frame larger than the bound keeps its nearest blocks
        if len(fit) > len(self._free):
            self._grow(len(fit) - len(self._free))
        for i in fit:
            slot = self._free.pop()
            self._slot_of[int(keys[i])] = slot
            self.block_coords[slot] = coords[i]
            self.used[slot] = True
            out[i] = slot
        return out

    def _evict(self, count: int, protected: set[int], near: np.ndarray) -> None:
        """Free up to ``count`` blocks, farthest from ``near`` first, never those in ``protected``."""
        candidates = [(k, s) for k, s in self._slot_of.items() if k not in protected]
        if not candidates or count <= 0:
            return
        keys = np.array([k for k, _ in candidates], dtype=np.int64)
        slots = np.array([s for _, s in candidates], dtype=np.int64)
        d = self.block_coords[slots] * BLOCK_EDGE + BLOCK_EDGE / 2 - near
        far = np.argsort(-np.einsum("ij,ij->i", d, d), kind="stable")[:count]
        for k, s in zip(keys[far].tolist(), slots[far].tolist(), strict=True):
            del self._slot_of[k]
            self._free.append(s)
        gone = slots[far]
        self.used[gone] = False
        for name, (_, fill) in self._fields.items():
            self.data[name].reshape(-1, BLOCK_VOXELS)[gone] = fill
        self.n_evicted += len(gone)

    def _grow(self, extra: int) -> None:
        """Make room for ``extra`` more free slots (capacity doubles, up to the bound)."""
        cap = len(self.used)
        new_cap = min(max(cap * 2, cap + extra, 64), max(self.max_blocks, cap + extra))
        add = new_cap - cap
        self.block_coords = np.concatenate([self.block_coords, np.zeros((add, 3), np.int64)])
        self.used = np.concatenate([self.used, np.zeros(add, bool)])
        for name, (dt, fill) in self._fields.items():
            self.data[name] = np.concatenate([self.data[name], np.full(add * BLOCK_VOXELS, fill, dtype=dt)])
        self._free.extend(range(new_cap - 1, cap - 1, -1))  # pop() hands out low slots first
