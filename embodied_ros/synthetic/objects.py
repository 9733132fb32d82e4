"""Object templates: each class built from box and cylinder parts, with sizes drawn per instance.

Every template works in the object's box frame: origin at the centre of its 9-DoF box, z up,
the object's front facing local -y (a chair's seat faces -y, its back rest is at +y; a monitor's
screen and a shelf's open side face -y). The parts fill the box exactly, so the ground-truth box
is tight. Surfaces other objects can stand on (table tops, shelf boards) are returned with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .meshes import Material, Part, box_part, cylinder_part

M, T, A, D = Material.MAIN, Material.TRIM, Material.ACCENT, Material.DARK


@dataclass(frozen=True)
class Surface:
    """A horizontal rectangle of an object that others can stand on, in its box frame.

    Attributes:
        center: (x, y, z) of the rectangle's centre; z is the surface height.
        half: (hx, hy) half extents.
        clearance: free height above it (inf on an open top), metres.
    """

    center: tuple[float, float, float]
    half: tuple[float, float]
    clearance: float = float("inf")


@dataclass(frozen=True)
class ObjectTemplate:
    """One built object: its box extents, its parts and its support surfaces (box frame)."""

    size: tuple[float, float, float]
    parts: tuple[Part, ...]
    surfaces: tuple[Surface, ...] = ()


def _legs(dx: float, dy: float, h: float, z0: float, w: float) -> list[Part]:
    """Four square legs of width w and height h, from z0 up, inset in a dx x dy rectangle."""
    return [box_part((sx * (dx - w) / 2, sy * (dy - w) / 2, z0 + h / 2), (w, w, h), T)
            for sx in (-1, 1) for sy in (-1, 1)]


def _chair(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(0.42, 0.55), rng.uniform(0.42, 0.55), rng.uniform(0.8, 1.0)
    seat_h, t = rng.uniform(0.42, 0.48), 0.05
    b = -dz / 2
    parts = _legs(dx, dy, seat_h - t, b, 0.04)
    parts.append(box_part((0, 0, b + seat_h - t / 2), (dx, dy, t)))
    parts.append(box_part((0, dy / 2 - 0.025, b + seat_h + (dz - seat_h) / 2), (dx, 0.05, dz - seat_h), A))
    return ObjectTemplate((dx, dy, dz), tuple(parts))


def _table(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(0.9, 1.8), rng.uniform(0.6, 1.0), rng.uniform(0.70, 0.78)
    t = 0.04
    parts = _legs(dx, dy, dz - t, -dz / 2, 0.05)
    parts.append(box_part((0, 0, dz / 2 - t / 2), (dx, dy, t)))
    return ObjectTemplate((dx, dy, dz), tuple(parts), (Surface((0, 0, dz / 2), (dx / 2, dy / 2)),))


def _sofa(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(1.6, 2.4), rng.uniform(0.8, 1.0), rng.uniform(0.75, 0.9)
    arm, back, seat = 0.16, 0.2, 0.42
    b = -dz / 2
    parts = [
        box_part((0, -back / 2, b + seat / 2), (dx - 2 * arm, dy - back, seat)),
        box_part((0, dy / 2 - back / 2, 0), (dx, back, dz), A),
        box_part((-(dx - arm) / 2, -back / 2, b + 0.3), (arm, dy - back, 0.6), A),
        box_part(((dx - arm) / 2, -back / 2, b + 0.3), (arm, dy - back, 0.6), A),
    ]
    return ObjectTemplate((dx, dy, dz), tuple(parts))


def _bed(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(1.0, 1.8), rng.uniform(1.95, 2.15), rng.uniform(0.9, 1.1)
    b = -dz / 2
    parts = [
        box_part((0, -0.03, b + 0.15), (dx, dy - 0.06, 0.3), T),
        box_part((0, -0.04, b + 0.41), (dx - 0.04, dy - 0.1, 0.22)),
        box_part((0, dy / 2 - 0.03, 0), (dx, 0.06, dz), T),
        box_part((0, dy / 2 - 0.35, b + 0.57), (dx * 0.7, 0.4, 0.1), A),  # pillow
    ]
    return ObjectTemplate((dx, dy, dz), tuple(parts))


def _cabinet(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(0.5, 1.2), rng.uniform(0.4, 0.6), rng.uniform(0.7, 1.3)
    n_doors = 1 if dx < 0.7 else 2
    parts = [box_part((0, 0.01, 0), (dx, dy - 0.02, dz))]
    w = dx / n_doors
    for k in range(n_doors):
        x = -dx / 2 + w * (k + 0.5)
        parts.append(box_part((x, -dy / 2 + 0.01, 0.02), (w - 0.02, 0.02, dz - 0.08), T))
        parts.append(box_part((x + (0.3 if k == 0 else -0.3) * w, -dy / 2 + 0.01, 0.1), (0.02, 0.02, 0.12), D))
    return ObjectTemplate((dx, dy, dz), tuple(parts), (Surface((0, 0, dz / 2), (dx / 2, dy / 2)),))


def _shelf(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(0.6, 1.2), rng.uniform(0.3, 0.4), rng.uniform(1.2, 2.0)
    n = int(rng.integers(3, 6))
    t = 0.025
    parts = [box_part((sx * (dx - t) / 2, 0, 0), (t, dy, dz)) for sx in (-1, 1)]
    parts.append(box_part((0, dy / 2 - 0.005, 0), (dx - 2 * t, 0.01, dz), T))
    gap = (dz - t) / n
    surfaces = []
    for k in range(n + 1):
        z = -dz / 2 + t / 2 + k * gap
        parts.append(box_part((0, -0.005, z), (dx - 2 * t, dy - 0.01, t)))
        if k < n:
            surfaces.append(Surface((0, -0.005, z + t / 2), ((dx - 2 * t) / 2, (dy - 0.01) / 2), gap - t))
    surfaces.append(Surface((0, 0, dz / 2), (dx / 2, dy / 2)))
    return ObjectTemplate((dx, dy, dz), tuple(parts), tuple(surfaces))


def _monitor(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(0.45, 0.7), rng.uniform(0.16, 0.22), rng.uniform(0.38, 0.5)
    screen_h = dz * 0.72
    b = -dz / 2
    parts = [
        box_part((0, 0, dz / 2 - screen_h / 2), (dx, 0.04, screen_h), D),
        box_part((0, -0.021, dz / 2 - screen_h / 2), (dx - 0.03, 0.002, screen_h - 0.03), A),  # lit screen
        box_part((0, 0.03, b + (dz - screen_h) / 2 + 0.01), (0.05, 0.03, dz - screen_h + 0.02), T),
        box_part((0, 0, b + 0.01), (0.22, dy, 0.02), T),
    ]
    return ObjectTemplate((dx, dy, dz), tuple(parts))


def _lamp(rng: np.random.Generator) -> ObjectTemplate:
    tall = rng.random() < 0.5
    d = rng.uniform(0.3, 0.45) if tall else rng.uniform(0.18, 0.3)
    dz = rng.uniform(1.4, 1.75) if tall else rng.uniform(0.35, 0.55)
    shade = d * 0.8
    b = -dz / 2
    parts = [
        cylinder_part((0, 0, b + 0.015), (d * 0.8, d * 0.8, 0.03), T),
        cylinder_part((0, 0, b + (dz - shade) / 2), (0.03, 0.03, dz - shade), T),
        cylinder_part((0, 0, dz / 2 - shade / 2), (d, d, shade)),
    ]
    return ObjectTemplate((d, d, dz), tuple(parts))


def _cup(rng: np.random.Generator) -> ObjectTemplate:
    d, dz = rng.uniform(0.07, 0.09), rng.uniform(0.08, 0.11)
    handle = 0.03
    parts = [cylinder_part((-handle / 2, 0, 0), (d, d, dz)),
             box_part((d / 2, 0, 0), (handle, 0.012, dz * 0.6), T)]
    return ObjectTemplate((d + handle, d, dz), tuple(parts))


def _book(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(0.15, 0.24), rng.uniform(0.2, 0.3), rng.uniform(0.02, 0.05)
    parts = [box_part((0, 0, 0), (dx, dy, dz)), box_part((0.003, 0, 0), (dx - 0.006, dy - 0.01, dz * 0.8), A)]
    return ObjectTemplate((dx, dy, dz), tuple(parts))


def upright_book(rng: np.random.Generator) -> ObjectTemplate:
    """A book standing on its bottom edge (spine to the front), as on a shelf."""
    dx, dy, dz = rng.uniform(0.02, 0.05), rng.uniform(0.15, 0.22), rng.uniform(0.2, 0.28)
    parts = [box_part((0, 0, 0), (dx, dy, dz)), box_part((0, 0.003, 0), (dx * 0.8, dy - 0.006, dz - 0.01), A)]
    return ObjectTemplate((dx, dy, dz), tuple(parts))


def _bottle(rng: np.random.Generator) -> ObjectTemplate:
    d, dz = rng.uniform(0.06, 0.09), rng.uniform(0.2, 0.32)
    body = dz * 0.7
    parts = [cylinder_part((0, 0, -dz / 2 + body / 2), (d, d, body)),
             cylinder_part((0, 0, dz / 2 - (dz - body) / 2), (d * 0.4, d * 0.4, dz - body), T)]
    return ObjectTemplate((d, d, dz), tuple(parts))


def _box(rng: np.random.Generator) -> ObjectTemplate:
    dx, dy, dz = rng.uniform(0.2, 0.6), rng.uniform(0.2, 0.5), rng.uniform(0.15, 0.45)
    parts = [box_part((0, 0, 0), (dx, dy, dz)), box_part((0, 0, dz / 2 - 0.002), (0.05, dy, 0.004), A)]
    return ObjectTemplate((dx, dy, dz), tuple(parts))


def _plant(rng: np.random.Generator) -> ObjectTemplate:
    big = rng.random() < 0.5
    d = rng.uniform(0.4, 0.7) if big else rng.uniform(0.15, 0.25)
    dz = rng.uniform(0.8, 1.4) if big else rng.uniform(0.25, 0.4)
    pot_d, pot_h = d * 0.55, dz * 0.3
    b = -dz / 2
    parts = [cylinder_part((0, 0, b + pot_h / 2), (pot_d, pot_d, pot_h), T),
             cylinder_part((0, 0, b + pot_h + (dz - pot_h) * 0.35), (d * 0.7, d * 0.7, (dz - pot_h) * 0.7)),
             cylinder_part((0, 0, b + pot_h + (dz - pot_h) * 0.6), (d, d, (dz - pot_h) * 0.5)),
             cylinder_part((0, 0, dz / 2 - (dz - pot_h) * 0.1), (d * 0.5, d * 0.5, (dz - pot_h) * 0.2), A)]
    return ObjectTemplate((d, d, dz), tuple(parts))


def _bin(rng: np.random.Generator) -> ObjectTemplate:
    d, dz = rng.uniform(0.25, 0.38), rng.uniform(0.3, 0.5)
    parts = [cylinder_part((0, 0, 0), (d, d, dz)), cylinder_part((0, 0, dz / 2 - 0.002), (d * 0.9, d * 0.9, 0.004), D)]
    return ObjectTemplate((d, d, dz), tuple(parts))


def door_template(width: float, height: float, thickness: float = 0.04) -> ObjectTemplate:
    """A closed door panel with a handle; the handle side sticks out to the front (-y)."""
    parts = [box_part((0, 0, 0), (width, thickness, height)),
             box_part((width / 2 - 0.1, -thickness / 2 - 0.03, -0.05), (0.12, 0.06, 0.03), D)]
    return ObjectTemplate((width, thickness + 0.06, height), tuple(
        Part(p.shape, (p.center[0], p.center[1] + 0.03, p.center[2]), p.size, p.material) for p in parts))


def window_template(width: float, height: float, depth: float = 0.08) -> ObjectTemplate:
    """A frame of four bars around a glass pane."""
    f = 0.05
    parts = [box_part((0, 0, (height - f) / 2), (width, depth, f), T),
             box_part((0, 0, -(height - f) / 2), (width, depth, f), T),
             box_part(((width - f) / 2, 0, 0), (f, depth, height - 2 * f), T),
             box_part((-(width - f) / 2, 0, 0), (f, depth, height - 2 * f), T),
             box_part((0, 0, 0), (width - 2 * f, 0.01, height - 2 * f), A)]
    return ObjectTemplate((width, depth, height), tuple(parts))


TEMPLATES: dict[str, Callable[[np.random.Generator], ObjectTemplate]] = {
    "chair": _chair, "table": _table, "sofa": _sofa, "bed": _bed, "cabinet": _cabinet, "shelf": _shelf,
    "monitor": _monitor, "lamp": _lamp, "cup": _cup, "book": _book, "bottle": _bottle, "box": _box,
    "plant": _plant, "bin": _bin,
}
"""Builders of the free-standing classes (doors and windows are built to fit their wall openings)."""


def build_object(class_name: str, rng: np.random.Generator) -> ObjectTemplate:
    """A new instance of ``class_name`` with sizes drawn from ``rng``."""
    return TEMPLATES[class_name](rng)
