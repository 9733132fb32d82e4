"""Part primitives (boxes and cylinders) and their triangle meshes and surface samples."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

_CYLINDER_SEGMENTS = 16  # facets around a cylinder: round enough at 0.16 m voxels and 480 px


class Shape(enum.Enum):
    """Primitive kind of a part."""

    BOX = "box"
    CYLINDER = "cylinder"  # axis along the part's z; x, y extents are the two diameters


class Material(enum.IntEnum):
    """How a part is coloured: the object's main colour, a darker trim, an accent, or glass/screen."""

    MAIN = 0
    TRIM = 1
    ACCENT = 2
    DARK = 3


@dataclass(frozen=True)
class Part:
    """One primitive of an object, in the object's box frame (origin at the box centre, z up).

    Attributes:
        shape: box or cylinder.
        center: (3,) float64 centre, metres, object box frame.
        size: (3,) float64 full extents along the part's axes (diameters for a cylinder's x, y).
        material: colour role.
        yaw: rotation of the part about the object's z axis, radians (e.g. a cup handle).
    """

    shape: Shape
    center: tuple[float, float, float]
    size: tuple[float, float, float]
    material: Material = Material.MAIN
    yaw: float = 0.0


def box_part(center: tuple[float, float, float], size: tuple[float, float, float],
             material: Material = Material.MAIN) -> Part:
    return Part(Shape.BOX, tuple(map(float, center)), tuple(map(float, size)), material)  # type: ignore[arg-type]


def cylinder_part(center: tuple[float, float, float], size: tuple[float, float, float],
                  material: Material = Material.MAIN) -> Part:
    return Part(Shape.CYLINDER, tuple(map(float, center)), tuple(map(float, size)), material)  # type: ignore[arg-type]


_BOX_V = 0.5 * np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
                         [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]], dtype=np.float64)
_BOX_T = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                   [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]], dtype=np.int64)


def _unit_cylinder(n: int) -> tuple[np.ndarray, np.ndarray]:
    ang = 2 * np.pi * np.arange(n) / n
    ring = np.stack([0.5 * np.cos(ang), 0.5 * np.sin(ang)], axis=1)
    v = np.concatenate([np.c_[ring, np.full(n, -0.5)], np.c_[ring, np.full(n, 0.5)], [[0, 0, -0.5], [0, 0, 0.5]]])
    i = np.arange(n)
    j = (i + 1) % n
    side = np.concatenate([np.stack([i, j, j + n], 1), np.stack([i, j + n, i + n], 1)])
    caps = np.concatenate([np.stack([np.full(n, 2 * n), j, i], 1), np.stack([np.full(n, 2 * n + 1), i + n, j + n], 1)])
    return v, np.concatenate([side, caps])


_CYL_V, _CYL_T = _unit_cylinder(_CYLINDER_SEGMENTS)


def part_mesh(part: Part) -> tuple[np.ndarray, np.ndarray]:
    """(V, 3) float64 vertices in the object box frame and (T, 3) int64 triangles of one part."""
    v, t = (_BOX_V, _BOX_T) if part.shape is Shape.BOX else (_CYL_V, _CYL_T)
    c, s = np.cos(part.yaw), np.sin(part.yaw)
    Rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    return (v * np.asarray(part.size)) @ Rz.T + np.asarray(part.center), t


def parts_mesh(parts: list[Part] | tuple[Part, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All parts as one mesh: (V, 3) vertices, (T, 3) triangles, (T,) int64 part index per triangle."""
    vs, ts, owner = [], [], []
    n = 0
    for k, p in enumerate(parts):
        v, t = part_mesh(p)
        vs.append(v)
        ts.append(t + n)
        owner.append(np.full(len(t), k, dtype=np.int64))
        n += len(v)
    return np.concatenate(vs), np.concatenate(ts), np.concatenate(owner)


def sample_surface(vertices: np.ndarray, triangles: np.ndarray, spacing: float,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Points spread over a mesh's surface, about one per ``spacing``^2 of area (at least one per triangle).

    Returns:
        (P, 3) float64 points and (P,) int64 index of the triangle each lies on.
    """
    tri = vertices[triangles]  # (T, 3, 3)
    area = 0.5 * np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1)
    counts = np.maximum(1, np.ceil(area / spacing**2)).astype(np.int64)
    idx = np.repeat(np.arange(len(tri)), counts)
    r1, r2 = rng.random(len(idx)), rng.random(len(idx))
    flip = r1 + r2 > 1
    r1[flip], r2[flip] = 1 - r1[flip], 1 - r2[flip]
    t = tri[idx]
    pts = t[:, 0] + r1[:, None] * (t[:, 1] - t[:, 0]) + r2[:, None] * (t[:, 2] - t[:, 0])
    return pts, idx
