"""An object's existence evidence, counted in looks: what each place said of it, not how often.

A camera at 30 Hz sees a place ten times as often as one at 3 Hz, and a detector's recurring
mistake (a wooden tray taken for a sink from the counter side) recurs in every one of those frames.
Evidence is therefore kept per look: a place (a cell of camera positions) and a visit to it. What a
look says is the mean of its frames' evidence (a detection's strength, or a miss where the object was
in view and not detected, or a view through it), so a look holds one look's worth whatever the frame
rate, and a look in which a detector found the object once among thirty frames says little. The
object's log-odds is the prior plus what each place's latest look says. A look lasts a while
(``revisit_s``); a place that looks again after that, after a pause or after staring on, starts a new
look that replaces its old one: a robot circling a room for an hour keeps the map of one circle, and
a camera that stays put sees an object go.

What a frame's misses add (the objects in view that no detection took) is memory/misses.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

Place = tuple[int, int, int]



@dataclass
class Look:
    """One visit of a place: the sum of its frames' evidence, their number, the stamps of the first
    and the latest, and how many of them detected the object."""

    total: float
    frames: int
    stamp_ns: int
    hits: int = 0
    start_ns: int = 0

    @property
    def value(self) -> float:
        """What the look says: the mean evidence of its frames."""
        return self.total / self.frames if self.frames else 0.0


@dataclass
class ExistenceEvidence:
    """Log-odds that an object is really there: its prior plus its places' latest looks.

    Attributes:
        base: prior plus the looks of places let go to bound memory, and the evidence of
            perceptions without a viewpoint.
        places: place -> its latest look.
        based_looks: looks that detected the object among those let go to the base.
    """

    base: float = 0.0
    places: dict[Place, Look] = field(default_factory=dict)
    based_looks: int = 0

    @classmethod
    def starting_at(cls, log_odds: float) -> ExistenceEvidence:
        """Evidence of ``log_odds`` and nothing from any place yet (a prior, or a file without places)."""
        return cls(log_odds)

    @property
    def n_looks(self) -> int:
        """Independent looks that detected the object: places whose latest look did (and those let go)."""
        return self.based_looks + sum(look.hits > 0 for look in self.places.values())

    def log_odds(self, lo: float, hi: float) -> float:
        """The base plus every place's latest look, clamped to [lo, hi]."""
        return float(np.clip(self.base + sum(look.value for look in self.places.values()), lo, hi))

    def looks_again(self, place: Place | None, stamp_ns: int, revisit_s: float) -> bool:
        """Whether evidence from ``place`` now starts a new look there: its look began more than
        ``revisit_s`` seconds ago (0: never)."""
        last = self.places.get(place) if place is not None else None
        return revisit_s > 0 and last is not None and stamp_ns - last.start_ns > revisit_s * 1e9

    def add(self, value: float, place: Place | None, stamp_ns: int, revisit_s: float, max_places: int,
            lo: float, hi: float, hit: bool = False) -> None:
        """Add one frame's evidence seen from ``place`` (None: to the base, clamped to [lo, hi]) to the
        place's look, or start a new look that replaces the place's previous one (``looks_again``);
        ``hit``: the frame detected the object. Beyond ``max_places`` the place looked from longest
        ago joins the base."""
        if place is None:
            self.base = float(np.clip(self.base + value, lo, hi))
            return
        look = self.places.get(place)
        if look is None or self.looks_again(place, stamp_ns, revisit_s):
            look = self.places[place] = Look(0.0, 0, stamp_ns, 0, stamp_ns)
        look.total += value
        look.frames += 1
        look.hits += int(hit)
        look.stamp_ns = stamp_ns
        if len(self.places) > max_places:  # the place looked from longest ago becomes part of the base
            oldest = self.places.pop(min(self.places, key=lambda p: self.places[p].stamp_ns))
            self.base = float(np.clip(self.base + oldest.value, lo, hi))
            self.based_looks += int(oldest.hits > 0)

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "based_looks": self.based_looks,
                "places": [[*p, look.total, look.frames, look.stamp_ns, look.hits, look.start_ns]
                           for p, look in self.places.items()]}

    @classmethod
    def from_dict(cls, o: dict[str, Any]) -> ExistenceEvidence:
        """Read ``to_dict``'s form, or version 3's (a place's latest look as one value)."""
        places = {}
        for row in o.get("places", ()):
            if len(row) == 5:  # format 3: x, y, z, value, stamp
                x, y, z, v, t = row
                places[(int(x), int(y), int(z))] = Look(float(v), 1, int(t), int(v > 0), int(t))
            else:
                x, y, z, total, n, t, hits, start = row
                places[(int(x), int(y), int(z))] = Look(float(total), int(n), int(t), int(hits), int(start))
        return cls(float(o["base"]), places, int(o.get("based_looks", 0)))


def place_of(viewpoint: np.ndarray | None, edge: float) -> Place | None:
    """The place (cell of ``edge`` metres) of a camera position, or None without one (or edge 0)."""
    if viewpoint is None or edge <= 0:
        return None
    x, y, z = np.floor(np.asarray(viewpoint, dtype=np.float64).reshape(3) / edge).astype(np.int64)
    return int(x), int(y), int(z)
