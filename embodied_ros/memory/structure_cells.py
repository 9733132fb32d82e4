"""What the room's structure is found in: a keyframe's classified depth samples, and the vertical surfaces
seen so far.

Object discovery (memory/discovery.py) already samples each keyframe's depth, computes its normals and
finds its support surfaces; it hands them on as ``FrameSurfaces`` so the structure layer
(memory/structure.py) does not do that work twice. The horizontal surfaces are kept in discovery's
support map (memory/room_surfaces.py); the vertical ones are kept here (``FacingCells``), with the side
they face: a cabinet's front faces the room and the wall behind it faces the same way, which is how a
front is told from the back of something. Cells are keyed like memory/object_geometry.py's voxels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .object_geometry import pack_voxels, unpack_voxels


@dataclass(frozen=True)
class FrameSurfaces:
    """One keyframe's depth samples as discovery classified them (arrays on its sampling grid, (h, w)).

    Attributes:
        points: (h, w, 3) float32 world points, metres (z up).
        normal: (h, w, 3) unit normals (oriented up where not vertical; vertical ones either way).
        has_normal: (h, w) bool: valid samples whose normal is defined.
        support: (h, w) bool: samples on a support surface (floor, table, counter, shelf).
        valid: (h, w) bool: samples with usable depth.
        camera: (3,) the camera's world position.
        pixel_stride: pixels between samples (sample (r, c) is pixel (c * k + k // 2, r * k + k // 2)).
    """

    points: np.ndarray
    normal: np.ndarray
    has_normal: np.ndarray
    support: np.ndarray
    valid: np.ndarray
    camera: np.ndarray
    pixel_stride: int

    def vertical(self, max_cos: float) -> tuple[np.ndarray, np.ndarray]:
        """The samples on vertical surfaces (normal's |z| below ``max_cos``): (N, 3) points and (N, 2)
        unit horizontal normals turned towards the camera (the side of the surface that was seen)."""
        on = self.has_normal & (np.abs(self.normal[..., 2]) < max_cos)
        points = self.points[on].astype(np.float64)
        n = self.normal[on][:, :2].astype(np.float64)
        n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-9)
        towards = np.einsum("ij,ij->i", self.camera[None, :2] - points[:, :2], n)
        return points, n * np.where(towards < 0, -1.0, 1.0)[:, None]


@dataclass
class FacingCells:
    """The vertical surfaces seen so far: cells of ``cell`` metres (x, y) by ``layer`` (z), each with the
    frames that saw a vertical surface in it and the sum of the unit directions it faced (mutable; its
    owner serialises access). Past ``max_cells`` the cells seen in the fewest frames go first.

    Attributes:
        keys: (K,) sorted int64 cell keys.
        frames: (K,) int32 frames that saw each cell.
        facing: (K, 2) float32 sum over those frames of the direction the surface faced.
    """

    cell: float = 0.04
    layer: float = 0.04
    max_cells: int = 300_000
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    frames: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int32))
    facing: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.float32))

    def __len__(self) -> int:
        return len(self.keys)

    def add(self, points: np.ndarray, facing: np.ndarray) -> None:
        """Count one frame's vertical samples: (N, 3) points and (N, 2) unit directions they face."""
        if len(points) == 0:
            return
        scale = np.array([self.cell, self.cell, self.layer])
        keys = pack_voxels(np.floor(np.asarray(points, dtype=np.float64) / scale).astype(np.int64))
        new, inverse = np.unique(keys, return_inverse=True)
        inverse = inverse.reshape(-1)
        direction = np.stack([np.bincount(inverse, weights=facing[:, a], minlength=len(new)) for a in (0, 1)], axis=1)
        direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-9)  # one frame, one vote
        at = np.clip(np.searchsorted(self.keys, new), 0, max(len(self.keys) - 1, 0))
        known = (self.keys[at] == new) if len(self.keys) else np.zeros(len(new), bool)
        self.frames[at[known]] += 1
        self.facing[at[known]] += direction[known].astype(np.float32)
        fresh = ~known
        if fresh.any():  # new cells go where they sort: one copy of the arrays, not a re-sort
            where = np.searchsorted(self.keys, new[fresh])
            self.keys = np.insert(self.keys, where, new[fresh])
            self.frames = np.insert(self.frames, where, np.ones(int(fresh.sum()), np.int32))
            self.facing = np.insert(self.facing, where, direction[fresh].astype(np.float32), axis=0)
        if len(self.keys) > self.max_cells:
            keep = np.sort(np.argsort(-self.frames, kind="stable")[: self.max_cells])
            self.keys, self.frames, self.facing = self.keys[keep], self.frames[keep], self.facing[keep]

    def cells(self, min_frames: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """(M, 3) centres (m) of the cells seen in at least ``min_frames`` frames and (M,) the angle (rad,
        in (-pi, pi]) of the direction each faces."""
        keep = self.frames >= min_frames
        ijk = unpack_voxels(self.keys[keep]).astype(np.float64)
        centres = (ijk + 0.5) * np.array([self.cell, self.cell, self.layer])
        f = self.facing[keep]
        return centres, np.arctan2(f[:, 1], f[:, 0]).astype(np.float64)

    def reset(self) -> None:
        self.keys = np.zeros(0, np.int64)
        self.frames = np.zeros(0, np.int32)
        self.facing = np.zeros((0, 2), np.float32)
