"""Ray-cast rendering of a synthetic scene: colour, depth, instance ids and class ids per pixel.

open3d's ``RaycastingScene`` (Embree) casts one ray per pixel through the pixel centre
(OpenCV convention: pixel (u, v) has its centre at integer coordinates). Ray directions are
K^-1 [u, v, 1] rotated to the world, so the hit distance along them is the optical-axis depth.
Colour is the part's material colour times a procedural texture of the world hit point
(wood grain, fabric weave, floor planks, wall plaster), shaded by a fixed sun-like light plus a
headlight term. Instance ids are object id + 1 (0 = room surfaces); class ids index
classes.ALL_CLASSES (-1 = no hit).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import ModuleType

import numpy as np

from ..errors import InputError
from .classes import ALL_CLASSES, class_color, class_index
from .meshes import Material, parts_mesh
from .scene_objects import RoomShell, SyntheticObject


class Texture(enum.IntEnum):
    """Procedural texture of a triangle."""

    PLAIN = 0
    WOOD = 1
    FABRIC = 2
    PLANKS = 3
    PLASTER = 4


_CLASS_TEXTURE = {
    "table": Texture.WOOD, "cabinet": Texture.WOOD, "shelf": Texture.WOOD, "door": Texture.WOOD,
    "chair": Texture.WOOD, "sofa": Texture.FABRIC, "bed": Texture.FABRIC, "box": Texture.FABRIC,
    "plant": Texture.FABRIC, "floor": Texture.PLANKS, "wall": Texture.PLASTER, "ceiling": Texture.PLASTER,
}
_ACCENT = {"monitor": (0.15, 0.22, 0.42), "book": (0.92, 0.9, 0.84), "window": (0.62, 0.8, 0.92),
           "lamp": (0.98, 0.95, 0.8), "plant": (0.35, 0.65, 0.25)}
# Surfaces that return no depth to a time-of-flight camera (a lit screen, glass).
_NO_RETURN = {("monitor", Material.ACCENT), ("window", Material.ACCENT)}
_DIRECTIONS: dict[tuple, np.ndarray] = {}  # cached camera-frame ray directions per (K, size, stride)
_LIGHT = (np.array([0.3, -0.5, 0.81]) / np.linalg.norm([0.3, -0.5, 0.81])).astype(np.float32)


@dataclass(frozen=True, eq=False)
class RenderedView:
    """One rendered view, noise-free.

    Attributes:
        color: (H, W, 3) uint8 RGB.
        depth: (H, W) float32 optical-axis depth in metres; 0 where no surface.
        instance: (H, W) int32 object instance id + 1; 0 for room surfaces or no hit.
        class_id: (H, W) int16 index into classes.ALL_CLASSES; -1 for no hit.
        cos_incidence: (H, W) float32 |cos| of the angle between ray and surface normal.
        no_return: (H, W) bool, True on surfaces that give no depth (screens, glass).
    """

    color: np.ndarray
    depth: np.ndarray
    instance: np.ndarray
    class_id: np.ndarray
    cos_incidence: np.ndarray
    no_return: np.ndarray


_F = np.float32


def _hash01(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Cheap per-cell pseudo-random value in [0, 1] of integer-valued cell coordinates (1-D float arrays).

    Integer multiply-xor hashing (wrapping int32 arithmetic): an order of magnitude faster than
    the sin-based shader hash on the CPU.
    """
    h = (x.astype(np.int32) * np.int32(73856093)) ^ (y.astype(np.int32) * np.int32(19349663)) \
        ^ (z.astype(np.int32) * np.int32(83492791))
    h ^= h >> 13
    h *= np.int32(1274126177)
    return (h & 1023).astype(np.float32) * _F(1 / 1023)


