"""Which of the room's surfaces are its floor, walls, counters, shelves and cabinets: rules of geometry.

The rules read the horizontal surfaces seen so far (discovery's support map, memory/room_surfaces.py) and the
vertical ones (memory/structure_cells.py, as planes with height profiles: memory/structure_planes.py). They
use what holds in any room, measured from the floor: how high a surface is, how deep from the wall behind
it, whether a wall rises behind it, whether a front reaches down to the floor below it. Never where a thing
is or how large one room's furniture happens to be. What each rule decides (docs/structure.md):

* floor: the support cells at the floor's height;
* wall: a vertical plane that rises higher above the floor than furniture does (``wall_height``) along at
  least ``min_wall_length``;
* cabinet (drawer unit, dresser, sideboard, the cabinets under a worktop): a vertical front that reaches
  from near the floor up to a top at furniture height, with a wall rising from that top behind it,
  ``cabinet_depth`` away (box-like furniture against a wall; a free-standing block is not one); its box runs
  from the floor to that top, from the front to the wall;
* counter: a deep surface (``counter_depth``) at working height along a wall, or the top of a cabinet at
  working height (a worktop on cabinets: black worktops are seen more by their front than from above);
* shelf: a shallow surface (less than ``counter_depth`` deep) along a wall, at any height above the floor
  (shelves of one wall stacked above each other are each a shelf);
* anything else (a free-standing table, a chair's seat, a bed) is not structure: it stands in the room,
  not along its walls, and the detector names it. A surface a named object covers is left to that object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from ..errors import ConfigError
from ..geometry.boxes import canonical_yaw_box, points_in_boxes
from .structure_planes import PlaneProfile, Segment, directions_apart, plane_segments, vertical_planes

STRUCTURE_CLASSES = ("floor", "wall", "counter", "shelf", "cabinet")
"""The classes of the room's structure (published apart from objects: SceneObjectArray.structure)."""

_SAME_WALL = np.deg2rad(10.0)  # a wall behind a front faces its way within this


@dataclass(frozen=True)
class StructureParams:
    """The structure rules. Heights are above the floor, metres; defaults are everyday furniture's."""

    # A surface is vertical when its normal's |z| is below this (discovery's wall_cos).
    vertical_cos: float = 0.25
    # A vertical plane holds at least this many facing cells (4 x 4 cm) within plane_tol (m) of it; its
    # height profile has bins of profile_bin (m), bridged across max_gap_bins where nothing was seen.
    min_plane_cells: int = 40
    plane_tol: float = 0.04
    profile_bin: float = 0.1
    max_gap_bins: int = 3
    # Wall stretches of one direction within wall_depth (m) of each other are one wall (the backmost: the
    # rest is hung on it or stands against it: screens, posters, wall units, bookcases); fronts within
    # front_depth are one row of fronts.
    wall_depth: float = 0.45
    front_depth: float = 0.1
    # A vertical surface reaching wall_height above the floor rises higher than furniture that stands
    # against a wall: a wall, when it runs at least min_wall_length; published wall_thickness thick.
    wall_height: float = 1.3
    min_wall_length: float = 1.0
    wall_thickness: float = 0.1
    # A furniture front reaches from at most front_bottom (a plinth, feet) to a top within front_top, its
    # cells filling front_fill of that height, along at least min_front_length.
    front_top: tuple[float, float] = (0.5, 1.25)
    front_bottom: float = 0.3
    front_fill: float = 0.5
    min_front_length: float = 0.4
    # A cabinet is this deep (m): the wall behind its front (rising at least backsplash above its top along
    # back_share of its length) lies that far behind the front.
    cabinet_depth: tuple[float, float] = (0.25, 0.9)
    backsplash: float = 0.15
    back_share: float = 0.3
    # Horizontal surfaces: support cells of one layer (with the layers beside it) joined across gaps of up to
    # 2 x join_cells cells (where things standing on it hid it); a surface holds min_region_cells and runs
    # min_length (m).
    join_cells: int = 2
    min_region_cells: int = 20
    min_length: float = 0.4
    # A surface up to on_top (m) above a cabinet's top, over it, is its top or the top of things standing on it.
    on_top: float = 0.3
    # A surface stands along a wall when a plane rising backsplash above it lies within wall_gap (m) of its
    # back edge.
    wall_gap: float = 0.1
    # Counter: at working height and at least counter_depth deep (kitchen worktops 0.6 m, desks more; a
    # dresser's or sideboard's top, 0.4-0.5 m, is its cabinet's). Shelf: shallower, at least shelf_height
    # above the floor.
    working_height: tuple[float, float] = (0.7, 1.1)
    counter_depth: float = 0.5
    shelf_height: float = 0.15
    # A worktop's or shelf board's thickness (m): seen from above, a board shows its top only (its front
    # edge is a few samples at most); a worktop overhangs its cabinets by overhang (m).
    top_thickness: float = 0.04
    # A surface is at the lowest layer where at least min_top_cells of its support cells were seen.
    min_top_cells: int = 2
    overhang: float = 0.02
    # The floor: support cells within floor_tol (m) of its height, at least min_floor_cells of them;
    # published floor_thickness thick.
    floor_tol: float = 0.04
    min_floor_cells: int = 100
    floor_thickness: float = 0.02
    # The rules run again at most every interval_s seconds of the stream (the surfaces change slowly; each
    # keyframe still counts as a look at what they found); a part they no longer find goes after max_stale runs.
    interval_s: float = 3.0
    max_stale: int = 3
    # A keyframe sees an element when at least min_points of its samples (every other one of discovery's
    # along both image axes) lie in its box grown by evidence_margin (m); it sees through one when half of at
    # least min_face_points of its face's samples in view lie in front of the depth seen there. One look's
    # evidence is memory.existence_hit x score, as an unknown object's (memory/discovery.py): a second look
    # from another place publishes it.
    evidence_margin: float = 0.04
    min_points: int = 6
    min_face_points: int = 5
    score: float = 0.5

    def __post_init__(self) -> None:
        if not 0 < self.front_top[0] < self.front_top[1] < self.wall_height:
            raise ConfigError(f"structure: need 0 < front_top[0] < front_top[1] < wall_height, got {self.front_top}, "
                              f"{self.wall_height}")
        if not 0 < self.cabinet_depth[0] < self.cabinet_depth[1]:
            raise ConfigError(f"structure: need 0 < cabinet_depth[0] < cabinet_depth[1], got {self.cabinet_depth}")
        if not 0 < self.score <= 1 or self.interval_s < 0 or self.max_stale < 0:
            raise ConfigError("structure: need 0 < score <= 1, interval_s >= 0 and max_stale >= 0")
        if not 0 < self.working_height[0] < self.working_height[1]:
            raise ConfigError(f"structure: need 0 < working_height[0] < working_height[1], got {self.working_height}")


