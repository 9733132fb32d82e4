"""Procedural room layouts: a walled room with doors and windows, furniture, and small objects on supports.

Everything is drawn from one ``numpy.random.Generator``, so a seed fixes the layout. Furniture
is placed by rejection sampling against the exact 9-DoF intersection volume of the boxes
already placed (xy inflated by a clearance), keep-out zones in front of doors and under
windows included. Small objects stand on the top surfaces of tables, cabinets and shelf
boards; some are tilted (books leaning, bottles lying, boxes propped) so that pitch and roll
occur, and every tilted object is lowered until its lowest corner touches its support.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.boxes import box_corners
from ..geometry.iou import box_intersection_volume
from .classes import class_color
from .meshes import Part, Shape
from .objects import ObjectTemplate, build_object, door_template, upright_book, window_template
from .scene_objects import SUPPORT_FLOOR, SUPPORT_WALL, RoomShell, SyntheticObject

WALL_THICKNESS = 0.1
_WALL_YAW = (0.0, np.pi / 2, np.pi, -np.pi / 2)  # yaw that turns an object's front (-y) into the room
_MAX_TRIES = 40  # rejection-sampling attempts per object


@dataclass(frozen=True)
class LayoutConfig:
    """How rooms are drawn."""

    room_width: tuple[float, float] = (4.0, 6.5)  # interior x extent range, metres
    room_depth: tuple[float, float] = (3.5, 5.5)  # interior y extent range, metres
    room_height: tuple[float, float] = (2.5, 2.9)  # floor to ceiling, metres
    clearance: float = 0.06  # free gap kept around furniture footprints, metres
    tilt_probability: float = 0.3  # chance that a book, bottle or box is tilted / leaning / lying


def _wall_axes(k: int, w: float, d: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Wall k's inward normal (2,), its along direction (2,) and its length."""
    yaw = _WALL_YAW[k]
    normal = np.array([np.sin(yaw), -np.cos(yaw)])  # R(yaw) @ (0, -1)
    along = np.array([np.cos(yaw), np.sin(yaw)])
    return normal, along, (w if k % 2 == 0 else d)


def _wall_point(k: int, u: float, s: float, w: float, d: float) -> np.ndarray:
    """World xy of the point u along wall k (0 = its middle), s metres into the room."""
    normal, along, _ = _wall_axes(k, w, d)
    half = d / 2 if k % 2 == 0 else w / 2
    return -normal * half + u * along + s * normal


