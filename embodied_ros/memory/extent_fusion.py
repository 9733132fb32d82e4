"""An object's extent from the voxels several looks agree on: one look's bad lift does not grow its box.

An object's box is fitted to the voxels its detections covered (memory/object_geometry.py), those covered
in at least half the frames that saw them. Frames are not independent: at 30 Hz one look holds thirty of
them, and a lift that takes in the table around a cup, or the magazine beside a book, does so from that
place in every one. So each voxel also counts the looks that covered it (``LookSupport``: a look is a place
and a visit to it, as existence counts evidence, memory/existence.py), and once an object has been detected
from two looks its box is fitted to the voxels two looks covered (``fit_extent``): the box grows where a
second look confirms it, whatever the frame rate. With too few such voxels the box keeps all of its voxels.
This is for objects seen whole: an object most of whose views the image's edge cut (a table seen in halves
from close by) is the union of its parts, each of which one look may show.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..geometry.fitting import fit_upright_box
from .object_geometry import ObjectGeometry, voxel_keys

_PRUNE = 2  # keep support for at most this many times the geometry's voxel bound before pruning to its voxels


@dataclass
class LookSupport:
    """Per voxel of an object, how many looks covered it (mutated under the memory's lock, through Track).

    Attributes:
        keys: (K,) sorted int64 voxel keys (object_geometry's packing).
        looks: (K,) int32 looks that covered each voxel.
        last: (K,) int64 id of the latest look that covered it (a look's frames count once).
    """

    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    looks: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    last: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def add(self, points: np.ndarray, voxel_size: float, look: int) -> None:
        """Count look ``look`` on the voxels of one detection's (N, 3) points (once per look)."""
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        points = points[np.all(np.isfinite(points), axis=1)]
        if not len(points):
            return
        new = np.unique(voxel_keys(points, voxel_size))
        at = np.searchsorted(self.keys, new)
        known = at < len(self.keys)
        known[known] = self.keys[at[known]] == new[known]
        hit = at[known]
        fresh = self.last[hit] != look
        self.looks[hit[fresh]] += 1
        self.last[hit] = look
        missing = new[~known]
        if len(missing):
            keys = np.concatenate([self.keys, missing])
            order = np.argsort(keys, kind="stable")
            self.keys = keys[order]
            self.looks = np.concatenate([self.looks, np.ones(len(missing), np.int32)])[order]
            self.last = np.concatenate([self.last, np.full(len(missing), look, np.int64)])[order]

    def merge(self, other: LookSupport) -> None:
        """Take in a duplicate's support (a fragment of the same object). Two fragments were mostly seen in
        the same looks, so a voxel both hold keeps the larger of their counts, not the sum."""
        keys = np.concatenate([self.keys, other.keys])
        uniq, inverse = np.unique(keys, return_inverse=True)
        inverse = inverse.reshape(-1)
        looks = np.zeros(len(uniq), np.int32)
        np.maximum.at(looks, inverse, np.concatenate([self.looks, other.looks]))
        last = np.zeros(len(uniq), np.int64)
        last[inverse] = np.concatenate([self.last, other.last])
        self.keys, self.looks, self.last = uniq, looks, last

    def of(self, keys: np.ndarray) -> np.ndarray:
        """(N,) looks that covered each of the voxel ``keys`` (0 for voxels never counted)."""
        if not len(self.keys):
            return np.zeros(len(keys), np.int32)
        at = np.clip(np.searchsorted(self.keys, keys), 0, len(self.keys) - 1)
        return np.where(self.keys[at] == keys, self.looks[at], 0)

    def prune(self, geometry: ObjectGeometry) -> None:
        """Drop the voxels the geometry let go, once there are many more than it keeps (bounded memory)."""
        if len(self.keys) > _PRUNE * geometry.max_voxels:
            keep = np.isin(self.keys, geometry.keys)
            self.keys, self.looks, self.last = self.keys[keep], self.looks[keep], self.last[keep]

    def to_dict(self) -> dict[str, Any]:
        return {"keys": self.keys.tolist(), "looks": self.looks.tolist(), "last": self.last.tolist()}

    @classmethod
    def from_dict(cls, o: dict[str, Any]) -> LookSupport:
        return cls(np.array(o["keys"], np.int64), np.array(o["looks"], np.int32), np.array(o["last"], np.int64))


def look_id(look: tuple[int, ...] | None) -> int:
    """An int64 id of a look key (memory/settling.look_of: its place and when its visit began)."""
    return 0 if look is None else int(np.int64(hash(look) & 0x7FFF_FFFF_FFFF_FFFF))


def fit_extent(geometry: ObjectGeometry, support: LookSupport | None, min_count: int, min_ratio: float,
               min_looks: int) -> tuple[np.ndarray | None, bool]:
    """The upright (9,) box of the object's own voxels (ObjectGeometry.core) that at least ``min_looks`` (> 1)
    looks covered, and True: a box several looks agree on, voxel by voxel. With ``min_looks`` 1 or fewer than
    4 such voxels, the box of its own voxels (ObjectGeometry.fit_box) and False; (None, False) when the
    geometry has fewer than 4 voxels."""
    if support is None or min_looks <= 1:
        return geometry.fit_box(min_count, min_ratio), False
    core = geometry.core(min_count, min_ratio) & (support.of(geometry.keys) >= min_looks)
    if np.count_nonzero(core) < 4:
        return geometry.fit_box(min_count, min_ratio), False
    points = geometry.sums[core] / np.maximum(geometry.hits[core], 1)[:, None]
    # Centroids of points lie inside the surface, but less than a voxel's centre does: half a voxel.
    return fit_upright_box(points, pad=0.5 * geometry.voxel_size), True