@dataclass(frozen=True)
class StructurePiece:
    """One part of the room's structure: its class, (9,) gravity-aligned world box, and the direction its
    seen vertical face faces (radians; walls, cabinets), None where its top is what is seen."""

    class_name: str
    box: np.ndarray
    facing: float | None = None


@dataclass(frozen=True)
class RoomSurfaces:
    """The surfaces the rules read: (H, 3) centres of the support cells (``cell`` x ``cell`` x
    ``layer`` m), (V, 3) centres of the facing cells (``vertical_layer`` m high) and (V,) the angles they
    face, the floor's height, (N, 9) boxes of the confident named objects, and (M, 9) boxes of every
    confident object, named or not (what stands on a surface hides it: ``_regions``)."""

    horizontal: np.ndarray
    vertical: np.ndarray
    facing: np.ndarray
    floor_z: float
    named: np.ndarray
    cell: float = 0.04
    layer: float = 0.02
    vertical_layer: float = 0.04
    things: np.ndarray = field(default_factory=lambda: np.zeros((0, 9)))


@dataclass(frozen=True)
class _Stretch:
    """Segments of one kind merged across the planes they lie on: a wall with the things hung on it (their
    planes a little in front of it), a row of cabinet doors. ``offset`` is the wall's own (the backmost) or
    the front's (its longest part's); ``planes`` the planes it is made of."""

    kind: str
    angle: float
    offset: float
    t0: float
    t1: float
    top: float
    planes: tuple[PlaneProfile, ...]
    longest: float  # its longest segment, m: a wall or a front is one long plane, not a chain of scraps

    def rises_from(self, t0: float, t1: float, base: float, above: float) -> float:
        return max(plane.rises_from(t0, t1, base, above) for plane in self.planes)


