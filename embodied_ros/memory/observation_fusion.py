"""Fusing an observation into the memory: what a detection (or discovered segment), or a duplicate, adds to an object.

An object's box is fitted to its whole geometry (gravity-aligned, yaw from the footprint) and
completed with class shape priors (memory/amodal.py); objects whose detections carry no points
(a network's boxes) fuse their boxes instead. Its front turns towards the directions it was seen
from. Each detection adds existence evidence in the look of the place it was made from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..classes import LONG_FRONT, SHORT_FRONT
from ..detections import FramePerception, class_key
from ..frame import Frame
from ..geometry.columns import sorted_unique
from ..geometry.grouped import medians
from .amodal import FloorEstimate, complete_box
from .box_fusion import canonical_box, face_box, is_yaw_only
from .class_shapes import shape_prior
from .config import MemoryConfig
from .existence import ExistenceEvidence, place_of
from .extent_fusion import fit_extent, look_id
from .neighbours import without_neighbours
from .object_geometry import voxel_keys
from .settling import look_of
from .spatial_index import SpatialHashGrid
from .track import Track
from .visibility import classify_points

_FLOOR_MOVED = 0.05  # metres the floor estimate moves before floor-standing objects are refitted


@dataclass(frozen=True)
class Observation:
    """One of a frame's detections (or discovered segments), as the memory takes it in."""

    box: np.ndarray
    score: float
    name: str
    points: np.ndarray | None  # (V, 3) world points of the object, or None
    cut: bool  # its image region touches the image's edge: the object may go on beyond it
    surround_z: float = float("nan")  # height of the horizontal surface around its image region
    whole: bool = False  # its image region is known and clear of the image's edge

    @property
    def recess(self) -> float:
        """How far (m) the middle of its points lies below the surface around it (NaN: unknown)."""
        if self.points is None or not len(self.points) or not np.isfinite(self.surround_z):
            return float("nan")
        return self.surround_z - float(medians(self.points[:, 2:3])[0])  # np.median's number, cheaper


def cut_by_edge(box_2d: np.ndarray, frame: Frame | None, margin_px: float = 3.0) -> bool:
    """Whether a colour-image box touches the edge of the frame's image."""
    if frame is None or not np.all(np.isfinite(box_2d)):
        return False
    return bool(box_2d[0] <= margin_px or box_2d[1] <= margin_px or box_2d[2] >= frame.width - 1 - margin_px
                or box_2d[3] >= frame.height - 1 - margin_px)


def off_the_support(points: np.ndarray | None, surround_z: float, band: float, above: float) -> np.ndarray | None:
    """``points`` without those within ``band`` of the surface height around them (``surround_z``), when at least
    ``above`` of them rise above that band: the object stands on the surface, and those points are the surface
    (MemoryConfig.support_band). A flat thing, a recessed sink or an unknown surface: the points as they are."""
    if points is None or not len(points) or not band or not np.isfinite(surround_z):
        return points
    z = points[:, 2]
    if np.mean(z > surround_z + band) < above:
        return points
    return points[np.abs(z - surround_z) > band]


def core_rule(track: Track, config: MemoryConfig) -> tuple[int, float]:
    """(min_count, min_ratio) of the voxels an object's box is fitted to (ObjectGeometry.core)."""
    return 2 if track.n_obs >= config.geometry_min_count_after else 1, config.geometry_min_ratio


