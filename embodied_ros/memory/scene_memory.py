"""The scene memory: world-frame 3D detections accumulated over time into persistent objects.

Per frame (see DESIGN.md, Accumulation): detections scoring below ``score_threshold`` are
dropped; the rest, highest score first, are associated with the memory. A detection is an
existing object when

* their exact 9-DoF IoU is strictly above ``iou_threshold`` (class-agnostic by default, as the
  reference demo's suppression), or the same class covers more than ``containment_threshold``
  of the smaller box; or, for a class the object was already seen as,
* its points lie on the object's own geometry (``geometry_match``: the voxels of all the views
  of the object, so a view of the other half of a table still finds it), or
* its 2D box covers the object's seen region in this image (``image_match``: the object's
  surface points that this frame's depth confirms, so hidden parts do not count).

The best-fitting object not yet taken in this frame takes it; a detection overlapping a better
one of the same frame, or whose objects were all taken, is suppressed (NMS). Otherwise it is a
new object. Objects of one class whose geometries overlap (``geometry_merge``) or boxes overlap
merge into the older one.

An object's box is fitted to its whole geometry (gravity-aligned, yaw from the footprint) and
completed with class shape priors (memory/amodal.py); objects whose detections carry no points
(a network's boxes) fuse their boxes instead. Existence is evidence both ways, in log-odds:
each detection adds to it, each frame in which the object is in view and not hidden but not
detected takes from it, and a frame that sees through its place takes more; objects that fall
low enough are forgotten, and only confident ones are published, at most ``max_per_class`` per
class among them. The class is the one with most evidence (the sum of its detections' scores).

Ids: integers from 0, never reused by one memory, not after a merge (the older id survives)
and not after ``reset()`` (the counter keeps going, so an RViz marker or a grounding answer
holding an id never names a different object); ``save``/``load`` keep the counter.

``SceneMemory`` owns the per-frame step and the objects; the jobs live beside it: association
(memory/association.py), fusion (memory/observation_fusion.py), existence (memory/existence.py), misses
(memory/misses.py), unknown objects (memory/unknown_objects.py), the room's structure (memory/structure.py:
floor, walls, counters, shelves, cabinets, kept and published apart from the objects) and what is published
(memory/publishing.py). An object's fields change only through its own methods (memory/track.py).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..classes import is_mover
from ..detections import Detections3D, FramePerception
from ..errors import FrameError, InputError, json_error_line, os_error_line
from ..frame import Frame
from ..geometry.boxes import points_in_boxes
from .amodal import FloorEstimate
from .association import Association, Queries, point_keys
from .changes import ChangeConfig, ChangeTracker
from .config import MemoryConfig
from .discovery import UNKNOWN_CLASS, ObjectDiscovery
from .misses import objects_in_view, take_misses
from .movers import Movers
from .object_colour import detection_samples
from .observation_fusion import Observation, ObservationFusion, cut_by_edge
from .publishing import build_snapshot, published
from .scene_object import MemorySnapshot, SceneObject, UpdateResult
from .settling import settle_tracks
from .spatial_index import SpatialHashGrid
from .structure import RoomStructure
from .track import Track, confident
from .unknown_objects import UnknownObjects
from .visibility import Visibility

__all__ = ["MemorySnapshot", "SceneMemory", "SceneObject", "UpdateResult"]

FORMAT = "embodied_ros/scene_memory"
FORMAT_VERSION = 4  # 2: geometry and existence evidence per object; 3: that evidence per place; 4: per look
# (the mean of its frames) and the recesses. 1 to 3 still load
_MOVER_MARGIN = 0.1  # metres around a person's box in which discovered segments are the person's
_V1_LOG_ODDS = 2.0  # objects of a version-1 file were all kept: they load as confident


@dataclass(frozen=True)
class _Ahead:
    """A frame's discovery done before its update (SceneMemory.prepare)."""

    frame: tuple[int, int]  # (index, stamp_ns)
    found: Detections3D | None  # discovery's answer (None: not a frame it looks at)
    seconds: float


