"""The room's structure as map objects: its floor, walls, counters, shelves and cabinets.

The map's surfaces are already kept for discovery (memory/discovery.py: the support map of horizontal
surfaces); this layer keeps the vertical ones (memory/structure_cells.py) from the same keyframes and, every
``interval_s`` seconds of the stream, asks the structure rules (memory/structure_rules.py) what they make
of them. Each part they find is an element with a stable id (from the memory's id counter, so no id names
two things), a gravity-aligned box, a colour, and existence evidence counted in looks as objects' is
(memory/existence.py): a keyframe whose samples fall on it is a look that saw it; one that sees through
where it should be speaks against it. Only confident elements are published, apart from the objects
(``SceneObjectArray.structure``, the ``structure`` marker namespace, objects.json's ``structure`` list), and
grounding speaks about them ("the cup on the counter", "the second shelf").

A part found again by a later run of the rules keeps its id (the best-overlapping element of its kind:
counters and shelves are one kind, a surface seen better may change between them); an element the rules no
longer find is dropped after ``max_stale`` runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..detections import FramePerception
from ..geometry.boxes import BOX_DIM
from ..geometry.iou import box_iou_3d
from .config import MemoryConfig
from .existence import ExistenceEvidence, place_of
from .object_colour import ColourAccumulator, colour_name, sample_colour
from .object_geometry import unpack_voxels
from .room_surfaces import SupportMap
from .scene_object import SceneObject
from .structure_cells import FacingCells, FrameSurfaces
from .structure_rules import STRUCTURE_CLASSES, RoomSurfaces, StructureParams, StructurePiece, find_structure
from .visibility import classify_points

__all__ = ["STRUCTURE_CLASSES", "RoomStructure", "StructureParams"]

_SAME_ELEMENT = 0.1  # a part the rules find again is the element of its kind it overlaps most, above this IoU
_ABSORBED = 0.2  # an element the rules no longer find that overlaps one they found this much is that one
_FACE = np.linspace(-0.4, 0.4, 5)  # where an element's face is sampled for evidence against it


def _in_upright(points: np.ndarray, boxes: np.ndarray, margin: float) -> np.ndarray:
    """(E, N) bool: which of the points (N, 3) lie in each upright box (E, 9) grown by ``margin`` (m) on
    every side (yaw only: the structure's boxes are gravity-aligned; cheaper than geometry.points_in_boxes)."""
    c, s = np.cos(boxes[:, 6:7]), np.sin(boxes[:, 6:7])
    dx, dy = points[None, :, 0] - boxes[:, 0:1], points[None, :, 1] - boxes[:, 1:2]
    half = 0.5 * boxes[:, 3:6] + margin
    return ((np.abs(c * dx + s * dy) <= half[:, 0:1]) & (np.abs(c * dy - s * dx) <= half[:, 1:2])
            & (np.abs(points[None, :, 2] - boxes[:, 2:3]) <= half[:, 2:3]))


def _overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(A, B) how much parts overlap: the IoU of their footprints where their tops lie within 0.1 m (a thin
    worktop found again 4 cm higher is the same worktop), else 0."""
    flat_a, flat_b = a.copy(), b.copy()
    flat_a[:, 2], flat_a[:, 5], flat_b[:, 2], flat_b[:, 5] = 0.0, 1.0, 0.0, 1.0
    tops = np.abs((a[:, 2] + 0.5 * a[:, 5])[:, None] - (b[:, 2] + 0.5 * b[:, 5])[None])
    return np.where(tops <= 0.1, box_iou_3d(flat_a, flat_b), 0.0)


def _face_colour(element: _Element, samples: tuple[np.ndarray, np.ndarray, np.ndarray], stride: int,
                 color: np.ndarray) -> Any:
    """The colour of the samples (rows, columns and (N, 3) points of a keyframe's valid ones, every
    ``stride`` pixels) on an element's seen face (its top, or its front: within 3 cm of it), all of them (a
    shelf's top is a thin strip in the image; no border is eroded off a large face)."""
    face = element.box.copy()
    if element.facing is None:
        face[2], face[5] = face[2] + 0.5 * face[5], 0.06
    else:  # the box's side towards the facing direction, 6 cm thick
        axes = np.array([[np.cos(face[6]), np.sin(face[6])], [-np.sin(face[6]), np.cos(face[6])]])
        towards = axes @ np.array([np.cos(element.facing), np.sin(element.facing)])
        k = int(np.argmax(np.abs(towards)))
        face[:2] += np.sign(towards[k]) * axes[k] * 0.5 * face[3 + k]
        face[3 + k] = 0.06
    rows, cols, points = samples
    inside = _in_upright(points, face[None], 0.0)[0]
    uv = np.column_stack([cols[inside] * stride + stride // 2, rows[inside] * stride + stride // 2])
    return sample_colour(color, uv, erode_px=0)


def _kind(class_name: str) -> str:
    return "surface" if class_name in ("counter", "shelf") else class_name


@dataclass
class _Element:
    """One part of the structure (mutated by its owner only)."""

    id: int
    class_name: str
    box: np.ndarray
    facing: float | None  # the direction its seen face faces (walls, cabinets); None: its top is seen
    first_frame: int
    last_frame: int
    first_ns: int
    last_ns: int
    n_obs: int = 0
    log_odds: float = 0.0
    existence: ExistenceEvidence = field(default_factory=ExistenceEvidence)
    colour: ColourAccumulator = field(default_factory=ColourAccumulator)
    stale: int = 0  # runs of the rules since one last found it

    def face(self) -> np.ndarray:
        """(25, 3) points on its seen face: its top, or its vertical face towards ``facing``."""
        b = self.box
        c, s = np.cos(b[6]), np.sin(b[6])
        u, v = np.meshgrid(_FACE, _FACE)
        if self.facing is None:
            local = np.column_stack([u.ravel() * b[3], v.ravel() * b[4], np.full(u.size, 0.5 * b[5])])
        else:  # the box side whose outward normal is nearest the facing direction
            normal = np.array([np.cos(self.facing), np.sin(self.facing)])
            local_n = np.array([c * normal[0] + s * normal[1], -s * normal[0] + c * normal[1]])
            axis = int(np.argmax(np.abs(local_n)))
            local = np.zeros((u.size, 3))
            local[:, axis] = np.sign(local_n[axis]) * 0.5 * b[3 + axis]
            local[:, 1 - axis] = u.ravel() * b[4 - axis]
            local[:, 2] = v.ravel() * b[5]
        world = np.column_stack([c * local[:, 0] - s * local[:, 1], s * local[:, 0] + c * local[:, 1], local[:, 2]])
        return world + b[:3]

    def to_object(self, score: float) -> SceneObject:
        lab = self.colour.lab()
        return SceneObject(self.id, self.class_name, score, self.box.copy(), ((self.class_name, score * self.n_obs),),
                           self.n_obs, self.first_frame, self.last_frame, self.first_ns, self.last_ns,
                           confidence=float(1.0 / (1.0 + np.exp(-self.log_odds))), colour_lab=lab,
                           colour_name=colour_name(lab), n_looks=max(1, self.existence.n_looks))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "class_name": self.class_name, "box": [float(v) for v in self.box],
                "facing": self.facing, "first_seen_frame": self.first_frame, "last_seen_frame": self.last_frame,
                "first_seen_ns": self.first_ns, "last_seen_ns": self.last_ns, "n_observations": self.n_obs,
                "log_odds": self.log_odds, "existence": self.existence.to_dict(), "colour": self.colour.to_json()}

    @classmethod
    def from_dict(cls, o: dict[str, Any]) -> _Element:
        facing = o.get("facing")
        return cls(int(o["id"]), str(o["class_name"]), np.array(o["box"], dtype=np.float64).reshape(BOX_DIM),
                   None if facing is None else float(facing), int(o["first_seen_frame"]), int(o["last_seen_frame"]),
                   int(o["first_seen_ns"]), int(o["last_seen_ns"]), int(o["n_observations"]), float(o["log_odds"]),
                   ExistenceEvidence.from_dict(o["existence"]), ColourAccumulator.from_json(o.get("colour")))


class RoomStructure:
    """The structure layer of the scene memory (not thread-safe: the memory serialises calls).

    Args:
        config: the memory's settings (its existence and publishing rules apply to structure too).
        new_id: gives the next id of the memory's counter.
        params: the structure rules.
    """

    def __init__(self, config: MemoryConfig, new_id: Callable[[], int], params: StructureParams | None = None) -> None:
        self.config = config
        self.params = params or StructureParams()
        self._new_id = new_id
        self.cells = FacingCells()
        self._elements: dict[int, _Element] = {}
        self._last_run_ns: int | None = None
        self.seconds = 0.0  # wall-clock seconds of the latest ``observe``

    def __len__(self) -> int:
        return len(self._elements)

    @property
    def ids(self) -> set[int]:
        return set(self._elements)

    def observe(self, surfaces: FrameSurfaces, supports: SupportMap, floor_z: float | None,
                perception: FramePerception, named: np.ndarray, things: np.ndarray | None = None) -> None:
        """Take in one keyframe discovery looked at: its vertical samples, a run of the rules when one is
        due, and each element's evidence from it.

        Args:
            surfaces: the keyframe's classified samples (``ObjectDiscovery.surfaces``).
            supports: the horizontal surfaces seen so far (``ObjectDiscovery.supports``).
            floor_z: the floor's height (nothing is structure before it is known).
            perception: the keyframe's perception (its frame, stamp and viewpoint).
            named: (N, 9) boxes of the confident named objects (what they hold is theirs).
            things: (M, 9) boxes of every confident object, named or not (the surface under them is hidden).
        """
        start = time.perf_counter()
        try:
            points, facing = surfaces.vertical(self.params.vertical_cos)
            self.cells.add(points, facing)
            if floor_z is None:
                return
            stamp = int(perception.stamp_ns)
            if self._last_run_ns is None or not 0 <= stamp - self._last_run_ns < self.params.interval_s * 1e9:
                self._last_run_ns = stamp
                self._take(find_structure(self._room(supports, floor_z, named, things), self.params), perception)
            self._evidence(surfaces, perception)
        finally:
            self.seconds = time.perf_counter() - start

    def _room(self, supports: SupportMap, floor_z: float, named: np.ndarray,
              things: np.ndarray | None = None) -> RoomSurfaces:
        keys = supports.keys[supports.frames >= supports.min_frames]
        horizontal = (unpack_voxels(keys) + 0.5) * np.array([supports.cell, supports.cell, supports.layer])
        vertical, facing = self.cells.cells()
        things = np.zeros((0, BOX_DIM)) if things is None else np.asarray(things).reshape(-1, BOX_DIM)
        return RoomSurfaces(horizontal, vertical, facing, float(floor_z), np.asarray(named).reshape(-1, BOX_DIM),
                            supports.cell, supports.layer, self.cells.layer, things)

    def _take(self, pieces: list[StructurePiece], perception: FramePerception) -> None:
        """The rules' latest answer: each part is the element of its kind it overlaps most (its box and
        class updated), or a new element; elements it no longer holds go stale, or into the one that took
        their place."""
        before = list(self._elements.values())
        iou = (_overlap(np.array([q.box for q in pieces]), np.array([e.box for e in before]))
               if pieces and before else np.zeros((len(pieces), len(before))))
        same = np.array([[_kind(q.class_name) == _kind(e.class_name) for e in before] for q in pieces],
                        dtype=bool).reshape(iou.shape)
        iou = np.where(same, iou, 0.0)
        found: set[int] = set()
        for k, piece in enumerate(pieces):
            free = [j for j in np.argsort(-iou[k], kind="stable") if before[j].id not in found]
            if free and iou[k, free[0]] > _SAME_ELEMENT:
                element = before[free[0]]
                element.box, element.class_name, element.facing, element.stale = piece.box, piece.class_name, \
                    piece.facing, 0
            else:
                frame, stamp = int(perception.frame_index), int(perception.stamp_ns)
                element = _Element(self._new_id(), piece.class_name, piece.box, piece.facing, frame, frame, stamp,
                                   stamp, log_odds=self.config.existence_prior,
                                   existence=ExistenceEvidence.starting_at(self.config.existence_prior))
                self._elements[element.id] = element
            found.add(element.id)
        for j, element in enumerate(before):
            if element.id in found:
                continue
            element.stale += 1
            # Into the element that took its place (it overlapped a part the rules found now), or gone when
            # the rules have not found it for a while.
            taken = [k for k in range(len(pieces)) if iou[k, j] > _ABSORBED]
            if taken or element.stale > self.params.max_stale:
                del self._elements[element.id]

    def _evidence(self, surfaces: FrameSurfaces, perception: FramePerception) -> None:
        """A look at each element in this keyframe: seen (its samples fall in its box) or seen through."""
        if not self._elements:
            return
        cfg, p = self.config, self.params
        elements = list(self._elements.values())
        sampled = surfaces.valid.copy()  # every other sample along both axes: large parts need few
        sampled[1::2] = False
        sampled[:, 1::2] = False
        rows, cols = np.nonzero(sampled)
        points = surfaces.points[rows, cols].astype(np.float64)
        hits = _in_upright(points, np.array([e.box for e in elements]), p.evidence_margin)  # (E, N)
        place = place_of(perception.viewpoint, cfg.existence_place)
        stamp = int(perception.stamp_ns)
        frame = perception.frame
        unseen = []
        for element, hit in zip(elements, hits, strict=True):
            if np.count_nonzero(hit) < p.min_points:
                unseen.append(element)
                continue
            element.existence.add(cfg.existence_hit * p.score, place, stamp, cfg.existence_revisit_s,
                                  cfg.existence_max_places, cfg.existence_min, cfg.existence_max, True)
            element.log_odds = element.existence.log_odds(cfg.existence_min, cfg.existence_max)
            element.n_obs += 1
            element.last_frame, element.last_ns = int(perception.frame_index), stamp
            if element.colour.wants_sample(element.n_obs) and frame is not None:  # a whole face: a full weight
                element.colour.add(_face_colour(element, (rows, cols, points), surfaces.pixel_stride, frame.color),
                                   1.0)
        if not unseen or frame is None:
            return
        # Not seen: the frame may see through where one should be (one projection for all of them).
        faces = [e.face() for e in unseen]
        view = classify_points(np.concatenate(faces), 0.0, frame)
        owner = np.repeat(np.arange(len(unseen)), [len(f) for f in faces])
        in_view = np.bincount(owner, weights=view.seen | view.hidden | view.through, minlength=len(unseen))
        through = np.bincount(owner, weights=view.through, minlength=len(unseen))
        for element, n, t in zip(unseen, in_view, through, strict=True):
            if n >= p.min_face_points and t >= 0.5 * n:
                element.existence.add(cfg.existence_through, place, stamp, cfg.existence_revisit_s,
                                      cfg.existence_max_places, cfg.existence_min, cfg.existence_max)
                element.log_odds = element.existence.log_odds(cfg.existence_min, cfg.existence_max)

    # ------------------------------------------------------------------ reading

    def objects(self) -> list[SceneObject]:
        """Every element, by id."""
        return [self._elements[i].to_object(self.params.score) for i in sorted(self._elements)]

    def published(self) -> list[SceneObject]:
        """The confident elements (``publish_confidence``) the rules' latest run found, by class (floor, walls,
        counters, shelves, cabinets) and id (those it no longer found keep their id a while, unpublished)."""
        current = {i for i, e in self._elements.items() if e.stale == 0}
        out = [o for o in self.objects() if o.id in current and o.confidence >= self.config.publish_confidence]
        return sorted(out, key=lambda o: (STRUCTURE_CLASSES.index(o.class_name), o.id))

    def reset(self) -> None:
        self.cells.reset()
        self._elements.clear()
        self._last_run_ns = None

    def to_dict(self) -> list[dict[str, Any]]:
        return [self._elements[i].to_dict() for i in sorted(self._elements)]

    def load(self, rows: list[dict[str, Any]]) -> None:
        """Take the elements of ``to_dict``'s form (the rules find them again as the room is seen)."""
        self._elements = {e.id: e for e in (_Element.from_dict(o) for o in rows)}
