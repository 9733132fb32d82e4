"""Change events (an object removed, new, or moved) and their history, as the robot is told of them.

Events are kept in the order they were made, numbered from 1 (``seq``, never reused by one history).
A move is found when its second half comes in (the place it left seen empty, or the place it went to
seen holding it); the half that came first was told already, as removed or new, and the move names it
in ``replaces``: the history then holds the move alone. ROS-free; the node publishes each event
(ros/change_publisher.py) and answers ``~/what_changed`` from :meth:`ChangeLog.since`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..geometry.boxes import BOX_DIM


class ChangeKind(str, enum.Enum):
    """What happened to an object."""

    REMOVED = "removed"
    """Its place was seen clearly without it, in looks; ``old_box`` is where it was."""
    NEW = "new"
    """It appeared where the map had seen free space or a surface before; ``new_box`` is where it is."""
    MOVED = "moved"
    """A removed and a new one of one class (or unnamed, of like shape and colour): both boxes, one id."""


@dataclass(frozen=True, eq=False)
class ChangeEvent:
    """One change of the room.

    Attributes:
        seq: number in the history, from 1.
        kind: removed, new or moved.
        object_id: the object's id (moved: the id it had and keeps at its new place).
        class_name: its class ("object" for an unknown object).
        colour: its colour word, or None.
        old_box: (9,) world box where it was (removed, moved), else None.
        new_box: (9,) world box where it is (new, moved), else None.
        stamp_ns: stamp of the frame that made the change certain.
        frame_index: that frame's index.
        last_seen_ns: when it was last detected at its old place (removed, moved; else 0).
        replaces: ``seq`` of the earlier events this one replaces (the removed or new half of a move).
    """

    seq: int
    kind: ChangeKind
    object_id: int
    class_name: str
    colour: str | None
    old_box: np.ndarray | None
    new_box: np.ndarray | None
    stamp_ns: int
    frame_index: int
    last_seen_ns: int = 0
    replaces: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ChangeKind(self.kind))
        for name in ("old_box", "new_box"):
            box = getattr(self, name)
            if box is not None:
                box = np.array(box, dtype=np.float64).reshape(BOX_DIM)
                box.setflags(write=False)
                object.__setattr__(self, name, box)

    @property
    def distance(self) -> float:
        """How far a moved object went (m, centre to centre; 0 for the other kinds)."""
        if self.old_box is None or self.new_box is None:
            return 0.0
        return float(np.linalg.norm(self.new_box[:3] - self.old_box[:3]))

    def summary(self) -> str:
        """One line: 'moved cup #3 (white) from (1.20, 0.40, 0.78) to (2.05, -0.31, 0.92), 1.1 m'."""
        what = f"{self.class_name} #{self.object_id}" + (f" ({self.colour})" if self.colour else "")

        def at(box: np.ndarray) -> str:
            return "(" + ", ".join(f"{c:.2f}" for c in box[:3]) + ")"

        if self.kind is ChangeKind.MOVED:
            return f"moved {what} from {at(self.old_box)} to {at(self.new_box)}, {self.distance:.1f} m"
        if self.kind is ChangeKind.REMOVED:
            return f"removed {what}, was at {at(self.old_box)}"
        return f"new {what} at {at(self.new_box)}"

    def to_dict(self) -> dict[str, Any]:
        def box(b: np.ndarray | None) -> list[float] | None:
            return None if b is None else [round(float(v), 5) for v in b]

        return {"seq": self.seq, "kind": self.kind.value, "id": self.object_id, "class": self.class_name,
                "colour": self.colour, "old_box": box(self.old_box), "new_box": box(self.new_box),
                "stamp_ns": self.stamp_ns, "frame_index": self.frame_index, "last_seen_ns": self.last_seen_ns,
                "replaces": list(self.replaces)}

    @classmethod
    def from_dict(cls, o: dict[str, Any]) -> ChangeEvent:
        return cls(int(o["seq"]), ChangeKind(o["kind"]), int(o["id"]), str(o["class"]), o.get("colour"),
                   o.get("old_box"), o.get("new_box"), int(o["stamp_ns"]), int(o.get("frame_index", -1)),
                   int(o.get("last_seen_ns", 0)), tuple(int(s) for s in o.get("replaces", ())))


class ChangeLog:
    """The history of change events, bounded (the oldest go first).

    Args:
        max_events: events kept.
    """

    def __init__(self, max_events: int = 1000) -> None:
        self.max_events = int(max_events)
        self._events: list[ChangeEvent] = []
        self._seq = 0
        self._replaced: set[int] = set()
        self.loaded_after = 0  # seq of the last event before the map was loaded: "since the map" is after it

    def __len__(self) -> int:
        return len(self.current())

    def add(self, kind: ChangeKind, object_id: int, class_name: str, colour: str | None, old_box: Any, new_box: Any,
            stamp_ns: int, frame_index: int, last_seen_ns: int = 0, replaces: tuple[int, ...] = ()) -> ChangeEvent:
        """Record a new event (numbered next) and return it."""
        self._seq += 1
        event = ChangeEvent(self._seq, kind, int(object_id), class_name, colour, old_box, new_box, int(stamp_ns),
                            int(frame_index), int(last_seen_ns), tuple(replaces))
        self._events.append(event)
        self._replaced.update(replaces)
        del self._events[:-self.max_events]
        return event

    def place(self, seq: int, new_box: np.ndarray) -> None:
        """The thing of event ``seq`` (new or moved) stands at ``new_box``: the map knows its box better now than
        when the event was told (more views of it). The event keeps its number, stamp and old box."""
        for k, event in enumerate(self._events):
            if event.seq == seq and event.new_box is not None:
                self._events[k] = replace(event, new_box=new_box)
                return

    def events(self) -> list[ChangeEvent]:
        """Every event kept, replaced ones included, in order."""
        return list(self._events)

    def current(self) -> list[ChangeEvent]:
        """The events no later one replaces, in order: what changed."""
        return [e for e in self._events if e.seq not in self._replaced]

    def since(self, stamp_ns: int | None = None, since_load: bool = False) -> list[ChangeEvent]:
        """The current events made at or after ``stamp_ns`` (None: all), or after the map was loaded."""
        return [e for e in self.current() if (stamp_ns is None or e.stamp_ns >= stamp_ns)
                and (not since_load or e.seq > self.loaded_after)]

    def mark_loaded(self) -> None:
        """The map was loaded now: ``since(since_load=True)`` is what comes after."""
        self.loaded_after = self._seq

    def clear(self) -> None:
        """Forget the events; numbers keep counting."""
        self._events.clear()
        self._replaced.clear()
        self.loaded_after = self._seq

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self._seq, "loaded_after": self.loaded_after, "events": [e.to_dict() for e in self._events]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], max_events: int = 1000) -> ChangeLog:
        log = cls(max_events)
        log._events = [ChangeEvent.from_dict(o) for o in data.get("events", ())]
        log._seq = max(int(data.get("seq", 0)), max((e.seq for e in log._events), default=0))
        log._replaced = {s for e in log._events for s in e.replaces}
        log.loaded_after = int(data.get("loaded_after", 0))
        return log