class ObservationFusion:
    """Creates and updates the memory's tracks (shares the memory's track dict, index and floor)."""

    def __init__(self, config: MemoryConfig, tracks: dict[int, Track], index: SpatialHashGrid,
                 floor: FloorEstimate) -> None:
        self.config = config
        self._tracks = tracks
        self._index = index
        self._floor = floor
        self.completed_to: float | None = None  # the floor the furniture's boxes reach down to

    def create(self, obj_id: int, det: Observation, perception: FramePerception) -> Track:
        """A new object ``obj_id`` of one detection, entered in the tracks and the index."""
        frame, stamp = int(perception.frame_index), int(perception.stamp_ns)
        track = Track(obj_id, canonical_box(det.box), det.score, det.score, {det.name: det.score}, det.name, 1, frame,
                      frame, stamp, stamp, log_odds=self.config.existence_prior, n_cut=int(det.cut),
                      existence=ExistenceEvidence.starting_at(self.config.existence_prior))
        self._hit(track, det, perception)
        track.add_recess(det.recess)
        self._add_points(track, self._own_points(det, obj_id), perception)
        self._seen_from(track, det.score, perception)
        self._tracks[obj_id] = track
        self._index.insert(obj_id, track.box)
        return track

    def observe(self, track: Track, det: Observation, perception: FramePerception) -> None:
        """Fuse one detection of the object into it."""
        track.fuse_detection(det.box, det.score, det.name, det.cut, perception.frame_index, perception.stamp_ns,
                             self.config)
        self._hit(track, det, perception)
        track.add_recess(det.recess)
        self._add_points(track, self._own_points(det, track.id), perception)
        self._seen_from(track, det.score, perception)
        self._index.update(track.id, track.box)

    def absorb(self, keep: Track, gone: Track) -> None:
        """Fuse a duplicate ``gone`` into ``keep`` and refit its box."""
        keep.absorb(gone, self.config)
        self.fit(keep)
        self._turn_front(keep)
        self._index.update(keep.id, keep.box)

    def fit(self, track: Track) -> None:
        """The track's box from its geometry, completed with its class's shape prior, facing its views. An
        object seen whole, from more than one look, is fitted to the voxels several looks covered
        (memory/extent_fusion.py); one seen in parts cut by the image's edge is the union of its parts."""
        if track.geometry is None or not is_yaw_only(track.box):
            return
        looks = self.config.extent_min_looks
        whole = track.n_cut < 0.5 * track.n_obs
        box, track.looks_agree = fit_extent(track.geometry, track.support, *core_rule(track, self.config),
                                            looks if whole and track.existence.n_looks >= looks else 1)
        if box is None:
            return
        if self.config.amodal:
            box = complete_box(box, track.class_name, self._floor.z)
        track.place_box(box)
        self._turn_front(track)

    def follow_floor(self) -> None:
        """Refit the floor-standing objects when the floor estimate has moved: frames that saw only
        a table top took it for the floor, and a chair completed to it, and not seen since, would
        keep that box. The box the map shows is completed down to the new floor too, also while a
        change of the object awaits its look (a table seen first from above, before any floor, is
        not shown as its top alone until another look)."""
        z = self._floor.z
        if z is None or (self.completed_to is not None and abs(z - self.completed_to) <= _FLOOR_MOVED):
            return
        self.completed_to = z
        for track in self._tracks.values():
            prior = shape_prior(track.class_name)
            if prior is not None and prior.on_floor:
                self.fit(track)
                shown = track.settling.shown
                track.refit_settled(self.config, None if shown is None or not self.config.amodal
                                    else complete_box(shown, track.class_name, z))
                self._index.update(track.id, track.box)

    def _own_points(self, det: Observation, obj_id: int) -> np.ndarray | None:
        """The detection's points without the surface it stands on and without those of a neighbour of its class
        on the map (memory/neighbours.py)."""
        cfg = self.config
        points = off_the_support(det.points, det.surround_z, cfg.support_band, cfg.support_above)
        return without_neighbours(points, det.name, obj_id, self._tracks, self._index, cfg.geometry_min_ratio)

    def _add_points(self, track: Track, points: np.ndarray | None, perception: FramePerception) -> None:
        """Grow the track's geometry with a detection's points, count which of its voxels the frame
        saw and the look that covered them, and refit its box to the object's own voxels."""
        if points is None or not self.config.geometry_voxel or len(points) == 0:
            return
        frame = perception.frame
        geometry = track.grown_geometry(self.config.geometry_voxel, self.config.geometry_max_voxels)
        covered = geometry.add(points)
        track.support.add(points, geometry.voxel_size, look_id(look_of(track, perception.viewpoint, self.config)))
        track.support.prune(geometry)
        if frame is not None:
            seen = classify_points(geometry.centroids(), 0.0, frame).seen
            if not np.isfinite(points).all():  # the keys of every point, as before (add leaves those out)
                covered = sorted_unique(voxel_keys(points, geometry.voxel_size))
            geometry.mark_seen(seen, covered)
        self.fit(track)

    def _seen_from(self, track: Track, score: float, perception: FramePerception) -> None:
        """Add a sighting's direction to the track's evidence and turn its front that way."""
        if not self.config.front_from_views or perception.viewpoint is None:
            return
        ray = np.asarray(perception.viewpoint, dtype=np.float64).reshape(3)[:2] - track.box[:2]
        length = float(np.linalg.norm(ray))
        if np.isfinite(length) and length > 1e-6:
            track.add_view(score * ray / length)
            self._turn_front(track)

    def _turn_front(self, track: Track) -> None:
        """Write the track's box with its front towards the directions it was seen from."""
        if self.config.front_from_views and np.any(track.seen_from):
            track.place_box(face_box(track.box, track.seen_from, self._front_along(track.class_name)))

    def _front_along(self, class_name: str) -> str | None:
        """Which horizontal extent the class's front lies along (MemoryConfig.front_from_shape)."""
        if not self.config.front_from_shape:
            return None
        key = class_key(class_name)
        return "short" if key in SHORT_FRONT else "long" if key in LONG_FRONT else None

    def _hit(self, track: Track, det: Observation, perception: FramePerception) -> None:
        """A detection's evidence, in the look of the place it was made from (memory/existence.py):
        more for a whole view than for one the image's edge cuts (or whose image region is unknown)."""
        cfg = self.config
        place = place_of(perception.viewpoint, cfg.existence_place)
        hit = cfg.existence_hit_whole if det.whole else cfg.existence_hit
        track.add_evidence(hit * det.score, place, perception.stamp_ns, cfg, hit=True)
