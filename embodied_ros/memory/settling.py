"""When an object's box has settled: its extent agrees across looks, so one look cannot make it jump.

An object's box is fitted to everything its detections covered (memory/object_geometry.py), so one
frame's bad lift (a partial view, the table around a cup, the neighbour a detection also covered) moves
it at once, and a merge of two neighbours doubles it. A robot acting on the map while it is built would
act on that box. So the map shows a box only once a look other than the one that made it agrees with it:

* per object, the box as the latest look left it is kept (a look: a place and a visit to it, as the
  existence evidence counts them, memory/existence.py; the same at any frame rate);
* whenever the object is updated, its box is compared with the box of the look before the current one:
  when they agree (``boxes_agree``: every corner of each within a tolerance of the other, the tolerance
  a share of the extent along that axis and never below a little more than a voxel), the box has settled,
  and it becomes the box the map shows; so has a box fitted only to voxels that two looks covered
  (memory/extent_fusion.py), which two looks agree on voxel by voxel;
* a box that has not settled since it changed is not shown: the map keeps showing the last settled box
  (its object is "growing": ``BoxState.GROWING``) until another look confirms the new extent; an object
  whose box never settled is not published at all (``BoxState.UNSETTLED``): a one-look detection, however
  strong, waits for a second look that agrees.

Growth therefore needs the support of two looks, and so does a shrink: a box that one look doubled stays
what it was, and a one-look false object is never shown.

An object appears on the map when it is sure enough to act on (``publish_confidence`` plus
``appear_margin``) and its box has settled and not changed since (a wall monitor seen in parts, sure only
once its box grew, would otherwise appear with the part's old box), and it stays until its confidence falls below
``publish_confidence``: an object near the bar does not flicker in and out with each look, and what
appears is rarely retracted.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..geometry.boxes import BOX_DIM, box_corners, box_rotations
from .config import MemoryConfig
from .existence import place_of

if TYPE_CHECKING:
    from .track import Track

LookKey = tuple[int, ...]


class BoxState(str, enum.Enum):
    """How far an object's box has settled (the map publishes SETTLED and GROWING objects)."""

    UNSETTLED = "unsettled"
    """No two looks have agreed on its box yet: not published."""
    GROWING = "growing"
    """A settled box is shown, and the object's box has changed since; the change awaits another look."""
    SETTLED = "settled"
    """The box shown is the object's box, agreed by two looks."""


def boxes_agree(a: np.ndarray, b: np.ndarray, relative: float, absolute: float) -> bool:
    """Whether two (9,) boxes describe the same extent: every corner of each lies within the other grown,
    along each of its axes, by ``max(relative * extent, absolute)`` metres."""
    for inner, outer in ((a, b), (b, a)):
        R = box_rotations(outer[None])[0]
        local = (box_corners(inner[None])[0] - outer[:3]) @ R  # (8, 3) corners in the outer box's axes
        limit = 0.5 * outer[3:6] + np.maximum(relative * outer[3:6], absolute)
        if np.any(np.abs(local) > limit):
            return False
    return True