def find_structure(room: RoomSurfaces, p: StructureParams) -> list[StructurePiece]:
    """The floor, walls, cabinets, counters and shelves of the room's surfaces (module notes)."""
    planes = vertical_planes(room.vertical, room.facing, room.floor_z, p.min_plane_cells, p.plane_tol,
                             p.profile_bin, room.vertical_layer)
    segments = [s for plane in planes for s in plane_segments(plane, p.wall_height, p.front_top, p.front_bottom,
                                                               p.front_fill, p.max_gap_bins)]
    walls = [w for w in _merge([s for s in segments if s.kind == "wall"], p.wall_depth)
             if w.longest >= p.min_wall_length]
    fronts = [f for f in _merge([s for s in segments if s.kind == "front"], p.front_depth)
              if f.longest >= p.min_front_length]
    pieces = _floor(room, planes, p)
    pieces += [StructurePiece("wall", _box(w.angle, w.t0, w.t1, w.offset - p.wall_thickness, w.offset, room.floor_z,
                                           room.floor_z + w.top), w.angle) for w in walls]
    tops: list[tuple[np.ndarray, float]] = []  # cabinet footprints and their tops: their surfaces are taken
    for front in fronts:
        pieces += _cabinet(front, planes, room, p, tops)
    pieces += _surfaces(room, walls, planes, p, tops)
    if len(room.named):  # a surface or front a confident named object covers is that object
        pieces = [q for q in pieces if q.class_name in ("floor", "wall") or not _covered(q.box, room.named)]
    return pieces


def _merge(segments: list[Segment], depth: float) -> list[_Stretch]:
    """Segments that face one way (within 5 degrees), overlap along their length and lie within ``depth``
    of each other, merged, longest first."""
    groups: list[list[Segment]] = []
    for s in sorted(segments, key=lambda s: -s.length):
        for g in groups:
            head = g[0].plane
            if directions_apart(s.plane.angle, head.angle) < np.deg2rad(5.0) and abs(
                    s.plane.offset - head.offset) <= depth and min(s.t1, max(x.t1 for x in g)) > max(
                    s.t0, min(x.t0 for x in g)) - 0.2:
                g.append(s)
                break
        else:
            groups.append([s])
    out = []
    for g in groups:
        head = g[0]
        kind = head.kind
        offset = min(x.plane.offset for x in g) if kind == "wall" else head.plane.offset
        top = max(x.top for x in g) if kind == "wall" else float(np.median([x.top for x in g]))
        out.append(_Stretch(kind, head.plane.angle, offset, min(x.t0 for x in g), max(x.t1 for x in g), top,
                            tuple({id(x.plane): x.plane for x in g}.values()), head.length))
    return out


def _floor(room: RoomSurfaces, planes: list[PlaneProfile], p: StructureParams) -> list[StructurePiece]:
    """The floor as one box over the support cells at its height, on the room's main axes."""
    cells = room.horizontal[np.abs(room.horizontal[:, 2] - room.floor_z) <= p.floor_tol, :2]
    if len(cells) < p.min_floor_cells:
        return []
    angle = planes[0].angle if planes else 0.0  # the strongest wall's direction: the room's axes
    normal, along = np.array([np.cos(angle), np.sin(angle)]), np.array([-np.sin(angle), np.cos(angle)])
    t, d = np.percentile(cells @ along, [1, 99]), np.percentile(cells @ normal, [1, 99])
    half = 0.5 * room.cell
    return [StructurePiece("floor", _box(angle, t[0] - half, t[1] + half, d[0] - half, d[1] + half,
                                         room.floor_z - p.floor_thickness, room.floor_z))]


def _cabinet(front: _Stretch, planes: list[PlaneProfile], room: RoomSurfaces, p: StructureParams,
             tops: list[tuple[np.ndarray, float]]) -> list[StructurePiece]:
    """A cabinet behind a front (from the floor to the front's top, as deep as the wall rising behind it), and
    the counter on it when its top is a deep one at working height."""
    top, rho, angle = front.top, front.offset, front.angle
    depths = [rho - other.offset for other in planes
              if directions_apart(other.angle, angle) < _SAME_WALL
              and p.cabinet_depth[0] <= rho - other.offset <= p.cabinet_depth[1]
              and other.rises_from(front.t0, front.t1, top, p.backsplash) >= p.back_share]
    if not depths:
        return []  # not against a wall: a free-standing block (a kitchen island, a chest) is not structure
    depth = max(depths)  # the backmost: what stands on the worktop in front of the wall rises from it too
    counter = p.working_height[0] <= top <= p.working_height[1] and depth >= p.counter_depth
    if counter:  # the worktop: its surface where it was seen, else about the front's top (its edge may be in it)
        t, d, h = _local(room.horizontal, angle, rho, room.floor_z)
        on = (t >= front.t0) & (t <= front.t1) & (d <= 0) & (d >= -depth) & (h >= top - 2 * room.layer) & (
            h <= top + 0.08)
        surface = _surface(h[on] + room.floor_z, room.layer, p.min_top_cells)
        surface = top + 0.5 * p.top_thickness if surface is None else surface - room.floor_z
        top = surface - p.top_thickness
    box = _box(angle, front.t0, front.t1, rho - depth, rho, room.floor_z, room.floor_z + top)
    tops.append((box, top))
    pieces = [StructurePiece("cabinet", box, angle)]
    if counter:
        pieces.append(StructurePiece("counter", _box(angle, front.t0, front.t1, rho - depth, rho + p.overhang,
                                                     room.floor_z + top, room.floor_z + surface)))
    return pieces


