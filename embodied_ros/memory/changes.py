"""What changed in the room: objects removed, new and moved, decided by evidence in looks, not frames.

An object the map has believed once (its confidence reached ``memory.publish_confidence``) is *established*.
The map shows it once it is ``memory.appear_margin`` surer with a box two looks agree on (memory/settling.py),
so a new or moved thing seen from one look is told before the map shows it. From then on:

* it is **removed** when ``removed_looks`` looks (a place of the camera and a visit to it, as existence
  counts them) each saw its place clearly without it (at least ``through_fraction`` of its surface points
  seen through: the depth there lay farther) and no detection of it came since. An object out of view, or
  hidden behind another (its points nearer than it), says nothing: leaving the view or being hidden is not
  going. The memory then lets the object go.
* an object that becomes established is **new** when the first ``new_looks`` looks at its place (before its
  first detection; memory/view_store.py keeps their depth thumbnails) saw it empty: free space or a surface
  beyond where it stands. A thing that stood there all along and was detected late was seen at its own depth
  from the first; one put there later may well be seen a few times before a detector names it, and still is
  new. One look is not enough: a surface that some views see and others see through (a depth artefact) must
  not become a new thing.
* a removed and a new object of one class (unknown objects: of like shape and colour) within
  ``move_window_s`` of each other are one **move**: one event with both boxes, and the object at its new
  place takes the old id. The half seen first was told already; the move replaces it (change_events.py).
  A new object whose place only ``move_new_looks`` looks saw empty is not told new, but a removal of its
  kind completes it into a move (the removal is evidence of its own).

Structure (floor, walls, counters, shelves, cabinets, doors, windows) does not move and people are not
static objects: ``static_classes`` are never established, so they never make an event.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..detections import FramePerception, class_key
from ..errors import ConfigError
from .change_events import ChangeEvent, ChangeKind, ChangeLog
from .config import MemoryConfig
from .discovery import UNKNOWN_CLASS
from .existence import Place, place_of
from .misses import surface_samples
from .object_colour import ColourAccumulator, colour_name
from .track import Track
from .view_store import ViewStore
from .visibility import Visibility

Look = tuple[Place, int]  # a place and the start (ns) of the visit
THERE_SEEN = 0.75  # a past view saw a thing there when this fraction of its points it observed lay at their depth


@dataclass(frozen=True)
class ChangeConfig:
    """How changes are told (pipeline section ``changes``; ROS parameters ``changes.*``)."""

    # Tell changes at all (removed, new, moved objects); off: the map behaves as without them.
    enabled: bool = True
    # An established object is removed after this many looks (place and visit) that saw its place clearly
    # without it, none detecting it since.
    removed_looks: int = 2
    # A frame saw an object's place clearly without it when at least this fraction of its surface points that the
    # frame observed lay nearer than the depth there (seen through) ...
    through_fraction: float = 0.5
    # ... and this many times as many as lay at their depth (an object's points near what it stood on or against
    # lie at that surface's depth when it has gone).
    through_over_seen: float = 1.75
    # ... and the object would look at least this many pixels (its middle extent) within max_depth.
    min_size_px: float = 8.0
    # Metres: places farther than this from the camera give no evidence of change (depth noise grows).
    max_depth: float = 4.0
    # An object is new when at least this many looks saw its place empty, before any look saw it there (and
    # before its first detection).
    new_looks: int = 2
    # An object whose place fewer than new_looks looks saw empty, but at least this many (and none saw it there), is
    # not told new; it completes a removal of its kind within move_window_s into a move (a removal is evidence
    # of its own, and one clear look at the new place is often all a pass gives).
    move_new_looks: int = 1
    # A removed and a new object of one class within this many seconds are one object moved.
    move_window_s: float = 1800.0
    # Unknown objects are one thing moved when each sorted extent differs by at most this factor ...
    shape_ratio: float = 1.5
    # ... and their colours (CIELAB) by at most this Delta E (when both were seen in colour).
    colour_delta_e: float = 25.0
    # Past views kept for "seen empty before": depth pooled over this many pixels along each axis ...
    view_pool_px: int = 8
    # ... at most this many (about 10 kB each at 640 x 480).
    max_views: int = 800
    # Events kept in the history.
    max_events: int = 1000
    # The node's ~/change_markers (and the bag's) show the changes of the last this many seconds (0: all).
    marker_window_s: float = 600.0
    # An object the map believed is not forgotten when a detector stops finding it (it loses confidence, and is
    # published again when found again): only a clear look at its empty place lets it go. Off: the memory's
    # forgetting (memory.forget_after_s) lets believed objects go too, silently.
    keep_believed: bool = True
    # Unknown objects (memory/discovery.py: geometry alone) are watched for changes once found from this many places
    # on the floor: a segment that only some viewpoints show (a depth artefact at an edge) must not be told removed.
    unknown_looks: int = 3
    # Classes that never change: room structure, and people (movers, not static objects).
    static_classes: tuple[str, ...] = ("floor", "wall", "ceiling", "counter", "shelf", "bookshelf", "bookcase",
                                       "cabinet", "door", "window", "stairs", "person", "people")

    def __post_init__(self) -> None:
        if min(self.removed_looks, self.new_looks, self.unknown_looks, self.move_new_looks) < 1:
            raise ConfigError(f"removed_looks, new_looks, unknown_looks and move_new_looks must be at least 1, got "
                              f"{(self.removed_looks, self.new_looks, self.unknown_looks, self.move_new_looks)!r}")
        if self.move_new_looks > self.new_looks:
            raise ConfigError(f"move_new_looks must be at most new_looks, got {self.move_new_looks!r} > "
                              f"{self.new_looks!r}")
        if not 0.0 < self.through_fraction <= 1.0:
            raise ConfigError(f"through_fraction must be in (0, 1], got {self.through_fraction!r}")
        if self.view_pool_px < 1 or self.max_views < 0 or self.max_events < 1:
            raise ConfigError("view_pool_px and max_events must be at least 1 and max_views at least 0, got "
                              f"{(self.view_pool_px, self.max_views, self.max_events)!r}")
        lengths = (self.min_size_px, self.max_depth, self.move_window_s, self.colour_delta_e, self.marker_window_s,
                   self.through_over_seen)
        if min(lengths) < 0 or self.shape_ratio < 1:
            raise ConfigError("min_size_px, max_depth, move_window_s, colour_delta_e, marker_window_s and "
                              "through_over_seen must be "
                              f">= 0 and shape_ratio >= 1, got {lengths + (self.shape_ratio,)!r}")
        object.__setattr__(self, "static_classes", tuple(self.static_classes))


@dataclass
class _Record:
    """What the changes know of an established object: where it stood and which looks found it gone."""

    class_name: str
    box: np.ndarray
    colours: ColourAccumulator  # the track's own (read when an event is told or matched)
    last_seen_ns: int
    absent: set[Look] = field(default_factory=set)

    @classmethod
    def of(cls, track: Track) -> _Record:
        return cls(track.class_name, track.box.copy(), track.colour, track.last_ns)

    @property
    def colour_lab(self) -> tuple[float, float, float] | None:
        return self.colours.lab()

    @property
    def colour(self) -> str | None:
        return colour_name(self.colour_lab)


@dataclass
class _Half:
    """One half of a possible move: a removal told (its record), or a new object (alive, by id), told new or, when
    its place was seen empty fewer than ``new_looks`` times, untold (``event`` None) until a removal completes it."""

    event: ChangeEvent | None
    record: _Record
    object_id: int
    stamp_ns: int

    @classmethod
    def told(cls, event: ChangeEvent, record: _Record) -> _Half:
        return cls(event, record, event.object_id, event.stamp_ns)


class ChangeTracker:
    """Turns the memory's per-frame evidence into change events (owned by a SceneMemory, under its lock).

    Args:
        config: the change rules.
        memory_config: the memory's (publish_confidence, existence_place, existence_revisit_s).
        drop: lets an object go from the memory (removed).
        renumber: gives the object of the first id the second (an object moved keeps its id).
    """

    def __init__(self, config: ChangeConfig, memory_config: MemoryConfig, drop: Callable[[int], None],
                 renumber: Callable[[int, int], None]) -> None:
        self.config = config
        self.memory_config = memory_config
        self.log = ChangeLog(config.max_events)
        self.views = ViewStore(config.view_pool_px, config.max_views)
        self._drop, self._renumber = drop, renumber
        self._established: dict[int, _Record] = {}
        self._removed: list[_Half] = []  # removals a new object may still complete into a move
        self._new: dict[int, _Half] = {}  # new objects (by id, told or not) a removal may still complete into a move
        self._visits: dict[Place, int] = {}
        self._told: dict[int, int] = {}  # object id -> seq of the new or moved event that says where it is
        self._static = frozenset(class_key(c) for c in config.static_classes)
        self.n_let_go = 0  # established objects the memory forgot without a clear look at their place

    # ---- the per-frame step -------------------------------------------------------------------------------

    def step(self, perception: FramePerception, tracks: dict[int, Track], views: dict[int, Visibility],
             taken: set[int], forgotten: tuple[int, ...], merged: list[tuple[int, int]]
             ) -> tuple[list[ChangeEvent], list[tuple[int, int]]]:
        """Take one frame's evidence (after the memory took its detections and misses).

        Args:
            perception: the frame's perception (stamp, viewpoint, frame).
            tracks: the memory's objects by id (changed: removed objects go, moved ones change id).
            views: how the objects near the camera fell in the frame, by id.
            taken: ids detected this frame.
            forgotten: ids the memory forgot this frame.
            merged: (gone, kept) ids merged this frame.

        Returns:
            The events made, and (id it had, id it takes) of the objects renumbered (a moved object takes the id
            it had before it moved).
        """
        if not self.config.enabled:
            return [], []
        for gone, kept in merged:
            self._merge(gone, kept)
        stamp = int(perception.stamp_ns)
        look = self._look(perception, stamp)
        events: list[ChangeEvent] = []
        renamed: list[tuple[int, int]] = []
        for obj_id in sorted(taken):
            track = tracks.get(obj_id)
            if track is None:
                continue
            record = self._established.get(obj_id)
            if record is not None:
                self._refresh(record, track)
                if obj_id in self._told:  # where a new or moved thing is, the map now knows better
                    self.log.place(self._told[obj_id], record.box)
            elif self._may_establish(track):
                self._establish(track, perception, events, renamed)
        if look is not None and perception.frame is not None:
            for obj_id, view in views.items():
                record = self._established.get(obj_id)
                if record is None or obj_id in taken or not self._clear_look(view, record, perception):
                    continue
                record.absent.add(look)
                if len(record.absent) >= self.config.removed_looks:
                    self._remove(obj_id, record, perception, events, renamed, tracks)
        for obj_id in forgotten:
            if obj_id in tracks:  # the id went to an object moved: it is that object's now
                continue
            if self._established.pop(obj_id, None) is not None:
                self.n_let_go += 1
            self._new.pop(obj_id, None)
            self._told.pop(obj_id, None)
        if look is not None and perception.frame is not None and self.config.max_views:
            self.views.add(perception.frame, look[0], look[1])
        self._expire(stamp)
        return events, renamed

    def _look(self, perception: FramePerception, stamp: int) -> Look | None:
        """The frame's look: its place (a cell of the floor, ``existence_place`` wide) and the start of the visit it
        belongs to (None without a viewpoint)."""
        cfg = self.memory_config
        place = place_of(perception.viewpoint, cfg.existence_place)
        if place is None:
            return None
        place = (place[0], place[1], 0)  # places on the floor: a camera that rises a few cm has not moved
        start = self._visits.get(place)
        if start is None or (cfg.existence_revisit_s > 0 and stamp - start > cfg.existence_revisit_s * 1e9):
            start = self._visits[place] = stamp
        return place, start

    def _may_establish(self, track: Track) -> bool:
        p = self.memory_config.publish_confidence
        if 0.0 < p < 1.0 and track.log_odds < math.log(p / (1.0 - p)):
            return False  # below the publish rule whatever its size and support (confidence <= logistic)
        if track.class_name == UNKNOWN_CLASS and _floor_places(track) < self.config.unknown_looks:
            return False  # what geometry alone found must have been found from more places to be believed
        return track.confidence >= p and class_key(track.class_name) not in self._static

    @staticmethod
    def _refresh(record: _Record, track: Track) -> None:
        """A detection of an established object: it is here; it stands where its box now says."""
        record.box, record.class_name, record.colours = track.box.copy(), track.class_name, track.colour
        record.last_seen_ns = track.last_ns
        record.absent.clear()

    def _establish(self, track: Track, perception: FramePerception, events: list[ChangeEvent],
                   renamed: list[tuple[int, int]]) -> None:
        record = self._established[track.id] = _Record.of(track)
        if self._twins(record, track.id):
            return  # a second object of the map for one it knows (a duplicate) is not new
        empty = self._empty_looks(track)
        if empty < self.config.move_new_looks:
            return  # seen there (or its place never seen clearly): it stood there all along
        half = self._match(record, self._removed, perception.stamp_ns)
        if half is not None:  # the place it left was seen empty already: it moved here
            self._removed.remove(half)
            new_id, old_id = track.id, half.object_id
            self._renumber(new_id, old_id)
            renamed.append((new_id, old_id))
            self._established[old_id] = self._established.pop(new_id)
            events.append(self._tell(ChangeKind.MOVED, old_id, record, perception, half.record.box,
                                     half.record.last_seen_ns, () if half.event is None else (half.event.seq,)))
            self._told[old_id] = events[-1].seq
            return
        if empty < self.config.new_looks:  # too little to tell it new alone; a removal of its kind makes it a move
            self._new[track.id] = _Half(None, record, track.id, int(perception.stamp_ns))
            return
        event = self._tell(ChangeKind.NEW, track.id, record, perception, None, 0)
        self._new[track.id] = _Half.told(event, record)
        self._told[track.id] = event.seq
        events.append(event)

    def _empty_looks(self, track: Track) -> int:
        """How many looks at the track's place before its first detection saw it empty (ViewStore), up to the first
        that saw it there."""
        points, tolerance = surface_samples(track)
        n, cfg = len(points), self.config
        verdicts: list[tuple[Look, bool]] = []
        for j in self.views.judge(points, tolerance, track.first_ns, max_depth=self.config.max_depth):
            if j.inside < 0.5 * n or j.hidden > 0.5 * j.inside:
                continue  # the view saw too little of the place to say anything
            if j.through >= cfg.through_fraction * j.inside and j.through >= cfg.through_over_seen * j.seen:
                verdicts.append((j.look, True))  # seen through, as a clear look at an empty place is
            elif j.seen >= THERE_SEEN * j.inside:
                verdicts.append((j.look, False))  # seen at its own depth: it stood there
            # else undecided (its lower part at the depth of what it stands on, the rest not seen through)
        empty: set[Look] = set()
        for look, is_empty in verdicts:  # oldest first, up to the first look that saw it there
            if not is_empty:
                break  # later looks may have seen it before a detector named it: they do not count
            empty.add(look)
        return len(empty)

    def _clear_look(self, view: Visibility, record: _Record, perception: FramePerception) -> bool:
        """Whether the frame saw the object's place clearly without it: at least half its points observed, most
        of those seen through, ``through_over_seen`` times as many as seen at their depth (where it met its support),
        at most half hidden (hidden points are not seen through), the place near enough and large enough in the
        image."""
        inside = view.seen + view.hidden + view.through  # its points the frame observed (in the image, with depth)
        if (inside < 0.5 * view.n or view.through < self.config.through_fraction * inside
                or view.through < self.config.through_over_seen * view.seen or view.hidden > 0.5 * inside):
            return False  # too little of its place in view, not clearly seen through, or mostly behind something
        frame = perception.frame
        T = frame.T_world_camera
        depth = float((record.box[:3] - T[:3, 3]) @ T[:3, 2])
        if not 0.1 < depth <= self.config.max_depth:
            return False
        return float(frame.K[0, 0]) * float(np.sort(record.box[3:6])[1]) / depth >= self.config.min_size_px

    def _remove(self, obj_id: int, record: _Record, perception: FramePerception, events: list[ChangeEvent],
                renamed: list[tuple[int, int]], tracks: dict[int, Track]) -> None:
        for gone in [obj_id, *self._twins(record, obj_id)]:  # the map's duplicates of it went with it
            del self._established[gone]
            self._new.pop(gone, None)
            self._told.pop(gone, None)
            if gone in tracks:
                self._drop(gone)
        half = self._match(record, list(self._new.values()), perception.stamp_ns)
        if half is not None:  # it was seen at its new place already: it moved there
            new_id = half.object_id
            del self._new[new_id]
            self._renumber(new_id, obj_id)
            renamed.append((new_id, obj_id))
            moved = self._established.pop(new_id, half.record)
            self._established[obj_id] = moved
            told = () if half.event is None else (half.event.seq,)
            events.append(self._tell(ChangeKind.MOVED, obj_id, moved, perception, record.box, record.last_seen_ns,
                                     told, colour_of=record))
            self._told.pop(new_id, None)
            self._told[obj_id] = events[-1].seq
            return
        event = self._tell(ChangeKind.REMOVED, obj_id, record, perception, record.box, record.last_seen_ns)
        self._removed.append(_Half.told(event, record))
        events.append(event)

    def _tell(self, kind: ChangeKind, obj_id: int, record: _Record, perception: FramePerception,
              old_box: np.ndarray | None, last_seen_ns: int, replaces: tuple[int, ...] = (),
              colour_of: _Record | None = None) -> ChangeEvent:
        new_box = None if kind is ChangeKind.REMOVED else record.box
        colour = (colour_of or record).colour or record.colour
        return self.log.add(kind, obj_id, record.class_name, colour, old_box, new_box, perception.stamp_ns,
                            perception.frame_index, last_seen_ns, replaces)

    def _twins(self, record: _Record, obj_id: int) -> list[int]:
        """Other established objects of the class of ``record`` standing where it stands (their middles within half
        the larger's largest extent): the map's duplicates of one thing (an object it failed to associate, a
        bottle lying at different yaws). One thing makes one change."""
        key = class_key(record.class_name)
        return [i for i, other in self._established.items() if i != obj_id and class_key(other.class_name) == key
                and np.linalg.norm(other.box[:3] - record.box[:3])
                < 0.5 * max(float(other.box[3:6].max()), float(record.box[3:6].max()))]

    # ---- moves --------------------------------------------------------------------------------------------

    def _match(self, record: _Record, halves: list[_Half], stamp_ns: int) -> _Half | None:
        """The told half (within the window) that is the same object as ``record``: best colour, then nearest."""
        best, best_key = None, None
        for half in halves:
            if abs(stamp_ns - half.stamp_ns) > self.config.move_window_s * 1e9:
                continue
            if not self._same_thing(record, half.record):
                continue
            key = (_colour_distance(record, half.record), float(np.linalg.norm(record.box[:3] - half.record.box[:3])))
            if best_key is None or key < best_key:
                best, best_key = half, key
        return best

    def _same_thing(self, a: _Record, b: _Record) -> bool:
        """One class; unknown objects: of like shape (sorted extents) and colour."""
        if class_key(a.class_name) != class_key(b.class_name):
            return False
        if a.class_name != UNKNOWN_CLASS:
            return True
        ea, eb = np.sort(a.box[3:6]), np.sort(b.box[3:6])
        if np.any(np.maximum(ea, eb) > self.config.shape_ratio * np.maximum(np.minimum(ea, eb), 1e-3)):
            return False
        return _colour_distance(a, b) <= self.config.colour_delta_e

    def _expire(self, stamp_ns: int) -> None:
        """Halves too old to become a move stay what they were told as."""
        window = self.config.move_window_s * 1e9
        self._removed = [h for h in self._removed if stamp_ns - h.stamp_ns <= window]
        self._new = {i: h for i, h in self._new.items() if stamp_ns - h.stamp_ns <= window}

    def _merge(self, gone: int, kept: int) -> None:
        """Two objects were one: the survivor carries what the changes knew of either."""
        record = self._established.pop(gone, None)
        if record is not None and kept not in self._established:
            self._established[kept] = record
        told = self._told.pop(gone, None)
        if told is not None and kept not in self._told:
            self._told[kept] = told
        half = self._new.pop(gone, None)
        if half is not None and kept not in self._new:
            half.object_id = kept
            self._new[kept] = half

    def latest_stamp_ns(self, objects: Any = ()) -> int:
        """The latest stamp the map knows of: its views', its events' and ``objects``' last sightings (0: none)."""
        stamps = [v.stamp_ns for v in self.views.views()] + [e.stamp_ns for e in self.log.events()]
        stamps += [int(o.last_seen_ns) for o in objects]
        return max(stamps, default=0)

    @property
    def kept(self) -> Container[int]:
        """Ids the memory must not forget on misses alone (``keep_believed``): the objects the map believed."""
        return self._established if self.config.enabled and self.config.keep_believed else ()

    @property
    def n_established(self) -> int:
        """Objects the changes watch: those the map believed (confident once) and has not let go."""
        return len(self._established)

    # ---- the memory's life --------------------------------------------------------------------------------

    def establish_all(self, tracks: dict[int, Track]) -> None:
        """Every confident object of ``tracks`` is established (a map just loaded: what the robot believed)."""
        for track in tracks.values():
            if self._may_establish(track):
                self._established[track.id] = _Record.of(track)

    def reset(self) -> None:
        """Forget the room (the memory was cleared); the history stays."""
        self._established.clear()
        self._removed.clear()
        self._new.clear()
        self._told.clear()
        self._visits.clear()
        self.views.clear()

    def to_dict(self) -> dict[str, Any]:
        return {"log": self.log.to_dict(), "views": self.views.to_dict()}

    def load(self, data: dict[str, Any] | None, tracks: dict[int, Track]) -> None:
        """Take the history and views of ``to_dict``'s form (None: none saved), establish the loaded objects,
        and mark the load (``ChangeLog.since(since_load=True)``)."""
        if data:
            self.log = ChangeLog.from_dict(data.get("log", {}), self.config.max_events)
            self.views = ViewStore.from_dict(data.get("views", {}))
            self.views.max_views = self.config.max_views
        self.establish_all(tracks)
        self.log.mark_loaded()


def _floor_places(track: Track) -> int:
    """Places on the floor from which the track was detected: existence's places (cells of camera positions, in
    3D) whose latest look detected it, one per floor cell (as ``ChangeTracker._look``: a camera that rises across
    a cell's edge has not moved), and those let go to bound memory."""
    evidence = track.existence
    return evidence.based_looks + len({place[:2] for place, look in evidence.places.items() if look.hits > 0})


def _colour_distance(a: _Record, b: _Record) -> float:
    """CIELAB Delta E of two records' colours; 0 when either was never seen in colour (no evidence against)."""
    if a.colour_lab is None or b.colour_lab is None:
        return 0.0
    return float(np.linalg.norm(np.subtract(a.colour_lab, b.colour_lab)))