@dataclass
class BoxSettling:
    """One object's settling state (mutated under the memory's lock, through Track).

    Attributes:
        shown: (9,) the box the map shows (the latest settled one), or None before any settled.
        look: the look the object's latest update came from.
        look_box: (9,) the object's box as that look leaves it (so far).
        previous: (9,) the box as the look before it left it, or None.
        pending: the object's box differs from ``shown`` (a change awaits another look).
        appeared: the object appeared on the map and was not retracted since (``follow``).
    """

    shown: np.ndarray | None = None
    look: LookKey | None = None
    look_box: np.ndarray | None = None
    previous: np.ndarray | None = None
    pending: bool = False
    appeared: bool = False

    @classmethod
    def settled_at(cls, box: np.ndarray) -> BoxSettling:
        """A state whose box has settled already (a map saved before settling was kept)."""
        box = np.array(box, dtype=np.float64).reshape(BOX_DIM)
        return cls(shown=box, look_box=box.copy(), appeared=True)

    @property
    def state(self) -> BoxState:
        if self.shown is None:
            return BoxState.UNSETTLED
        return BoxState.GROWING if self.pending else BoxState.SETTLED

    def observe(self, box: np.ndarray, look: LookKey | None, relative: float, absolute: float,
                agreed: bool = False) -> None:
        """The object's box after an update that came from ``look``. None: the looks are not known (no
        viewpoint, or evidence kept in one sum), so nothing can confirm the box: it is shown as it is.
        ``agreed``: the box was fitted to voxels several looks covered (memory/extent_fusion.py), so
        looks agree on it already."""
        box = np.array(box, dtype=np.float64).reshape(BOX_DIM)
        if look is None:
            self.shown, self.look_box, self.pending = box.copy(), box, False
            return
        if look != self.look:  # a new look: the box the last one left is what this one is compared with
            if self.look_box is not None:
                self.previous = self.look_box
            self.look = look
        self.look_box = box
        if agreed or (self.previous is not None and boxes_agree(box, self.previous, relative, absolute)):
            self.shown = box.copy()
        self.pending = self.shown is None or not boxes_agree(box, self.shown, relative, absolute)

    def refit(self, box: np.ndarray, shown: np.ndarray | None = None) -> None:
        """The box changed without a look, by a change of the whole map (the floor estimate moved, and
        furniture is completed down to the new floor): a settled box moves with it; a pending change
        still awaits its look, and the map shows ``shown`` meanwhile (the shown box, completed down to
        the new floor) when given."""
        box = np.array(box, dtype=np.float64).reshape(BOX_DIM)
        self.look_box = box
        if self.shown is not None and not self.pending:
            self.shown, self.previous = box.copy(), box.copy()
        elif self.shown is not None and shown is not None:
            self.shown = np.array(shown, dtype=np.float64).reshape(BOX_DIM)

    def absorb(self, gone: BoxSettling) -> None:
        """Take in a duplicate's state: when this object had no settled box and the duplicate had one, the
        map keeps showing the duplicate's (a published object is not retracted because an older fragment
        of it took it in); the merged box is then pending until a look confirms it."""
        if self.shown is None and gone.shown is not None:
            self.shown = gone.shown.copy()
        self.appeared |= gone.appeared
        self.pending = True

    def follow(self, confidence: float, appear: float, retract: float) -> None:
        """Whether the object is on the map: it appears once ``confidence`` reaches ``appear`` with a
        settled box that no pending change has outgrown, and is retracted when it falls below ``retract``."""
        if confidence < retract:
            self.appeared = False
        elif confidence >= appear and self.shown is not None and not self.pending:
            self.appeared = True

    def to_dict(self) -> dict[str, Any]:
        def arr(v: np.ndarray | None) -> list[float] | None:
            return None if v is None else [float(x) for x in v]

        return {"shown": arr(self.shown), "look": None if self.look is None else list(self.look),
                "look_box": arr(self.look_box), "previous": arr(self.previous), "pending": self.pending,
                "appeared": self.appeared}

    @classmethod
    def from_dict(cls, o: dict[str, Any]) -> BoxSettling:
        def arr(v: list[float] | None) -> np.ndarray | None:
            return None if v is None else np.array(v, dtype=np.float64).reshape(BOX_DIM)

        look = o.get("look")
        return cls(arr(o.get("shown")), None if look is None else tuple(int(v) for v in look),
                   arr(o.get("look_box")), arr(o.get("previous")), bool(o.get("pending", False)),
                   bool(o.get("appeared", False)))


def look_of(track: Track, viewpoint: np.ndarray | None, config: MemoryConfig) -> LookKey | None:
    """The look of the object's evidence from ``viewpoint`` (its place and when its visit there began),
    or None when looks are not known (no viewpoint, or ``existence_place`` 0)."""
    place = place_of(viewpoint, config.existence_place)
    look = track.existence.places.get(place) if place is not None else None
    return None if look is None else (*place, int(look.start_ns))


def settle_tracks(tracks: dict[int, Track], changed: Iterable[int], missed: Iterable[int],
                  viewpoint: np.ndarray | None, config: MemoryConfig) -> None:
    """After a frame's update: compare the box of each object it changed (``changed``; merged or forgotten
    ones are skipped) with the box the look before left (``BoxSettling.observe``), and follow whether the
    objects it changed or found missing are on the map (``BoxSettling.follow``)."""
    changed = set(changed)
    for obj_id in sorted(changed | set(missed)):
        track = tracks.get(obj_id)
        if track is None:
            continue
        if obj_id in changed:
            track.settle(look_of(track, viewpoint, config), config)
        track.follow_publication(config)