def _surface(z: np.ndarray, layer: float, min_cells: int) -> float | None:
    """The height of a surface from the heights of the support cells over it (cells ``layer`` high): the
    lowest layer that holds ``min_cells`` of them and a twentieth of the fullest one (things standing on it
    add cells above it: a black worktop gives fewer than the boxes on it), or None when no layer does."""
    if len(z) == 0:
        return None
    k = np.floor(z / layer).astype(np.int64)
    counts = np.bincount(k - k.min())
    full = np.flatnonzero(counts >= max(min_cells, 0.05 * counts.max()))
    return float((full[0] + k.min() + 0.5) * layer) if len(full) else None


def _surfaces(room: RoomSurfaces, walls: list[_Stretch], planes: list[PlaneProfile], p: StructureParams,
              tops: list[tuple[np.ndarray, float]]) -> list[StructurePiece]:
    """Counters and shelves among the horizontal surfaces above the floor that stand along a wall."""
    out = []
    for cells in _regions(room, p):
        height = _surface(cells[:, 2], room.layer, p.min_top_cells)
        if height is None:
            continue
        height -= room.floor_z
        if any(top - 0.05 <= height <= top + p.on_top and np.mean(_over(cells, box, 0.1)) >= 0.5 for box, top in tops):
            continue  # a cabinet's top, or the top of things standing on it
        best = None
        for wall in walls:
            t, d, _ = _local(cells, wall.angle, wall.offset, room.floor_z)
            if np.mean(d > -0.05) < 0.9:
                continue  # not in front of this wall
            back = float(np.percentile(d, 5))
            t0, t1 = float(t.min()), float(t.max())  # a connected region: its ends are its own
            if back <= p.wall_gap and wall.rises_from(t0, t1, height, p.backsplash) >= p.back_share and (
                    best is None or back < best[1]):
                best = (wall, back, float(np.percentile(d, 95)), t0, t1)
        if best is None:
            continue  # free-standing (a table, a bed): not structure
        wall, back, front, t0, t1 = best
        half = 0.5 * room.cell
        depth = front + half
        if t1 - t0 + room.cell < p.min_length:
            continue
        if p.working_height[0] <= height <= p.working_height[1] and depth >= p.counter_depth:
            name, thickness = "counter", p.top_thickness
        elif depth < p.counter_depth and height >= p.shelf_height:
            name, thickness = "shelf", p.top_thickness
        else:
            continue
        top = room.floor_z + height
        out.append(StructurePiece(name, _box(wall.angle, t0 - half, t1 + half, wall.offset + max(back - half, 0.0),
                                             wall.offset + depth, top - thickness, top)))
    return out


def _regions(room: RoomSurfaces, p: StructureParams) -> list[np.ndarray]:
    """The horizontal surfaces above the floor: (K, 3) support cells each, one height layer (and the layers
    beside it) joined across gaps of up to 2 x ``join_cells`` cells, and across the footprints of the things
    standing on it (a row of brochures on a shelf hides the board behind and between them from every view)."""
    cells = room.horizontal[room.horizontal[:, 2] - room.floor_z >= p.shelf_height]
    if len(cells) < p.min_region_cells:
        return []
    layer = np.floor(cells[:, 2] / room.layer).astype(np.int64)
    counts = np.bincount(layer - layer.min())
    dense = np.flatnonzero(counts >= p.min_region_cells) + layer.min()
    if len(dense) == 0:
        return []
    # Dense layers side by side are one surface (a tilted or noisy one); each takes the layers beside it.
    level = np.cumsum(np.concatenate([[1], np.diff(dense) > 1]))
    nearest = np.argmin(np.abs(layer[:, None] - dense[None, :]), axis=1)
    near = np.abs(layer - dense[nearest]) <= 1
    ij = np.floor(cells[:, :2] / room.cell).astype(np.int64)
    out = []
    for k in np.unique(level):
        on = np.flatnonzero(near & (level[nearest] == k))
        if len(on) < p.min_region_cells:
            continue
        layers = dense[level == k]
        under = _footprint_cells(room.things, (layers[0] - 1) * room.layer, (layers[-1] + 2) * room.layer, room.cell)
        origin = np.vstack([ij[on], under]).min(axis=0)
        rc, hidden = ij[on] - origin, under - origin
        mask = np.zeros(tuple(np.vstack([rc, hidden]).max(axis=0) + 1), bool)
        mask[rc[:, 0], rc[:, 1]] = True
        mask[hidden[:, 0], hidden[:, 1]] = True
        joined = ndimage.binary_dilation(mask, np.ones((3, 3), bool), p.join_cells)
        labels, _ = ndimage.label(joined, np.ones((3, 3), bool))
        own = labels[rc[:, 0], rc[:, 1]]
        for label in np.unique(own):
            part = on[own == label]
            if len(part) >= p.min_region_cells:
                out.append(cells[part])
    return out