def _texture(kind: np.ndarray, x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """(N,) float32 brightness factor of each hit from its texture kind and world point (x, y, z: (N,) float32)."""
    f = np.ones(len(x), np.float32)
    m = np.flatnonzero(kind == Texture.WOOD)
    if m.size:
        qx, qy, qz = x[m], y[m], z[m]
        f[m] = 1.0 + _F(0.12) * np.sin(_F(45.0) * (qx + qy) + _F(4.0) * np.sin(_F(6.0) * qz + _F(3.0) * qx))
    m = np.flatnonzero(kind == Texture.FABRIC)
    if m.size:
        qx, qy, qz = (np.floor(v[m] * _F(50.0)) for v in (x, y, z))  # 2 cm weave cells
        f[m] = _F(0.93) + _F(0.14) * (((qx + qy + qz) % 2) == 0) + _F(0.06) * _hash01(qx, qy, qz)
    m = np.flatnonzero(kind == Texture.PLANKS)
    if m.size:
        qx, qy = x[m], y[m] * _F(1 / 0.18)  # planks 18 cm wide along y, boards 1.2 m long along x
        plank = np.floor(qy)
        board = np.floor((qx + _F(0.7) * plank) * _F(1 / 1.2))
        seam = np.abs(qy - np.round(qy)) < _F(0.04)
        f[m] = (_F(0.8) + _F(0.35) * _hash01(plank, board, plank * 0)) * np.where(seam, _F(0.6), _F(1.0))
    m = np.flatnonzero(kind == Texture.PLASTER)
    if m.size:
        f[m] = _F(0.96) + _F(0.08) * _hash01(*(np.floor(v[m] * _F(20.0)) for v in (x, y, z)))  # 5 cm blotches
    return f


def import_open3d() -> ModuleType:
    """The open3d module, imported on first use (only rendering needs it).

    Raises:
        InputError: when open3d is not installed or cannot load, saying what to install.
    """
    try:
        import open3d
    except ImportError as err:
        raise InputError(
            f"rendering synthetic scenes needs open3d ({err}): pip install open3d-cpu (Linux x86_64) or open3d, "
            "and on Debian/Ubuntu apt-get install libusb-1.0-0"
        ) from None
    return open3d


class SceneRenderer:
    """Holds the ray-casting scene and per-triangle colour, class, texture and instance tables.

    Args:
        room: the room shell.
        objects: the scene's objects (instance ids must be 0..N-1 in order).

    Raises:
        InputError: when open3d is missing.
    """

    def __init__(self, room: RoomShell, objects: list[SyntheticObject]) -> None:
        o3d = import_open3d()

        self._o3d = o3d
        self._scene = o3d.t.geometry.RaycastingScene()
        colors, classes, textures, no_return, offsets, instance_of = [], [], [], [], [], []
        n_tri = 0

        def add(vertices: np.ndarray, triangles: np.ndarray, tri_color: np.ndarray, cls: np.ndarray,
                tex: np.ndarray, absorb: np.ndarray, instance: int) -> None:
            nonlocal n_tri
            gid = self._scene.add_triangles(o3d.core.Tensor(vertices.astype(np.float32)),
                                            o3d.core.Tensor(triangles.astype(np.uint32)))
            assert gid == len(offsets), "open3d geometry ids are expected to count from 0"
            offsets.append(n_tri)
            instance_of.append(instance)
            colors.append(tri_color)
            classes.append(cls)
            textures.append(tex)
            no_return.append(absorb)
            n_tri += len(triangles)

        for obj in objects:
            v, t, owner = obj.world_mesh()
            mat = np.array([obj.parts[k].material for k in owner])
            palette = np.stack([obj.color, obj.color * 0.55, np.asarray(_ACCENT.get(obj.class_name,
                                np.minimum(obj.color * 0.5 + 0.5, 1.0))), np.full(3, 0.1)])
            tex = np.full(len(t), _CLASS_TEXTURE.get(obj.class_name, Texture.PLAIN))
            tex[mat != Material.MAIN] = Texture.PLAIN
            absorb = np.array([(obj.class_name, Material(m)) in _NO_RETURN for m in mat])
            add(v, t, palette[mat], np.full(len(t), class_index(obj.class_name)), tex, absorb, obj.instance_id + 1)
        v, t, owner = parts_mesh(room.parts)
        names = np.array(room.part_classes)[owner]
        add(v, t, np.stack([class_color(n) for n in names]), np.array([class_index(n) for n in names]),
            np.array([_CLASS_TEXTURE[n] for n in names]), np.zeros(len(t), bool), 0)
        self._tri_color = np.concatenate(colors)
        self._tri_class = np.concatenate(classes).astype(np.int16)
        self._tri_texture = np.concatenate(textures).astype(np.int8)
        self._tri_no_return = np.concatenate(no_return)
        self._offsets = np.array(offsets, dtype=np.int64)
        self._instance_of = np.array(instance_of, dtype=np.int32)
        self.n_objects = len(objects)
        # Lookup tables with one extra row for rays that hit nothing.
        self._offsets_ext = np.append(self._offsets, len(self._tri_color))
        self._instance_ext = np.append(self._instance_of, 0).astype(np.int32)
        color8 = np.append(self._tri_color, [[0.0, 0.0, 0.0]], axis=0).astype(np.float32) * _F(255.0)
        self._tri_channels = [np.ascontiguousarray(color8[:, i]) for i in range(3)]
        self._tri_class = np.append(self._tri_class, -1).astype(np.int16)
        self._tri_texture = np.append(self._tri_texture, Texture.PLAIN).astype(np.int8)
        self._tri_no_return = np.append(self._tri_no_return, False)

    @staticmethod
    def camera_directions(K: np.ndarray, width: int, height: int, stride: int = 1) -> np.ndarray:
        """(h * w, 3) float32 camera-frame ray directions K^-1 [u, v, 1] of every stride-th pixel (row-major)."""
        key = (K.tobytes(), width, height, stride)
        cached = _DIRECTIONS.get(key)
        if cached is None:
            u, v = np.meshgrid(np.arange(0, width, stride, dtype=np.float64),
                               np.arange(0, height, stride, dtype=np.float64))
            Ki = np.linalg.inv(K)
            d = np.stack([Ki[0, 0] * u + Ki[0, 1] * v + Ki[0, 2], Ki[1, 1] * v + Ki[1, 2], np.ones_like(u)], axis=-1)
            cached = np.ascontiguousarray(d.reshape(-1, 3), dtype=np.float32)
            if len(_DIRECTIONS) > 8:
                _DIRECTIONS.clear()
            _DIRECTIONS[key] = cached
        return cached

    @classmethod
    def camera_rays(cls, K: np.ndarray, T_world_camera: np.ndarray, width: int, height: int,
                    stride: int = 1) -> np.ndarray:
        """(h * w, 6) float32 world rays (origin, direction with camera-z component 1) of every stride-th pixel."""
        d_cam = cls.camera_directions(K, width, height, stride)
        rays = np.empty((len(d_cam), 6), np.float32)
        rays[:, :3] = T_world_camera[:3, 3]
        R = T_world_camera[:3, :3].astype(np.float32)
        # Written out per axis: an (N, 3) @ (3, 3) product goes through BLAS, whose threads cost
        # more than the arithmetic at this size.
        for i in range(3):
            rays[:, 3 + i] = d_cam[:, 0] * R[i, 0] + d_cam[:, 1] * R[i, 1] + d_cam[:, 2] * R[i, 2]
        return rays

    def render(self, K: np.ndarray, T_world_camera: np.ndarray, width: int, height: int) -> RenderedView:
        """Noise-free colour, depth, instance and class images of one camera pose."""
        rays = self.camera_rays(K, T_world_camera, width, height)
        hit = self._scene.cast_rays(self._o3d.core.Tensor.from_numpy(rays))
        t = hit["t_hit"].numpy()
        ok = np.isfinite(t)
        # Missed rays get the sentinel geometry (last table row) and triangle 0 of it: no masked copies.
        gid = np.minimum(hit["geometry_ids"].numpy(), len(self._offsets)).astype(np.int64)
        tri = self._offsets_ext[gid] + np.where(ok, hit["primitive_ids"].numpy(), 0)
        n = hit["primitive_normals"].numpy()
        tz = np.where(ok, t, 0).astype(np.float32)
        d = [np.ascontiguousarray(rays[:, 3 + i]) for i in range(3)]
        nx, ny, nz = (np.ascontiguousarray(n[:, i]) for i in range(3))
        nd = nx * d[0] + ny * d[1] + nz * d[2]
        cos = np.abs(nd) * self._inverse_lengths(K, width, height)
        # Lambert term with the normal turned towards the camera: n * -sign(n . d).
        n_dot_light = (nx * _LIGHT[0] + ny * _LIGHT[1] + nz * _LIGHT[2]) * -np.sign(nd)
        shade = _F(0.5) + _F(0.35) * np.maximum(n_dot_light, 0) + _F(0.25) * cos
        o = T_world_camera[:3, 3].astype(np.float32)
        f = shade * _texture(self._tri_texture[tri], o[0] + tz * d[0], o[1] + tz * d[1], o[2] + tz * d[2])
        color8 = np.empty((len(tri), 3), np.uint8)
        for i in range(3):  # one 1-D gather per channel: a (N, 3) row gather is several times slower
            color8[:, i] = np.minimum(self._tri_channels[i][tri] * f, _F(255.0))
        color8 = color8.reshape(height, width, 3)
        shape = (height, width)
        depth = tz.reshape(shape)
        return RenderedView(color8, depth, self._instance_ext[gid].reshape(shape), self._tri_class[tri].reshape(shape),
                            np.where(ok, cos, 0).astype(np.float32).reshape(shape),
                            self._tri_no_return[tri].reshape(shape))

    def _inverse_lengths(self, K: np.ndarray, width: int, height: int) -> np.ndarray:
        key = (K.tobytes(), width, height, -1)
        cached = _DIRECTIONS.get(key)
        if cached is None:
            cached = (1.0 / np.linalg.norm(self.camera_directions(K, width, height), axis=1)).astype(np.float32)
            _DIRECTIONS[key] = cached
        return cached

    def unoccluded_pixel_counts(self, K: np.ndarray, T_world_camera: np.ndarray, width: int, height: int,
                                stride: int = 2) -> np.ndarray:
        """Per object, the number of stride-th pixels whose ray meets it at all (occluded or not).

        Returns:
            (N,) int64 counts, in units of stride x stride pixel blocks.
        """
        rays = self.camera_rays(K, T_world_camera, width, height, stride)
        res = self._scene.list_intersections(self._o3d.core.Tensor.from_numpy(rays))
        inst = self._instance_of[res["geometry_ids"].numpy().astype(np.int64)]
        ray = res["ray_ids"].numpy().astype(np.int64)
        keep = inst > 0
        pairs = np.unique(ray[keep] * (self.n_objects + 1) + inst[keep])  # one count per (ray, object)
        return np.bincount(pairs % (self.n_objects + 1) - 1, minlength=self.n_objects)[: self.n_objects]


__all__ = ["ALL_CLASSES", "RenderedView", "SceneRenderer", "Texture"]