def _frame_key(frame: Frame) -> tuple[int, int]:
    return int(frame.index), int(frame.stamp_ns)


class SceneMemory:
    """Persistent objects fused from per-frame world-frame detections; thread-safe.

    Args:
        config: the memory's settings (default: ``MemoryConfig()``).
        **overrides: fields of :class:`MemoryConfig` to change (``SceneMemory(min_observations=2)``).

    Raises:
        ConfigError: if a parameter cannot work.
    """

    def __init__(self, config: MemoryConfig | None = None, changes: ChangeConfig | None = None,
                 **overrides: Any) -> None:
        self.config = replace(config or MemoryConfig(), **overrides)  # MemoryConfig: the one place for defaults
        self._lock = threading.RLock()
        self._tracks: dict[int, Track] = {}
        self._index = SpatialHashGrid(self.config.cell_size)
        self._floor = FloorEstimate()
        self._fusion = ObservationFusion(self.config, self._tracks, self._index, self._floor)
        self._association = Association(self.config, self._tracks, self._index, self._fusion.absorb)
        self._unknown = UnknownObjects(self.config, self._tracks, self._index, self._fusion, self._create)
        self._next_id = 0
        self._frame_id = ""
        self._vocabulary: tuple[str, ...] = ()
        self._last_frame = (-1, 0)
        self._n_updates = 0
        self._snapshot: MemorySnapshot | None = None
        self._ahead: _Ahead | None = None  # the next frame's floor and discovery, done ahead (prepare)
        cfg = self.config
        self._discovery = ObjectDiscovery() if cfg.discover_unknown or cfg.room_structure else None
        self._structure = RoomStructure(cfg, self._take_id) if cfg.room_structure else None
        self._movers = Movers(self.config, self._take_id)
        # What changed (memory/changes.py): removed, new and moved objects, and their history.
        self.changes = ChangeTracker(changes or ChangeConfig(), self.config, self._drop, self._renumber)

    @classmethod
    def from_config(cls, config: MemoryConfig, changes: ChangeConfig | None = None) -> SceneMemory:
        """A memory with the parameters of ``config`` (and ``changes``' rules for what changed)."""
        return cls(config, changes)

    def __len__(self) -> int:
        return len(self._tracks)

    @property
    def frame_id(self) -> str:
        """World frame of the objects' boxes ("" until the first detection arrives)."""
        return self._frame_id

    @property
    def vocabulary(self) -> tuple[str, ...]:
        """Every class name the perceptors could have given (their label vocabularies, in order
        first seen): a phrase about a class outside it names something the detector cannot see."""
        return self._vocabulary

    @property
    def floor_z(self) -> float | None:
        """The floor's height seen in the frames' depth (metres, z up), or None."""
        return self._floor.z

    # ------------------------------------------------------------------ update

    def prepare(self, frame: Frame) -> bool:
        """Do ahead what the next update needs of ``frame`` alone: the floor and discovery (memory/discovery.py), the
        slowest part of an update. It runs while the network looks at the frame (SceneMapper.step) or while the
        frame waits for another detector's output (the node): the update of this frame then takes it as done and
        gives the same result. An update of another frame drops it (that frame's floor and surfaces still count,
        as a look at the room). Returns False when there is nothing to do ahead (no discovery, no structure)."""
        if self._discovery is None:
            return False
        with self._lock:
            if self.config.amodal:
                self._floor.update(frame)
            start = time.perf_counter()
            found = self._discovery.discover(frame, self._floor.z)
            self._ahead = _Ahead(_frame_key(frame), found, time.perf_counter() - start)
            return True

    def prepared(self, frame: Frame) -> bool:
        """Whether ``prepare`` already did ``frame``'s part ahead."""
        ahead = self._ahead
        return ahead is not None and ahead.frame == _frame_key(frame)

    def update(self, perception: FramePerception) -> UpdateResult:
        """Fuse one frame's world-frame detections into the memory.

        The cost depends on the detections and the objects near the camera, not on the number
        of objects: candidates come from the spatial index, and the exact IoUs of a frame are
        computed in two or three batched calls.

        Raises:
            FrameError: if the detections are in another frame than the memory's objects.
        """
        det = perception.detections
        frame = perception.frame
        with self._lock:
            self._n_updates += 1
            self._last_frame = (int(perception.frame_index), int(perception.stamp_ns))
            self._snapshot = None
            ahead = self._ahead if frame is not None and self.prepared(frame) else None
            self._ahead = None
            self._add_vocabulary(det.class_names)
            if len(det) and self._frame_id and det.frame_id != self._frame_id:
                raise FrameError(f"frame {perception.frame_index}: detections are in frame '{det.frame_id}', "
                                 f"the scene memory holds objects in '{self._frame_id}'")
            if frame is not None and self.config.amodal:
                if ahead is None:
                    self._floor.update(frame)
                self._fusion.follow_floor()
            views = objects_in_view(frame, self._tracks, self._index) if frame is not None else {}
            if len(det):
                self._frame_id = det.frame_id
            valid = np.all(np.isfinite(det.boxes), axis=1) & np.all(det.boxes[:, 3:6] > 0, axis=1)
            valid &= np.isfinite(det.scores)
            keep = valid & (det.scores >= self.config.score_threshold)
            moving = np.array([is_mover(n) for n in det.class_names], dtype=bool)[det.labels]
            self._observe_movers(perception, np.flatnonzero(keep & moving))
            keep &= ~moving  # people and animals are not part of the room
            created: list[int] = []
            updated: list[int] = []
            taken: set[int] = set()
            n_suppressed = self._take_detections(perception, np.flatnonzero(keep), views, created, updated, taken)
            spared: set[int] = set()
            discovery_s, structure_s, named_now, looked = self._discover(perception, views, taken, created, updated,
                                                                        spared, ahead)
            taken = (taken - {gone for gone, _ in named_now}) | {kept for _, kept in named_now}
            missed, forgotten = take_misses(self.config, self._tracks, self._index, views, taken | spared, perception,
                                            self.changes.kept)
            merged = named_now + self._association.merge_pass(sorted(taken))
            changed = taken | set(created) | set(updated) | {kept for _, kept in merged}
            settle_tracks(self._tracks, changed, missed, perception.viewpoint, self.config)
            start = time.perf_counter()
            changes, renamed = self.changes.step(perception, self._tracks, views, taken, forgotten, merged)
            changes_s = time.perf_counter() - start
            merged += renamed
            new = set(created)
            return UpdateResult(
                created=tuple(i for i in created if i in self._tracks),
                updated=tuple(sorted({i for i in updated + [s for _, s in merged] if i in self._tracks} - new)),
                merged=tuple(merged),
                n_low_score=int(np.count_nonzero(valid & ~keep)),
                n_suppressed=n_suppressed,
                n_invalid=int(np.count_nonzero(~valid)),
                missed=missed,
                forgotten=forgotten,
                discovery_s=discovery_s,
                structure_s=structure_s,
                discovery_looked=looked,
                discovery_ahead_s=ahead.seconds if ahead is not None else 0.0,
                changes=tuple(changes),
                changes_s=changes_s,
            )

    def _take_detections(self, perception: FramePerception, order: np.ndarray, views: dict[int, Visibility],
                         created: list[int], updated: list[int], taken: set[int]) -> int:
        """Take in the frame's detections ``order`` (those kept), best score first: each is the best-fitting
        object not yet taken this frame (``updated``), or a new one (``created``); ``taken`` gets the ids.

        Returns:
            The number of detections suppressed (NMS within the frame, or all their objects taken).
        """
        det = perception.detections
        frame = perception.frame
        order = order[np.argsort(-det.scores[order], kind="stable")]  # greedy: best detection first
        boxes = det.boxes[order]
        scores = np.clip(det.scores[order], 0.0, 1.0)
        names = [det.class_names[i] for i in det.labels[order]]
        points = [det.points[i] for i in order] if det.points is not None else [None] * len(order)
        keys = [point_keys(p, self.config.geometry_voxel) for p in points]
        boxes_2d = det.boxes_2d[order] if det.boxes_2d is not None else None
        around = det.surround_z[order] if det.surround_z is not None else np.full(len(order), np.nan)

        # Objects present at the start of the frame keep their boxes until a detection takes
        # them, so one batched IoU call serves the whole frame.
        hits, iou_dd = self._association.matches(Queries(boxes, names, keys, boxes_2d), views, with_queries=True)
        used: list[int] = []
        n_suppressed = 0
        for k in range(len(boxes)):
            # Non-maximum suppression within the frame: a better detection already covers it.
            if any(iou_dd[k, j] > self.config.iou_threshold and self._association.same_class(names[k], names[j])
                   for j in used):
                n_suppressed += 1
                continue
            free = [obj_id for obj_id in hits[k] if obj_id not in taken]
            if hits[k] and not free:
                n_suppressed += 1  # its objects were all taken by better detections of this frame
                continue
            cut = boxes_2d is not None and cut_by_edge(boxes_2d[k], frame)
            whole = boxes_2d is not None and frame is not None and np.all(np.isfinite(boxes_2d[k])) and not cut
            detection = Observation(boxes[k], float(scores[k]), names[k], points[k], cut, float(around[k]), whole)
            if free:
                obj_id = free[0]
                self._fusion.observe(self._tracks[obj_id], detection, perception)
                updated.append(obj_id)
            else:
                obj_id = self._create(detection, perception)
                created.append(obj_id)
            track = self._tracks[obj_id]
            if track.wants_colour():  # the colour of the detection's pixels
                track.add_colour(detection_samples(perception, order[k:k + 1])[0], float(scores[k]))
            taken.add(obj_id)
            used.append(k)
        return n_suppressed

    def _observe_movers(self, perception: FramePerception, idx: np.ndarray) -> None:
        """The frame's detections of people and animals (``idx``) go to the movers (memory/movers.py)."""
        det = perception.detections
        heights = np.array([np.ptp(det.points[i][:, 2]) if det.points is not None and len(det.points[i])
                            else det.boxes[i, 5] for i in idx])
        self._movers.observe(det.boxes[idx], [det.class_names[i] for i in det.labels[idx]], det.scores[idx],
                             heights, int(perception.frame_index), int(perception.stamp_ns), perception.viewpoint)

    def _drop(self, obj_id: int) -> None:
        """Let an object go (it was removed from the room)."""
        del self._tracks[obj_id]
        self._index.remove(obj_id)

    def _renumber(self, obj_id: int, new_id: int) -> None:
        """The object ``obj_id`` takes the id ``new_id`` (a moved object keeps the id it had)."""
        track = self._tracks.pop(obj_id)
        self._index.remove(obj_id)
        track.id, track.cached = new_id, None
        self._tracks[new_id] = track
        self._index.insert(new_id, track.box)

    def _add_vocabulary(self, names: tuple[str, ...]) -> None:
        if not set(names) <= set(self._vocabulary):
            self._vocabulary += tuple(n for n in dict.fromkeys(names) if n not in self._vocabulary)

    def _take_id(self) -> int:
        """The next id of the counter (objects, the room's structure and movers share it: no id names two things)."""
        obj_id = self._next_id
        self._next_id += 1
        return obj_id

    def _create(self, det: Observation, perception: FramePerception) -> int:
        """A new object of one detection; its id is the next of the counter."""
        obj_id = self._take_id()
        self._fusion.create(obj_id, det, perception)
        return obj_id

    def _discover(self, perception: FramePerception, views: dict[int, Visibility], taken: set[int],
                  created: list[int], updated: list[int], spared: set[int],
                  ahead: _Ahead | None = None) -> tuple[float, float, list[tuple[int, int]], bool]:
        """Take in the frame's unknown objects (memory/discovery.py): a segment that is part of a named
        object is left out; one that is an unknown object not yet taken this frame adds to it (the
        evidence rules of every object); the rest are new objects of class ``UNKNOWN_CLASS``. The room's
        structure (memory/structure.py) takes in the same keyframe's surfaces.

        Frames discovery does not look at (ObjectDiscovery.discover) put the unknown objects in view in
        ``spared`` (no evidence against them), and so does a segment over two of them (they are there).
        ``ahead``: the frame's discovery done by ``prepare``.

        Returns:
            The seconds discovery took, those the structure took, the merges of unknown objects into named ones
            (removed, survivor), and whether discovery looked at the frame.
        """
        if self._discovery is None or perception.frame is None:
            return 0.0, 0.0, [], False
        start = time.perf_counter() - (ahead.seconds if ahead is not None else 0.0)
        found = ahead.found if ahead is not None else self._discovery.discover(perception.frame, self._floor.z)
        if found is None:  # not a frame discovery looks at: it says nothing of the unknown objects in view
            spared |= {i for i in views if self._tracks[i].class_name == UNKNOWN_CLASS}
            return time.perf_counter() - start, 0.0, [], False
        if len(found) and not self._frame_id:
            self._frame_id = found.frame_id
        people = self._movers.current(int(perception.stamp_ns))
        if people and len(found):  # what a person or an animal shows is not a thing of the room
            grown = np.array([o.box for o in people])
            grown[:, 3:6] += 2 * _MOVER_MARGIN
            found = found.select(~points_in_boxes(found.boxes[:, :3], grown).any(axis=0))
        merges = []
        if self.config.discover_unknown:
            merges = self._unknown.take_in(found, perception, taken, created, updated, spared)
        structure_s = 0.0
        if self._structure is not None and self._discovery.surfaces is not None:
            sure = confident(self._tracks.values(), self.config.publish_confidence)
            named = np.array([t.box for t in sure if t.class_name != UNKNOWN_CLASS]).reshape(-1, 9)
            self._structure.observe(self._discovery.surfaces, self._discovery.supports, self._floor.z, perception,
                                    named, np.array([t.box for t in sure]).reshape(-1, 9))
            structure_s = self._structure.seconds
        return time.perf_counter() - start - structure_s, structure_s, merges, True

    # ------------------------------------------------------------------ reading

    def objects(self) -> list[SceneObject]:
        """Every object, by increasing id."""
        return list(self.snapshot().objects)

    def published_objects(self) -> list[SceneObject]:
        """Confident objects seen at least ``min_observations`` times, at most ``max_per_class``
        per class and ``max_unknown`` unknown objects (highest score first), best score first overall."""
        return published(self.snapshot(), self.config)

    def structure_objects(self) -> list[SceneObject]:
        """Every element of the room's structure (floor, walls, counters, shelves, cabinets), by id."""
        with self._lock:
            return self._structure.objects() if self._structure is not None else []

    def published_structure(self) -> list[SceneObject]:
        """The room's structure as published (confident elements; memory/structure.py), apart from the
        objects: what the ``structure`` namespace, field and list show and grounding speaks about."""
        with self._lock:
            return self._structure.published() if self._structure is not None else []

    def current_movers(self) -> list[SceneObject]:
        """The people and animals seen now (memory/movers.py): detected within ``mover_lifetime_s`` of the
        latest frame, shown by evidence to be movers; never among the map's objects."""
        with self._lock:
            return self._movers.current(self._last_frame[1])

    def get(self, obj_id: int) -> SceneObject | None:
        """The object with id ``obj_id``, or None if there is none (never was, merged away or forgotten)."""
        with self._lock:
            track = self._tracks.get(int(obj_id))
            return None if track is None else track.to_object()

    def geometry_points(self, obj_id: int) -> np.ndarray:
        """(K, 3) world points of an object's own geometry (empty when it has none)."""
        with self._lock:
            track = self._tracks.get(int(obj_id))
            if track is None or track.geometry is None:
                return np.zeros((0, 3))
            return track.geometry.points()

    def snapshot(self) -> MemorySnapshot:
        """An immutable copy of the current state (cached until the next change)."""
        with self._lock:
            if self._snapshot is None:
                self._snapshot = build_snapshot(self._tracks, self._frame_id, self._last_frame, self._n_updates)
            return self._snapshot

    def reset(self) -> None:
        """Forget every object; ids keep counting (an id is never reused by this memory)."""
        with self._lock:
            self._tracks.clear()
            self._index.clear()
            self._floor.reset()
            self._ahead = None
            self._movers.reset()
            self._unknown.reset()
            if self._discovery is not None:
                self._discovery.reset()
            if self._structure is not None:
                self._structure.reset()
            self._fusion.completed_to = None
            self.changes.reset()
            self._frame_id = ""
            self._last_frame = (-1, 0)
            self._n_updates = 0
            self._snapshot = None

    # ------------------------------------------------------------------ persistence

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable document of the whole memory (parameters, id counter, objects)."""
        with self._lock:
            config = asdict(self.config)
            config["score_mode"] = self.config.score_mode.value
            return {
                "format": FORMAT,
                "format_version": FORMAT_VERSION,
                "config": config,
                "frame_id": self._frame_id,
                "vocabulary": list(self._vocabulary),
                "floor_z": self._floor.z,
                "next_id": self._next_id,
                "objects": [self._tracks[i].to_dict() for i in sorted(self._tracks)],
                "structure": self._structure.to_dict() if self._structure is not None else [],
                "changes": self.changes.to_dict(),
            }

    @classmethod
    def from_dict(cls, data: dict[str, Any], changes: ChangeConfig | None = None, **overrides: Any) -> SceneMemory:
        """Rebuild a memory from ``to_dict()``'s document; keyword arguments override its parameters. What
        changed after the load is told against the loaded objects (memory/changes.py).

        Raises:
            InputError: if the document is not a scene memory of a known version.
        """
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(f"not a scene memory document (expected format '{FORMAT}')")
        version = data.get("format_version")
        if version not in range(1, FORMAT_VERSION + 1):
            raise InputError(f"scene memory document version {version!r} is not 1 to {FORMAT_VERSION}")
        try:
            known = {f.name for f in fields(MemoryConfig)}  # parameters of older versions are let go
            config = MemoryConfig(**{k: v for k, v in data["config"].items() if k in known})
        except (KeyError, TypeError, AttributeError) as err:
            raise InputError(f"scene memory document has no valid config: {err}") from None
        memory = cls.from_config(replace(config, **overrides), changes)
        try:
            memory._frame_id = str(data["frame_id"])
            memory._vocabulary = tuple(str(n) for n in data.get("vocabulary", ()))
            if data.get("floor_z") is not None:
                memory._floor.assume(float(data["floor_z"]))
                memory._fusion.completed_to = memory._floor.z
            for o in data["objects"]:
                track = Track.from_dict(o, _V1_LOG_ODDS)
                memory._tracks[track.id] = track
                memory._index.insert(track.id, track.box)
            if memory._structure is not None:
                memory._structure.load(list(data.get("structure", ())))
            taken = set(memory._tracks) | (memory._structure.ids if memory._structure is not None else set())
            memory._next_id = max(int(data["next_id"]), max(taken, default=-1) + 1)
            memory.changes.load(data.get("changes"), memory._tracks)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise InputError(f"scene memory document is malformed: {type(err).__name__}: {err}") from None
        return memory

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write ``to_dict()`` as JSON to ``path`` (atomically: a reader never sees half a file)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict()))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], changes: ChangeConfig | None = None, **overrides: Any) -> SceneMemory:
        """Read a memory written by ``save``; keyword arguments override its parameters.

        Raises:
            InputError: if the file is missing, not JSON or not a scene memory.
        """
        try:
            data = json.loads(Path(path).read_text())
        except OSError as err:
            raise InputError(f"cannot read the scene memory: {os_error_line(err, path)}") from None
        except ValueError as err:
            raise InputError(f"{path}: cannot read the scene memory: {json_error_line(err)}") from None
        try:
            return cls.from_dict(data, changes, **overrides)
        except InputError as err:
            raise InputError(f"{path}: {err}") from None