def _footprint_cells(boxes: np.ndarray, z0: float, z1: float, cell: float) -> np.ndarray:
    """(K, 2) integer cells (``cell`` m) under the footprints of the boxes whose bottom lies between z0 and z1
    (the things standing on a surface at that height)."""
    bottom = boxes[:, 2] - 0.5 * boxes[:, 5]
    out = [np.zeros((0, 2), np.int64)]
    for box in boxes[(bottom >= z0) & (bottom <= z1)]:
        reach = 0.5 * float(np.hypot(box[3], box[4]))
        lo, hi = (np.floor((box[:2] + sign * reach) / cell).astype(np.int64) for sign in (-1, 1))
        ii, jj = np.meshgrid(np.arange(lo[0], hi[0] + 1), np.arange(lo[1], hi[1] + 1), indexing="ij")
        ij = np.column_stack([ii.ravel(), jj.ravel()])
        centres = np.column_stack([(ij + 0.5) * cell, np.full(len(ij), box[2])])
        out.append(ij[points_in_boxes(centres, box[None])[0]])
    return np.concatenate(out)


def _local(points: np.ndarray, angle: float, offset: float,
           floor_z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, 3) points in the frame of a vertical plane facing ``angle`` at ``offset``: along it, their signed
    distance in front of it (negative: behind it) and height above the floor."""
    xy = points[:, :2]
    normal, along = np.array([np.cos(angle), np.sin(angle)]), np.array([-np.sin(angle), np.cos(angle)])
    return xy @ along, xy @ normal - offset, points[:, 2] - floor_z


def _box(angle: float, t0: float, t1: float, d0: float, d1: float, z0: float, z1: float) -> np.ndarray:
    """(9,) upright box from t0 to t1 along a plane facing ``angle``, d0 to d1 along its normal (``normal @
    xy``), z0 to z1."""
    normal, along = np.array([np.cos(angle), np.sin(angle)]), np.array([-np.sin(angle), np.cos(angle)])
    centre = along * 0.5 * (t0 + t1) + normal * 0.5 * (d0 + d1)
    box = np.array([centre[0], centre[1], 0.5 * (z0 + z1), t1 - t0, d1 - d0, z1 - z0,
                    np.arctan2(along[1], along[0]), 0.0, 0.0])
    return canonical_yaw_box(box)


def _over(points: np.ndarray, box: np.ndarray, margin: float) -> np.ndarray:
    """(N,) bool: which points (N, 3) lie over or under a box's footprint grown by ``margin`` (m)."""
    b = np.array(box, dtype=np.float64)
    b[3:5] += 2 * margin
    b[5] = 1e6
    return points_in_boxes(points, b[None])[0]


def _covered(box: np.ndarray, named: np.ndarray) -> bool:
    """Whether a confident named object holds most of a structure box: its box's footprint covers half the
    structure's top face and reaches that height (a table along a wall, a fridge between cabinets)."""
    top = box[2] + 0.5 * box[5]
    grid = np.linspace(-0.4, 0.4, 5)
    local = np.stack(np.meshgrid(grid * box[3], grid * box[4]), axis=-1).reshape(-1, 2)
    c, s = np.cos(box[6]), np.sin(box[6])
    face = np.column_stack([box[0] + c * local[:, 0] - s * local[:, 1], box[1] + s * local[:, 0] + c * local[:, 1],
                            np.full(len(local), top)])
    for other in named:
        if abs(other[2] + 0.5 * other[5] - top) <= 0.15 and np.mean(_over(face, other, 0.05)) >= 0.5:
            return True
    return False
