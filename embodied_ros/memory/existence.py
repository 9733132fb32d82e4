"""An object's existence evidence, kept per place the camera looked at it from.

A detector's answer from one place repeats when the robot comes back: a wooden tray taken for a
sink is taken for one on every pass, so evidence summed over passes makes it certain in the end.
The evidence is therefore kept per place (a cell of camera positions), and a place that looks
again after a pause replaces what it said before instead of adding to it: a robot circling a
room for an hour keeps the map of one circle. Within one look evidence adds up, so a camera that
stays put still sees an object go. The plain sum over all looks is kept too: an object that every
look misses again falls in it without bound, so the memory can let it go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

Place = tuple[int, int, int]


@dataclass
class ExistenceEvidence:
    """Log-odds that an object is really there, as the sum of its places' latest looks.

    Attributes:
        base: prior plus the evidence of places let go to bound memory, and of perceptions
            without a viewpoint.
        places: place -> (evidence of its latest look, stamp in ns of its latest evidence).
        total: all evidence ever added, plainly summed (clamped like the log-odds).
    """

    base: float = 0.0
    places: dict[Place, tuple[float, int]] = field(default_factory=dict)
    total: float = 0.0

    @classmethod
    def starting_at(cls, log_odds: float) -> ExistenceEvidence:
        """Evidence of ``log_odds`` and nothing from any place yet (a prior, or a file without places)."""
        return cls(log_odds, {}, log_odds)

    def log_odds(self, lo: float, hi: float) -> float:
        """The base plus every place's latest look, clamped to [lo, hi]."""
        return float(np.clip(self.base + sum(v for v, _ in self.places.values()), lo, hi))

    def looks_again(self, place: Place | None, stamp_ns: int, revisit_s: float) -> bool:
        """Whether evidence from ``place`` now starts a new look there: it gave evidence before, more
        than ``revisit_s`` seconds ago (0: never)."""
        last = self.places.get(place) if place is not None else None
        return revisit_s > 0 and last is not None and stamp_ns - last[1] > revisit_s * 1e9

    def add(self, value: float, place: Place | None, stamp_ns: int, revisit_s: float, max_places: int,
            lo: float, hi: float) -> None:
        """Add one frame's evidence seen from ``place`` (None: to the base), replacing the place's
        previous look if this starts a new one (``looks_again``); ``lo``, ``hi`` clamp each look
        as they clamp the total. Beyond ``max_places`` the place looked from longest ago joins the base."""
        self.total = float(np.clip(self.total + value, lo, hi))
        if place is None:
            self.base = float(np.clip(self.base + value, lo, hi))
            return
        previous = 0.0 if self.looks_again(place, stamp_ns, revisit_s) else self.places.get(place, (0.0, 0))[0]
        self.places[place] = (float(np.clip(previous + value, lo, hi)), stamp_ns)
        if len(self.places) > max_places:  # the place looked from longest ago becomes part of the base
            oldest = min(self.places, key=lambda p: self.places[p][1])
            self.base = float(np.clip(self.base + self.places.pop(oldest)[0], lo, hi))

    def to_dict(self) -> dict[str, Any]:
        return {"base": self.base, "places": [[*p, v, t] for p, (v, t) in self.places.items()], "total": self.total}

    @classmethod
    def from_dict(cls, o: dict[str, Any]) -> ExistenceEvidence:
        places = {(int(x), int(y), int(z)): (float(v), int(t)) for x, y, z, v, t in o.get("places", ())}
        return cls(float(o["base"]), places, float(o.get("total", o["base"])))


def place_of(viewpoint: np.ndarray | None, edge: float) -> Place | None:
    """The place (cell of ``edge`` metres) of a camera position, or None without one (or edge 0)."""
    if viewpoint is None or edge <= 0:
        return None
    x, y, z = np.floor(np.asarray(viewpoint, dtype=np.float64).reshape(3) / edge).astype(np.int64)
    return int(x), int(y), int(z)
