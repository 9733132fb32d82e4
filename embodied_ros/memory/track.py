"""The scene memory's mutable state of one object, and its JSON form."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..geometry.boxes import BOX_DIM
from .box_fusion import fuse_boxes
from .class_shapes import plausible_size, plausible_support
from .config import MemoryConfig, ScoreMode
from .discovery import UNKNOWN_CLASS
from .existence import ExistenceEvidence, Place
from .extent_fusion import LookSupport
from .object_colour import ColourAccumulator, ColourSample, colour_name
from .object_geometry import ObjectGeometry
from .scene_object import SceneObject
from .settling import BoxSettling, LookKey

IMPLAUSIBLE_CONFIDENCE = 0.1  # a 40 cm "cup" is not a cup, however often it was called one
COMPATIBLE_SHARE = 0.25
MAX_RECESSES = 32  # the latest detections' recesses kept


@dataclass
class Track:
    """One object inside the memory (mutated under the memory's lock only, through its methods).

    Attributes:
        id: stable id.
        box: (9,) current world box.
        weight: accumulated fusion weight of box fusion (objects without geometry).
        score: the object's score (ScoreMode).
        evidence: class name -> sum of the scores of its detections (the class posterior's mass).
        class_name: the class with most evidence.
        n_obs: detections fused in (one per frame at most).
        first_frame, last_frame, first_ns, last_ns: first and latest detection.
        log_odds: existence evidence (natural-log odds that the object is really there):
            ``existence``'s base plus its places' latest looks, clamped.
        n_missed: frames in which it was in view, not hidden, and not detected.
        n_cut: detections whose image region touched the image's edge (the object may go on).
        seen_from: (2,) score-weighted sum of unit directions towards its viewpoints.
        geometry: the voxels its detections covered, or None (a network's boxes without points).
        colour: its pixels' colour over all views (memory.object_colour).
        existence: the evidence behind ``log_odds``, per place it was looked at from.
        recesses: of its latest detections, how far (m) the middle of its points lay below the
            surface around it (memory.class_shapes.plausible_support).
        settling: which of its boxes the map shows, agreed by two looks (memory/settling.py).
        support: per voxel of its geometry, the looks that covered it (memory/extent_fusion.py).
        looks_agree: its latest fit took only voxels that several looks covered (its box is agreed by
            looks, voxel by voxel: memory/settling.py shows it at once).
    """

    id: int
    box: np.ndarray
    weight: float
    score: float
    evidence: dict[str, float]
    class_name: str
    n_obs: int
    first_frame: int
    last_frame: int
    first_ns: int
    last_ns: int
    log_odds: float = 0.0
    n_missed: int = 0
    n_cut: int = 0
    seen_from: np.ndarray = field(default_factory=lambda: np.zeros(2))
    geometry: ObjectGeometry | None = None
    colour: ColourAccumulator = field(default_factory=ColourAccumulator)
    existence: ExistenceEvidence = field(default_factory=ExistenceEvidence)
    recesses: list[float] = field(default_factory=list)
    settling: BoxSettling = field(default_factory=BoxSettling)
    support: LookSupport = field(default_factory=LookSupport)
    looks_agree: bool = False
    cached: SceneObject | None = field(default=None, repr=False)

    @property
    def confidence(self) -> float:
        """Probability that the object exists as its class: from its log-odds, and at most
        ``IMPLAUSIBLE_CONFIDENCE`` when its box has a size its class cannot have, or it sits where its
        class cannot (a "sink" standing on the counter)."""
        p = float(1.0 / (1.0 + np.exp(-self.log_odds)))
        if plausible_size(self.box, self.class_name) and plausible_support(self.class_name, self.recesses):
            return p
        return min(p, IMPLAUSIBLE_CONFIDENCE)

    def place_box(self, box: np.ndarray) -> None:
        """Set the (9,) world box (a refit, or a turn of its front)."""
        self.box = box
        self.cached = None

    def fuse_detection(self, box: np.ndarray, score: float, name: str, cut: bool, frame_index: int, stamp_ns: int,
                       config: MemoryConfig) -> None:
        """Take in one detection's box, score and class (its evidence, points and views are added apart)."""
        self.box = fuse_boxes(self.box, self.weight, box, score)
        self.weight = min(self.weight + score, config.max_fusion_weight)
        if config.score_mode is ScoreMode.MAX:
            self.score = max(self.score, score)
        else:
            self.score = (1.0 - config.score_ema) * self.score + config.score_ema * score
        self.evidence[name] = self.evidence.get(name, 0.0) + score
        if self.evidence[name] > self.evidence[self.class_name]:
            self.class_name = name
        self.n_obs += 1
        self.n_cut += int(cut)
        self.last_frame, self.last_ns = int(frame_index), int(stamp_ns)
        self.cached = None

    def absorb(self, gone: Track, config: MemoryConfig) -> None:
        """Take in everything of a duplicate ``gone`` (it is this object too); the box is refitted apart."""
        keep = self
        keep.box = fuse_boxes(keep.box, keep.weight, gone.box, gone.weight)
        if config.score_mode is ScoreMode.MAX:
            keep.score = max(keep.score, gone.score)
        else:
            keep.score = (keep.weight * keep.score + gone.weight * gone.score) / (keep.weight + gone.weight)
        keep.weight = min(keep.weight + gone.weight, config.max_fusion_weight)
        for name, ev in gone.evidence.items():
            keep.evidence[name] = keep.evidence.get(name, 0.0) + ev
        keep.class_name = max(keep.evidence, key=lambda n: (keep.evidence[n], n == keep.class_name))
        keep.n_obs += gone.n_obs
        keep.n_cut += gone.n_cut
        if gone.log_odds > keep.log_odds:  # two fragments saw mostly the same frames: the surer one's evidence
            keep.log_odds, keep.existence = gone.log_odds, gone.existence
        keep.n_missed = min(keep.n_missed, gone.n_missed)
        keep.seen_from = keep.seen_from + gone.seen_from
        for r in gone.recesses:
            keep.add_recess(r)
        keep.colour.merge(gone.colour)
        keep.settling.absorb(gone.settling)
        keep.support.merge(gone.support)
        if gone.geometry is not None:
            if keep.geometry is None:
                keep.geometry = gone.geometry
            else:
                keep.geometry.merge(gone.geometry)
        if gone.first_frame < keep.first_frame:
            keep.first_frame, keep.first_ns = gone.first_frame, gone.first_ns
        if gone.last_frame > keep.last_frame:
            keep.last_frame, keep.last_ns = gone.last_frame, gone.last_ns
        keep.cached = None

    def take_id_of(self, other: Track) -> None:
        """Become ``other`` (an older object this one is): its id, and the earlier first sighting."""
        self.id = other.id
        self.first_frame, self.first_ns = min((self.first_frame, self.first_ns), (other.first_frame, other.first_ns))
        self.cached = None

    def add_evidence(self, value: float, place: Place | None, stamp_ns: int, config: MemoryConfig,
                     hit: bool = False) -> None:
        """Add one frame's existence evidence, in the place the frame looked from."""
        self.existence.add(value, place, int(stamp_ns), config.existence_revisit_s, config.existence_max_places,
                           config.existence_min, config.existence_max, hit)
        self.log_odds = self.existence.log_odds(config.existence_min, config.existence_max)
        self.cached = None

    def settle(self, look: LookKey | None, config: MemoryConfig) -> None:
        """Compare its box, after an update from ``look``, with the box the look before left
        (memory/settling.py); without ``config.settle_boxes`` every box is shown as it is."""
        self.settling.observe(self.box, look if config.settle_boxes else None, config.settle_relative,
                              config.settle_absolute, self.looks_agree)
        self.cached = None

    def refit_settled(self, config: MemoryConfig, shown: np.ndarray | None = None) -> None:
        """Its box changed with the whole map (the floor moved): a settled box moves with it, and a pending
        change keeps ``shown`` (the shown box completed to the new floor) shown meanwhile."""
        self.settling.refit(self.box, shown)
        self.follow_publication(config)

    def follow_publication(self, config: MemoryConfig) -> None:
        """Whether it is on the map, after its confidence or box changed (BoxSettling.follow). An unknown
        object appears at the bar itself: discovery's evidence is the geometry's, not a detector's score
        hovering near the bar, and a second look from another place is what makes it sure."""
        bar = config.publish_confidence
        margin = 0.0 if self.class_name == UNKNOWN_CLASS else config.appear_margin
        self.settling.follow(self.confidence, min(1.0, bar + margin) if bar > 0 else 0.0, bar)
        self.cached = None

    def add_miss(self) -> None:
        """Count a frame in which it was in view, not hidden, and not detected."""
        self.n_missed += 1

    def add_view(self, direction: np.ndarray) -> None:
        """Add a (2,) score-weighted unit direction towards a viewpoint to ``seen_from``."""
        self.seen_from = self.seen_from + direction

    def wants_colour(self) -> bool:
        """Whether the view of its latest sighting is worth sampling for its colour (memory.object_colour)."""
        return self.colour.wants_sample(self.n_obs)

    def add_colour(self, sample: ColourSample | None, weight: float) -> None:
        """Add one view's colour sample with ``weight`` (the detection's score)."""
        self.colour.add(sample, weight)

    def grown_geometry(self, voxel_size: float, max_voxels: int) -> ObjectGeometry:
        """Its geometry, started empty when it has none yet."""
        if self.geometry is None:
            self.geometry = ObjectGeometry(voxel_size, max_voxels)
        return self.geometry

    def add_recess(self, recess: float) -> None:
        """Keep a detection's recess (``recesses``), when it was measured."""
        if np.isfinite(recess):
            self.recesses.append(float(recess))
            del self.recesses[:-MAX_RECESSES]

    def compatible(self, class_name: str) -> bool:
        """Whether something of ``class_name`` may be this object beyond box overlap: it is the
        object's class, or one that holds at least ``COMPATIBLE_SHARE`` of its class evidence
        (a table that once took in a chair's detection is not a chair)."""
        if class_name == self.class_name:
            return True
        total = sum(self.evidence.values())
        return total > 0 and self.evidence.get(class_name, 0.0) >= COMPATIBLE_SHARE * total

    def to_object(self) -> SceneObject:
        """The immutable view (cached until the track changes)."""
        if self.cached is None:
            evidence = tuple(sorted(((n, float(v)) for n, v in self.evidence.items()), key=lambda p: (-p[1], p[0])))
            lab = self.colour.lab()
            shown = self.settling.shown
            self.cached = SceneObject(
                self.id, self.class_name, float(self.score), (self.box if shown is None else shown).copy(), evidence,
                self.n_obs, self.first_frame, self.last_frame, self.first_ns, self.last_ns, confidence=self.confidence,
                colour_lab=lab, colour_name=colour_name(lab), n_looks=max(1, self.existence.n_looks),
                box_state=self.settling.state, appeared=self.settling.appeared,
            )
        return self.cached

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "class_name": self.class_name, "score": self.score,
            "box": [float(v) for v in self.box], "class_scores": dict(self.evidence),
            "n_observations": self.n_obs, "first_seen_frame": self.first_frame,
            "last_seen_frame": self.last_frame, "first_seen_ns": self.first_ns,
            "last_seen_ns": self.last_ns, "fusion_weight": self.weight,
            "seen_from": [float(v) for v in self.seen_from], "log_odds": self.log_odds,
            "n_missed": self.n_missed, "n_cut": self.n_cut, "confidence": self.confidence,
            "geometry": None if self.geometry is None else self.geometry.to_dict(),
            "colour": self.colour.to_json(),
            "existence": self.existence.to_dict(), "recesses": list(self.recesses),
            "settling": self.settling.to_dict(), "support": self.support.to_dict(),
        }

    @classmethod
    def from_dict(cls, o: dict[str, Any], default_log_odds: float) -> Track:
        """Read ``to_dict``'s form; files without existence evidence get ``default_log_odds``, and files
        from before settling show each box as it was (it was published so)."""
        geometry = o.get("geometry")
        settling, support = o.get("settling"), o.get("support")
        log_odds = float(o.get("log_odds", default_log_odds))
        existence = o.get("existence")
        return cls(
            int(o["id"]), np.array(o["box"], dtype=np.float64).reshape(BOX_DIM), float(o["fusion_weight"]),
            float(o["score"]), {str(k): float(v) for k, v in o["class_scores"].items()},
            str(o["class_name"]), int(o["n_observations"]), int(o["first_seen_frame"]),
            int(o["last_seen_frame"]), int(o["first_seen_ns"]), int(o["last_seen_ns"]),
            log_odds, int(o.get("n_missed", 0)), int(o.get("n_cut", 0)),
            np.array(o.get("seen_from", (0.0, 0.0)), dtype=np.float64).reshape(2),
            None if geometry is None else ObjectGeometry.from_dict(geometry),
            ColourAccumulator.from_json(o.get("colour")),
            ExistenceEvidence.starting_at(log_odds) if existence is None else ExistenceEvidence.from_dict(existence),
            [float(r) for r in o.get("recesses", ())],
            BoxSettling.settled_at(o["box"]) if settling is None else BoxSettling.from_dict(settling),
            LookSupport() if support is None else LookSupport.from_dict(support),
        )


def confident(tracks: Iterable[Track], least: float) -> list[Track]:
    """The tracks of confidence at least ``least``, in order (``sure``)."""
    return [t for t in tracks if sure(t, least)]


def sure(track: Track, least: float) -> bool:
    """Whether a track's confidence is at least ``least``. Its log-odds bound its confidence from above and cost
    nothing to compare; its confidence (checks of its box and class) is asked only when they allow it."""
    floor = math.log(least / (1.0 - least)) - 1e-6 if 0.0 < least < 1.0 else -math.inf
    return track.log_odds >= floor and track.confidence >= least