class _Placer:
    """Builds the object list, checking each new box against the boxes placed so far."""

    def __init__(self, rng: np.random.Generator, room: RoomShell, config: LayoutConfig) -> None:
        self.rng, self.room, self.config = rng, room, config
        self.objects: list[SyntheticObject] = []
        self.blocked: list[np.ndarray] = []  # keep-out boxes (doors, windows)

    def _collides(self, box: np.ndarray, ignore: int = -1, margin: float | None = None) -> bool:
        m = self.config.clearance if margin is None else margin
        grown = box.copy()
        grown[3:5] += 2 * m
        others = [o.box for o in self.objects if o.instance_id != ignore] + self.blocked
        if not others:
            return False
        return bool((box_intersection_volume(grown[None], np.array(others)) > 1e-9).any())

    def _inside_room(self, box: np.ndarray) -> bool:
        c = box_corners(box)[0]
        return bool(self.room.contains_xy(c[:, :2], margin=0.0).all() and c[:, 2].max() < self.room.height - 0.05)

    def add(self, name: str, tmpl: ObjectTemplate, box: np.ndarray, support: int, check: bool = True,
            ignore: int = -1) -> SyntheticObject | None:
        if check and (not self._inside_room(box) or self._collides(box, ignore=ignore,
                                                                    margin=None if support < 0 else 0.005)):
            return None
        color = np.clip(class_color(name) * self.rng.uniform(0.8, 1.15) + self.rng.normal(0, 0.04, 3), 0.02, 1.0)
        obj = SyntheticObject(len(self.objects), name, box, tmpl.parts, color, support, tmpl.surfaces)
        self.objects.append(obj)
        return obj

    # -------------------------------------------------------------- furniture

    def against_wall(self, name: str, tmpl: ObjectTemplate | None = None) -> SyntheticObject | None:
        r = self.room
        for _ in range(_MAX_TRIES):
            t = tmpl or build_object(name, self.rng)
            k = int(self.rng.integers(4))
            _, _, length = _wall_axes(k, r.width, r.depth)
            half = t.size[0] / 2
            if length < 2 * half + 0.1:
                continue
            u = self.rng.uniform(-length / 2 + half + 0.02, length / 2 - half - 0.02)
            xy = _wall_point(k, u, t.size[1] / 2 + 0.02, r.width, r.depth)
            box = np.array([*xy, t.size[2] / 2, *t.size, _WALL_YAW[k], 0, 0])
            obj = self.add(name, t, box, SUPPORT_FLOOR)
            if obj is not None:
                return obj
        return None

    def free(self, name: str, tmpl: ObjectTemplate | None = None, near_corner: bool = False,
             tilt: bool = False) -> SyntheticObject | None:
        r = self.room
        for _ in range(_MAX_TRIES):
            t = tmpl or build_object(name, self.rng)
            if near_corner:
                sx, sy = self.rng.choice([-1, 1], 2)
                xy = np.array([sx * (r.width / 2 - t.size[0] / 2 - 0.1), sy * (r.depth / 2 - t.size[1] / 2 - 0.1)])
                xy += self.rng.normal(0, 0.1, 2)
            else:
                xy = self.rng.uniform([-r.width / 2, -r.depth / 2], [r.width / 2, r.depth / 2]) * 0.8
            angles = np.array([self.rng.uniform(-np.pi, np.pi), 0.0, 0.0])
            if tilt:
                angles[1:] = self.rng.uniform(-0.35, 0.35, 2)
            box = _rest_on(np.array([*xy, 0.0, *t.size, *angles]), 0.0)
            obj = self.add(name, t, box, SUPPORT_FLOOR)
            if obj is not None:
                return obj
        return None

    def chairs_around(self, table: SyntheticObject, n: int) -> int:
        """Up to n chairs at the table's sides, facing it; returns how many fit."""
        placed = 0
        R = table.rotation[:2, :2]
        sides = [np.array(s, dtype=np.float64) for s in ((0, -1), (0, 1), (-1, 0), (1, 0))]
        self.rng.shuffle(sides)
        for side in sides:
            if placed >= n:
                break
            t = build_object("chair", self.rng)
            half = 0.5 * np.abs(side) @ table.box[3:5]
            along = np.abs(side[::-1]) @ table.box[3:5]  # table extent along this side
            tangent = np.array([side[1], -side[0]]) * self.rng.uniform(-0.2, 0.2) * along
            local = side * (half + t.size[1] / 2 - 0.05) + tangent
            xy = table.box[:2] + R @ local
            n_world = R @ side
            yaw = np.arctan2(-n_world[0], n_world[1]) + self.rng.normal(0, 0.15)  # front towards the table
            box = np.array([*xy, t.size[2] / 2, *t.size, yaw, 0, 0])
            # A chair may be tucked under its table's top: only the other objects must stay clear.
            if self.add("chair", t, box, SUPPORT_FLOOR, ignore=table.instance_id) is not None:
                placed += 1
        return placed

    # -------------------------------------------------------------- small objects

    def on_surface(self, name: str, parent: SyntheticObject, tmpl: ObjectTemplate | None = None,
                   angles: tuple[float, float, float] | None = None, back: bool = False) -> SyntheticObject | None:
        surfaces = parent.world_surfaces()
        if not surfaces:
            return None
        for _ in range(_MAX_TRIES // 2):
            t = tmpl or build_object(name, self.rng)
            c, half, yaw, clearance = surfaces[int(self.rng.integers(len(surfaces)))]
            if t.size[2] > clearance - 0.02:
                continue
            room = half - 0.5 * max(t.size[0], t.size[1])
            if np.any(room < 0):
                continue
            local = self.rng.uniform(-room, room)
            if back:
                local[1] = room[1] * self.rng.uniform(0.3, 1.0)  # towards the rear (+y), e.g. a monitor on a desk
            cy, sy = np.cos(yaw), np.sin(yaw)
            xy = c[:2] + np.array([cy * local[0] - sy * local[1], sy * local[0] + cy * local[1]])
            ang = np.array(angles if angles is not None else (self.rng.uniform(-np.pi, np.pi), 0.0, 0.0))
            box = _rest_on(np.array([*xy, 0.0, *t.size, *ang]), float(c[2]))
            if box_corners(box)[0][:, 2].max() > c[2] + clearance - 0.01:
                continue
            obj = self.add(name, t, box, parent.instance_id, ignore=parent.instance_id)
            if obj is not None:
                return obj
        return None


def _rest_on(box: np.ndarray, height: float) -> np.ndarray:
    """The box moved vertically so its lowest corner is at ``height``."""
    b = box.copy()
    b[2] = 0.0
    b[2] = height - box_corners(b)[0][:, 2].min()
    return b


def _room_shell(rng: np.random.Generator, config: LayoutConfig) -> RoomShell:
    w, d, h = (rng.uniform(*config.room_width), rng.uniform(*config.room_depth), rng.uniform(*config.room_height))
    openings: list[tuple[int, float, float, float, float, str]] = []
    n_doors = 1 + int(rng.random() < 0.3)
    n_windows = 1 + int(rng.random() < 0.5)
    kinds = ["door"] * n_doors + ["window"] * n_windows
    for kind in kinds:
        for _ in range(20):
            k = int(rng.integers(4))
            _, _, length = _wall_axes(k, w, d)
            ow = rng.uniform(0.8, 0.95) if kind == "door" else rng.uniform(0.8, 1.6)
            oh = rng.uniform(2.0, 2.1) if kind == "door" else rng.uniform(0.9, 1.3)
            bottom = 0.0 if kind == "door" else rng.uniform(0.8, 1.0)
            u = rng.uniform(-length / 2 + ow / 2 + 0.3, length / 2 - ow / 2 - 0.3)
            if all(o[0] != k or abs(o[1] - u) > (o[3] + ow) / 2 + 0.3 for o in openings):
                openings.append((k, u, bottom, ow, oh, kind))
                break
    parts: list[Part] = []
    classes: list[str] = []
    t = WALL_THICKNESS
    for k in range(4):
        _, _, length = _wall_axes(k, w, d)
        full = length + 2 * t  # walls overlap at the corners, so no ray escapes
        holes = sorted((o[1] - o[3] / 2, o[1] + o[3] / 2, o[2], o[2] + o[4]) for o in openings if o[0] == k)
        edges = sorted({-full / 2, full / 2, *[x for hole in holes for x in hole[:2]]})
        for u0, u1 in zip(edges[:-1], edges[1:], strict=True):
            mid = 0.5 * (u0 + u1)
            spans = [(0.0, h)]
            for a, b, z0, z1 in holes:
                if a <= mid <= b:
                    spans = [(0.0, z0), (z1, h)]
            for z0, z1 in spans:
                if z1 - z0 < 1e-3:
                    continue
                xy = _wall_point(k, mid, -t / 2, w, d)
                parts.append(Part(Shape.BOX, (xy[0], xy[1], 0.5 * (z0 + z1)), (u1 - u0, t, z1 - z0), yaw=_WALL_YAW[k]))
                classes.append("wall")
    parts.append(Part(Shape.BOX, (0.0, 0.0, -0.05), (w + 2 * t, d + 2 * t, 0.1)))
    classes.append("floor")
    parts.append(Part(Shape.BOX, (0.0, 0.0, h + 0.05), (w + 2 * t, d + 2 * t, 0.1)))
    classes.append("ceiling")
    return RoomShell(w, d, h, tuple(parts), tuple(classes), tuple(openings))


def generate_layout(rng: np.random.Generator,
                    config: LayoutConfig = LayoutConfig()) -> tuple[RoomShell, list[SyntheticObject]]:
    """Draw one room and its objects.

    Returns:
        The room shell and the objects (instance ids 0..N-1 in list order).
    """
    room = _room_shell(rng, config)
    p = _Placer(rng, room, config)
    w, d = room.width, room.depth
    for k, u, bottom, ow, oh, kind in room.openings:
        s = 0.0 if kind == "door" else -WALL_THICKNESS / 2
        xy = _wall_point(k, u, s, w, d)
        tmpl = door_template(ow - 0.02, oh - 0.01) if kind == "door" else window_template(ow, oh)
        box = np.array([*xy, bottom + tmpl.size[2] / 2 + (0.005 if kind == "door" else 0.0), *tmpl.size,
                        _WALL_YAW[k], 0, 0])
        p.add(kind, tmpl, box, SUPPORT_WALL, check=False)
        # Keep-out: the swing of a door (full height), the wall under and around a window (tall furniture).
        depth = 1.0 if kind == "door" else 0.35
        kxy = _wall_point(k, u, depth / 2, w, d)
        z0 = 0.0 if kind == "door" else bottom - 0.05
        p.blocked.append(np.array([*kxy, z0 + (oh + 0.05) / 2, ow + 0.2, depth, oh + 0.05, _WALL_YAW[k], 0, 0]))
    rng_ = p.rng
    if rng_.random() < 0.45:
        p.against_wall("bed")
    if rng_.random() < 0.75:
        p.against_wall("sofa")
    desk = p.against_wall("table")
    tables = [t for t in [desk, p.free("table")] if t is not None]
    if rng_.random() < 0.4:
        extra = p.free("table")
        if extra is not None:
            tables.append(extra)
    cabinets = [c for c in (p.against_wall("cabinet") for _ in range(int(rng_.integers(1, 3)))) if c is not None]
    shelves = [s for s in (p.against_wall("shelf") for _ in range(int(rng_.integers(1, 3)))) if s is not None]
    for t in tables:
        p.chairs_around(t, int(rng_.integers(1, 4)))
    for _ in range(int(rng_.integers(1, 3))):
        p.free("plant", near_corner=True)
    for _ in range(int(rng_.integers(1, 3))):
        p.free("bin")
    for _ in range(int(rng_.integers(1, 3))):
        p.free("box", tilt=rng_.random() < config.tilt_probability)
    if rng_.random() < 0.6:
        p.free("lamp", near_corner=True)
    # Small objects on supports.
    if desk is not None:
        for _ in range(int(rng_.integers(1, 3))):
            p.on_surface("monitor", desk, angles=(desk.box[6] + rng_.normal(0, 0.2), 0.0, 0.0), back=True)
    tops = tables + cabinets
    for name, lo, hi in (("cup", 2, 6), ("bottle", 1, 4), ("book", 1, 4)):
        for _ in range(int(rng_.integers(lo, hi))):
            if not tops:
                break
            parent = tops[int(rng_.integers(len(tops)))]
            angles = None
            if name == "bottle" and rng_.random() < config.tilt_probability:
                angles = (rng_.uniform(-np.pi, np.pi), np.pi / 2, 0.0)  # lying on its side
            elif name == "book" and rng_.random() < config.tilt_probability:
                angles = (rng_.uniform(-np.pi, np.pi), rng_.uniform(-0.3, 0.3), rng_.uniform(-0.3, 0.3))
            p.on_surface(name, parent, angles=angles)
    for shelf in shelves:
        for _ in range(int(rng_.integers(1, 4))):  # few enough that books can be grounding targets (<= 6)
            lean = rng_.uniform(-0.35, 0.35) if rng_.random() < config.tilt_probability else 0.0
            p.on_surface("book", shelf, tmpl=upright_book(rng_), angles=(shelf.box[6], 0.0, lean))
        if rng_.random() < 0.5:
            p.on_surface("box", shelf, tmpl=_small_box(rng_), angles=(shelf.box[6], 0.0, 0.0))
        if rng_.random() < 0.4:
            p.on_surface("plant", shelf, tmpl=_small_plant(rng_))
    for c in cabinets:
        if rng_.random() < 0.5:
            p.on_surface("lamp", c, tmpl=_small_lamp(rng_))
    return room, p.objects


def place_more(rng: np.random.Generator, room: RoomShell, objects: list[SyntheticObject],
               config: LayoutConfig = LayoutConfig()) -> _Placer:
    """A placer that knows ``objects`` already stand in ``room``: things put in a later state of the room
    (synthetic/revisit.py) keep clear of them. Its ``objects`` list is theirs, plus what it places."""
    placer = _Placer(rng, room, config)
    placer.objects = list(objects)
    return placer


def _small_box(rng: np.random.Generator) -> ObjectTemplate:
    for _ in range(50):
        t = build_object("box", rng)
        if max(t.size) < 0.3:
            return t
    return t


def _small_plant(rng: np.random.Generator) -> ObjectTemplate:
    for _ in range(50):
        t = build_object("plant", rng)
        if t.size[2] < 0.45:
            return t
    return t


def _small_lamp(rng: np.random.Generator) -> ObjectTemplate:
    for _ in range(50):
        t = build_object("lamp", rng)
        if t.size[2] < 0.6:
            return t
    return t
