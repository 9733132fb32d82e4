"""Ground-truth occupancy grids (40x40x16 at 0.16 m) and per-frame object visibility.

Occupancy labels follow EmbodiedScan's recipe of voxelising labelled surface points: every
surface of the scene is sampled (about 4 cm apart), each point carries its class (objects and
the room's floor and walls), and a voxel takes the class with the most points in it, room
surfaces counting less than objects (an object on the floor wins the voxel it shares with the
floor). Solid interiors stay empty, as in a point-cloud-derived grid.

The grid frame is gravity-aligned and turned with the camera's heading: origin at the camera's
(x, y) on the floor plane (z = ``floor_z``), x along the camera's forward direction projected on
the floor, y to its left, z up. The grid spans x, y in [-3.2, 3.2] (plus ``forward_offset`` in
x) and z in [-0.78, 1.78] of that frame: EmbodiedScan's occupancy range.
"""

from __future__ import annotations

import numpy as np

from ..detections import LocalOccupancy
from ..geometry.grid import GridSpec, aligned_grid_pose  # noqa: F401 - re-exported
from .classes import OCCUPANCY_CLASSES
from .meshes import parts_mesh, sample_surface
from .scene_objects import RoomShell, SyntheticObject

_STRUCTURE_WEIGHT = 0.25  # one floor/wall point counts this much against one object point
_SPACING = 0.04  # surface sample spacing, metres (about 16 points per voxel face; thin parts get one per triangle)


class SurfaceSamples:
    """Labelled points on every surface of a scene (built once per scene).

    Attributes:
        points: (P, 3) float64 world points.
        labels: (P,) int64 index into classes.OCCUPANCY_CLASSES.
        instance: (P,) int64 object instance id, -1 for room surfaces.
    """

    def __init__(self, room: RoomShell, objects: list[SyntheticObject], rng: np.random.Generator) -> None:
        pts, labels, inst = [], [], []
        for obj in objects:
            v, t, _ = obj.world_mesh()
            p, _ = sample_surface(v, t, _SPACING, rng)
            pts.append(p)
            labels.append(np.full(len(p), OCCUPANCY_CLASSES.index(obj.class_name)))
            inst.append(np.full(len(p), obj.instance_id))
        v, t, owner = parts_mesh(room.parts)
        p, tri = sample_surface(v, t, _SPACING, rng)
        names = np.array(room.part_classes)[owner[tri]]
        keep = names != "ceiling"
        pts.append(p[keep])
        labels.append(np.array([OCCUPANCY_CLASSES.index(n) for n in names[keep]], dtype=np.int64))
        inst.append(np.full(int(keep.sum()), -1))
        self.points = np.concatenate(pts)
        self.labels = np.concatenate(labels).astype(np.int64)
        self.instance = np.concatenate(inst).astype(np.int64)
        self._weights = np.where(self.instance >= 0, 1.0, _STRUCTURE_WEIGHT)

    def occupancy(self, T_world_grid: np.ndarray, spec: GridSpec | None = None) -> LocalOccupancy:
        """Labels of the grid at ``T_world_grid``: class index per voxel, -1 where empty."""
        spec = spec or GridSpec()
        T = np.asarray(T_world_grid, dtype=np.float64)
        rel = [self.points[:, i] - T[i, 3] for i in range(3)]
        # World -> grid frame, R^T (p - t), written out per axis (a BLAS (P, 3) @ (3, 3) costs more in threads).
        idx = [np.floor((rel[0] * T[0, j] + rel[1] * T[1, j] + rel[2] * T[2, j]) / spec.voxel_size).astype(np.int64)
               for j in range(3)]
        ok = np.ones(len(self.points), bool)
        for j in range(3):
            ok &= (idx[j] >= 0) & (idx[j] < spec.shape[j])
        n_cls = len(OCCUPANCY_CLASSES)
        shape = np.asarray(spec.shape)
        lin = (idx[0][ok] * spec.shape[1] + idx[1][ok]) * spec.shape[2] + idx[2][ok]
        votes = np.bincount(lin * n_cls + self.labels[ok], weights=self._weights[ok],
                            minlength=int(np.prod(shape)) * n_cls).reshape(-1, n_cls)
        labels = np.where(votes.max(axis=1) > 0, votes.argmax(axis=1), -1).astype(np.int16)
        return LocalOccupancy(labels.reshape(spec.shape), T.copy(), float(spec.voxel_size), OCCUPANCY_CLASSES)


def visibility_fractions(instance: np.ndarray, unoccluded: np.ndarray,
                         stride: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Per object, visible pixels and the visible fraction of its unoccluded footprint.

    Args:
        instance: (H, W) int instance render (object id + 1, 0 = none).
        unoccluded: (N,) pixel counts of each object's footprint with nothing in front, at ``stride``.
        stride: the pixel stride both counts use.

    Returns:
        (N,) int64 visible pixel counts at full resolution (estimated from the stride grid),
        and (N,) float64 fractions in [0, 1] (0 for objects out of view).
    """
    n = len(unoccluded)
    vis = np.bincount(instance[::stride, ::stride].reshape(-1), minlength=n + 1)[1:n + 1]
    frac = np.where(unoccluded > 0, vis / np.maximum(unoccluded, 1), 0.0)
    return vis * stride * stride, np.clip(frac, 0.0, 1.0)
