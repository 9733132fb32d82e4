"""Configuration of the scene memory (objects); the occupancy map's is occupancy/config.py."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import ConfigError


class ScoreMode(str, enum.Enum):
    """How an object's score combines the scores of the detections fused into it."""

    MAX = "max"
    """Running maximum: the object is as confident as its best sighting (the reference demo
    filters each frame's result alone, so its shown score is a single detection's score)."""
    EMA = "ema"
    """Exponential moving average with weight ``score_ema`` on the newest sighting: an object
    whose detections become weak loses rank in ``published_objects``."""


@dataclass(frozen=True)
class MemoryConfig:
    """Parameters of :class:`embodied_ros.memory.scene_memory.SceneMemory`."""

    # Detections with a score below this are dropped before association (the demo's 0.075).
    score_threshold: float = 0.075
    # Exact 9-DoF IoU strictly above this makes a detection the same object (the demo's 0.15).
    iou_threshold: float = 0.15
    # At most this many objects per class in published_objects(), highest score first (demo: 10).
    max_per_class: int = 10
    # Also the same object: same class and the intersection covers more than this fraction of
    # the smaller box. Lifted boxes of thin or partly seen objects (a monitor's bezel, half a
    # table) shift by more than their thickness between views, so their IoU stays below 0.15;
    # containment still joins them. 1.0 disables it (IoU only, as in the demo).
    containment_threshold: float = 0.5
    # Objects detected fewer times than this are kept and fused but not published. 1: the existence
    # evidence alone decides (publish_confidence), as it counts looks, not frames; a frame count would
    # publish at 30 Hz what it withholds from the same walk's five keyframes.
    min_observations: int = 1
    # True: associate and merge regardless of class (the demo's class-agnostic suppression);
    # False: only objects whose class equals the detection's class can match or merge.
    class_agnostic: bool = True
    # How an object's score combines its detections' scores (see ScoreMode).
    score_mode: ScoreMode = ScoreMode.MAX
    # Weight of the newest sighting in ScoreMode.EMA, in (0, 1].
    score_ema: float = 0.3
    # Cap on an object's accumulated fusion weight (sum of fused scores). Below the cap the box
    # is the exact score-weighted mean of its sightings; above it new sightings keep a weight of
    # at least score / cap, so a box first seen partially can still grow to the whole object.
    max_fusion_weight: float = 20.0
    # Edge of a spatial-index cell in metres (about one object; see spatial_index.py).
    cell_size: float = 1.0
    # Turn each object's front (local -y, the side "in front of" refers to) towards the mean
    # horizontal direction it was seen from (score-weighted, from the perceptions' viewpoints).
    # Detectors whose box loss ignores box symmetries cannot tell front from back; a robot sees
    # furniture mostly from its open side. False keeps the fused boxes' own parametrisation.
    front_from_views: bool = True
    # With front_from_views: furniture whose front is across its depth (classes.SHORT_FRONT:
    # sofas, cabinets, shelves, monitors, doors, windows) turns only between the two sides along
    # its shorter horizontal extent, beds (LONG_FRONT) along the longer; seen from the side, the
    # views alone would give it a side for a front.
    front_from_shape: bool = True

    # --- Objects keep their own geometry (memory/object_geometry.py) when detections carry points.
    # Voxel edge (m) of an object's geometry; 0 turns geometry off (boxes are fused as boxes).
    geometry_voxel: float = 0.03
    # Bound on the voxels one object keeps (those covered by the fewest frames go first).
    geometry_max_voxels: int = 6000
    # From this many observations on, an object's box is fitted to the voxels covered in at least
    # two frames: a stray cluster of one view (a wall behind a monitor) does not stretch it.
    geometry_min_count_after: int = 4
    # An object's own voxels are those its detections covered in at least this fraction of the
    # frames that saw them while detecting it; the rest is what surrounded it in 2D boxes.
    geometry_min_ratio: float = 0.5
    # A detection's points within support_band (m) of the height of the surface around it (the table
    # a cup stands on) are that surface, not the object, when at least support_above of its points
    # rise above the band: a view from above leaks the table around the cup into its 2D box. A flat
    # thing lies within the band and keeps its points; 0 turns it off.
    support_band: float = 0.015
    support_above: float = 0.5
    # A detection of a class the object was seen as is that object when at least this fraction of
    # its voxels lies within one voxel of the object's geometry (views of one object that share
    # little box volume still share surface).
    geometry_match: float = 0.3
    # Two objects of one class merge when at least this fraction of the smaller one's voxels are
    # also the other's (two views of one part).
    geometry_merge: float = 0.2
    # ... or when at least this fraction lies within one voxel of the other's and most views of
    # each were cut by the image's edge (a table seen in halves; two whole books side by side stay two).
    geometry_touch: float = 0.05
    # A detection of a class the object was seen as is that object when its 2D box and the
    # object's seen region in this image (its surface points that the frame's depth confirms)
    # have at least this IoU. 1.0 turns it off.
    image_match: float = 0.5
    # Complete objects from the seen part with class shape priors (memory/amodal.py): furniture
    # down to the floor, least footprints.
    amodal: bool = True

    # --- Existence as evidence both ways, in log-odds (memory/visibility.py decides what is in view),
    # counted in looks (memory/existence.py): a look is a place (existence_place) and a visit to it
    # (existence_revisit_s), and says the mean of its frames' evidence, so a 30 Hz stream and a 3 Hz
    # one of the same walk give the same evidence.
    # Log-odds of an object at its first detection, before that detection's own evidence.
    existence_prior: float = 0.0
    # Evidence of one detection seen whole (its image region clear of the image's edge): this * its
    # score. 1.7: one look of a whole object at 0.5, the usual operating point of a COCO detector, is
    # enough to publish it (1.7 * 0.5 = logit(0.7)); a five-frame recording shows the table it holds.
    existence_hit_whole: float = 1.7
    # Evidence of one detection of a part, its image region cut by the image's edge: this * its score.
    # A part is a weaker clue to the whole's class; it takes 0.68 for one look to publish.
    existence_hit: float = 1.25
    # Places are cells of camera positions this wide (m); 0 puts all evidence in one sum, as before looks.
    existence_place: float = 0.5
    # Seconds a look lasts: a place's evidence after that (a return after a pause, or a camera that
    # stayed) starts a new look, which replaces what the place said before instead of adding to it:
    # a robot going round a room again and again does not make a recurring false detection certain,
    # and one that stays sees an object go. 0 never starts a new look.
    existence_revisit_s: float = 10.0
    # Bound on the places an object keeps; the one looked from longest ago joins a fixed base.
    existence_max_places: int = 32
    # Evidence of a frame in which the object was in view, not hidden, and not detected (within a look,
    # a frame's evidence is weighed against the look's other frames: see above).
    existence_miss: float = -0.3
    # Evidence of a frame whose depth saw through where the object should be.
    existence_through: float = -1.0
    # Lower clamp of the log-odds (an object can always come back).
    existence_min: float = -4.0
    # Upper clamp of the log-odds (an object that is gone can always go).
    existence_max: float = 6.0
    # Objects are forgotten (memory stays bounded) when missed while more likely gone than there
    # (log-odds < 0) and not detected for this many seconds (a time, not a number of frames, so a
    # 30 Hz stream forgets as a 3 Hz one does). A thing seen again later is a new object.
    forget_after_s: float = 2.0
    # Only objects at least this confident (probability) are published; 0 publishes all.
    publish_confidence: float = 0.7
    # ... and an object appears on the map only once it is this much more confident (0.8 by default) and
    # its box has settled (below), then stays until it falls below publish_confidence: sure enough to act
    # on before it is shown, and not retracted for a look that says a little less (memory/settling.py).
    # With publish_confidence 0 every object appears; unknown objects (discovery's) appear at the bar.
    appear_margin: float = 0.1
    # In view: at least this fraction of the object's sample points seen at their own depth ...
    view_fraction: float = 0.5
    # ... and its seen region at least this many pixels on its shorter side (smaller than that,
    # a detector cannot be expected to find it).
    view_min_px: float = 30.0

    # --- Boxes settle across looks (memory/settling.py): the map shows an object's box once a look other
    # than the one that made it agrees with it, and keeps showing that box until another look confirms a
    # change, so one frame's bad lift or a merge of neighbours does not move a published box; an object
    # whose box never settled is not published. False shows every box as it is, as before.
    settle_boxes: bool = True
    # Two boxes agree when every corner of each lies within the other grown by this share of its extent
    # along each axis ...
    settle_relative: float = 0.15
    # ... and by at least this much (m): a little more than one geometry voxel, the noise of a lift.
    settle_absolute: float = 0.045

    # Once an object was detected from this many looks, its box is fitted to the voxels that many looks
    # covered (memory/extent_fusion.py): one look's bad lift (the table around a cup, a neighbour) does not
    # grow it. 1 fits all of its voxels, as before.
    extent_min_looks: int = 2

    # Find the unknown objects in each frame's depth (memory/discovery.py: compact things resting on a
    # support that no named object holds), tracked with the evidence rules above as class "object".
    discover_unknown: bool = True
    # At most this many unknown objects in published_objects() (their own limit, not max_per_class).
    max_unknown: int = 100
    # Find the room's structure in the same keyframes (memory/structure.py: floor, walls, counters, shelves,
    # cabinets), published apart from the objects (published_structure(); their own marker namespace and
    # message field) and grounded over ("the cup on the counter").
    room_structure: bool = True

    # A discovered segment is evidence for the unknown object it fits only when it keeps that object's extent:
    # it agrees with one of the object's latest segments (half the smaller box inside the larger, no extent
    # more than this many times the other's). A smear of mixed depth changes with the view; two things seen as
    # one are larger than either.
    unknown_extent_ratio: float = 2.0

    # --- Movers (memory/movers.py): people and animals (classes.MOVER_CLASSES) never enter the static map;
    # those the evidence shows to be one are published as what the camera sees now (current_movers()).
    # A current mover is published until this many seconds after its latest detection.
    mover_lifetime_s: float = 1.0
    # A detection is a mover seen before when their centres lie within mover_reach metres, plus mover_speed
    # m/s times the time between them.
    mover_reach: float = 0.5
    mover_speed: float = 1.5
    # A mover is one (and published) when it moved: its centre went at least mover_min_move metres
    # (horizontally) from where it was first seen; a static thing's lifted box shifts by less between views ...
    mover_min_move: float = 0.4
    # ... or when it has a person's shape: a person detection whose points span at least this height (m).
    # A coat on a chair or a jacket on boxes that a detector calls "person" is neither: no person.
    person_min_height: float = 1.0
    # Movers not detected for this many seconds are forgotten (where one was first seen, whether it moved).
    mover_forget_s: float = 10.0

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "score_mode", ScoreMode(self.score_mode))
        except ValueError:
            choices = [m.value for m in ScoreMode]
            raise ConfigError(f"score_mode must be one of {choices}, got {self.score_mode!r}") from None
        _check(0.0 <= self.score_threshold <= 1.0, "score_threshold must be in [0, 1]", self.score_threshold)
        _check(0.0 <= self.iou_threshold < 1.0, "iou_threshold must be in [0, 1)", self.iou_threshold)
        _check(self.max_per_class >= 1, "max_per_class must be at least 1", self.max_per_class)
        _check(self.max_unknown >= 0, "max_unknown must be at least 0", self.max_unknown)
        _check(self.unknown_extent_ratio >= 1.0, "unknown_extent_ratio must be at least 1", self.unknown_extent_ratio)
        _check(0.0 < self.containment_threshold <= 1.0, "containment_threshold must be in (0, 1]",
               self.containment_threshold)
        _check(self.min_observations >= 1, "min_observations must be at least 1", self.min_observations)
        _check(0.0 < self.score_ema <= 1.0, "score_ema must be in (0, 1]", self.score_ema)
        _check(self.max_fusion_weight > 0.0, "max_fusion_weight must be positive", self.max_fusion_weight)
        _check(self.cell_size > 0.0, "cell_size must be positive (metres)", self.cell_size)
        _check(self.geometry_voxel >= 0.0, "geometry_voxel must be >= 0 (metres; 0 = off)", self.geometry_voxel)
        _check(self.geometry_max_voxels >= 8, "geometry_max_voxels must be at least 8", self.geometry_max_voxels)
        _check(self.support_band >= 0.0, "support_band must be >= 0 (metres; 0 = off)", self.support_band)
        for name in ("geometry_match", "geometry_merge", "geometry_touch", "geometry_min_ratio", "image_match",
                     "view_fraction", "publish_confidence", "appear_margin", "support_above"):
            _check(0.0 <= getattr(self, name) <= 1.0, f"{name} must be in [0, 1]", getattr(self, name))
        _check(self.existence_hit > 0.0 and self.existence_hit_whole > 0.0,
               "existence_hit and existence_hit_whole must be positive", (self.existence_hit, self.existence_hit_whole))
        _check(self.existence_place >= 0.0, "existence_place must be >= 0 (metres; 0 = one place)",
               self.existence_place)
        _check(self.existence_revisit_s >= 0.0, "existence_revisit_s must be >= 0 (seconds)", self.existence_revisit_s)
        _check(self.existence_max_places >= 1, "existence_max_places must be at least 1", self.existence_max_places)
        _check(self.existence_miss <= 0.0 and self.existence_through <= 0.0,
               "existence_miss and existence_through must be <= 0", (self.existence_miss, self.existence_through))
        _check(self.existence_min < 0.0 < self.existence_max, "need existence_min < 0 < existence_max",
               (self.existence_min, self.existence_max))
        _check(self.settle_relative >= 0.0 and self.settle_absolute >= 0.0,
               "settle_relative and settle_absolute must be >= 0", (self.settle_relative, self.settle_absolute))
        _check(self.extent_min_looks >= 1, "extent_min_looks must be at least 1", self.extent_min_looks)
        _check(self.forget_after_s >= 0.0, "forget_after_s must be >= 0 (seconds)", self.forget_after_s)
        for name in ("mover_lifetime_s", "mover_reach", "mover_speed", "mover_min_move", "person_min_height",
                     "mover_forget_s"):
            _check(getattr(self, name) >= 0.0, f"{name} must be >= 0", getattr(self, name))


def _check(ok: bool, message: str, value: object) -> None:
    if not ok:
        raise ConfigError(f"{message}, got {value!r}")
