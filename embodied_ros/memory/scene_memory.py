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

from ..classes import LONG_FRONT, SHORT_FRONT, SUPPORT_CLASSES
from ..detections import FramePerception, class_key
from ..errors import FrameError, InputError, json_error_line, os_error_line
from ..frame import Frame
from ..geometry.boxes import BOX_DIM, box_volumes
from ..geometry.iou import box_intersection_volume, box_iou_2d
from .amodal import FloorEstimate, complete_box
from .box_fusion import canonical_box, face_box, fuse_boxes, is_yaw_only
from .class_shapes import parts_may_touch, shape_prior, union_plausible
from .config import MemoryConfig, ScoreMode
from .discovery import UNKNOWN_CLASS, ObjectDiscovery
from .existence import ExistenceEvidence, Place, place_of
from .object_colour import detection_samples, sample_colour
from .object_geometry import ObjectGeometry, fraction_in, near_fraction, neighbourhoods, unpack_voxels, voxel_keys
from .scene_object import MemorySnapshot, SceneObject, UpdateResult
from .spatial_index import SpatialHashGrid
from .track import Track
from .visibility import Visibility, box_samples, classify_points, may_be_in_view, visibility

__all__ = ["MemorySnapshot", "SceneMemory", "SceneObject", "UpdateResult"]

FORMAT = "embodied_ros/scene_memory"
FORMAT_VERSION = 4  # 2: geometry and existence evidence per object; 3: that evidence per place; 4: per look
# (the mean of its frames) and the recesses. 1 to 3 still load
_V1_LOG_ODDS = 2.0  # objects of a version-1 file were all kept: they load as confident


_VIEW_SAMPLES = 64  # surface points per object in the visibility test
_FRACTION_SAMPLES = 512  # voxels per query whose share on an object's geometry is measured
_VIEW_RADIUS = 3.0  # metres: objects within twice this of the view's middle are tested
_FLOOR_MOVED = 0.05  # metres the floor estimate moves before floor-standing objects are refitted
_SKIP = -1  # a discovered segment that is part of a named object, or two unknown ones seen as one
_NAMED_PART = 0.5  # ... when this fraction of its voxels lies within one voxel of the named object's
_BRIDGE_SHARE = 0.25  # ... or this fraction within one voxel of each of two unknown objects' voxels
_UNKNOWN_SAME = 0.3  # two unknown objects whose boxes overlap by more than this IoU are one


def _overlaps(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, M) exact IoU and intersection over the smaller volume of (N, 9) and (M, 9) boxes."""
    inter = box_intersection_volume(a, b)
    va, vb = box_volumes(a)[:, None], box_volumes(b)[None, :]
    tiny = 1e-12
    iou = np.where(inter > 0, inter / np.maximum(va + vb - inter, tiny), 0.0)
    ios = np.where(inter > 0, inter / np.maximum(np.minimum(va, vb), tiny), 0.0)
    return np.clip(iou, 0.0, 1.0), np.clip(ios, 0.0, 1.0)


def _spheres_overlap(boxes: np.ndarray) -> bool:
    """True when the bounding spheres of any two of the (Q, 9) boxes intersect (IoU may be > 0)."""
    radius = 0.5 * np.linalg.norm(boxes[:, 3:6], axis=1)
    gap = np.linalg.norm(boxes[:, None, 0:3] - boxes[None, :, 0:3], axis=2) - radius[:, None] - radius[None, :]
    np.fill_diagonal(gap, np.inf)
    return bool((gap <= 0).any())


@dataclass(frozen=True)
class _Detection:
    """One of a frame's detections, as the memory takes it in."""

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
        return self.surround_z - float(np.median(self.points[:, 2]))


def _cut_by_edge(box_2d: np.ndarray, frame: Frame | None, margin_px: float = 3.0) -> bool:
    """Whether a colour-image box touches the edge of the frame's image."""
    if frame is None or not np.all(np.isfinite(box_2d)):
        return False
    return bool(box_2d[0] <= margin_px or box_2d[1] <= margin_px or box_2d[2] >= frame.width - 1 - margin_px
                or box_2d[3] >= frame.height - 1 - margin_px)


class _Queries:
    """What association compares of a set of query boxes (detections or objects)."""

    def __init__(self, boxes: np.ndarray, names: list[str], keys: list[np.ndarray | None] | None = None,
                 boxes_2d: np.ndarray | None = None, exclude: list[int] | None = None,
                 tracks: list[Track] | None = None) -> None:
        self.boxes, self.names = boxes, names
        self.keys = keys if keys is not None else [None] * len(boxes)
        self.boxes_2d = boxes_2d
        self.exclude = exclude if exclude is not None else [-1] * len(boxes)
        self.tracks = tracks  # the queries are objects (merging), not detections
        self._blocks: dict[int, np.ndarray] = {}
        self._bounds: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def blocks(self, i: int) -> np.ndarray | None:
        """The 3 x 3 x 3 neighbourhoods of query ``i``'s voxels, of at most ``_FRACTION_SAMPLES`` of them
        evenly spread (a fraction needs no more), computed once for all the objects it is compared with."""
        keys = self.keys[i]
        if keys is None:
            return None
        if i not in self._blocks:
            step = max(1, len(keys) // _FRACTION_SAMPLES)
            self._blocks[i] = neighbourhoods(keys[::step])
        return self._blocks[i]

    def may_touch(self, i: int, geometry: ObjectGeometry | None) -> bool:
        """False when no voxel of query ``i`` lies within one voxel of ``geometry``'s voxels (their
        index bounds are apart), so that its geometry fit is 0 without looking at the voxels."""
        if self.keys[i] is None or geometry is None or not len(self.keys[i]):
            return True
        theirs = geometry.index_bounds()
        if theirs is None:
            return True
        if i not in self._bounds:
            ijk = unpack_voxels(self.keys[i])
            self._bounds[i] = (tuple(ijk.min(axis=0).tolist()), tuple(ijk.max(axis=0).tolist()))
        lo, hi = self._bounds[i]
        return all(a - 1 <= b for a, b in zip(lo, theirs[1], strict=True)) and all(
            a <= b + 1 for a, b in zip(theirs[0], hi, strict=True))


class SceneMemory:
    """Persistent objects fused from per-frame world-frame detections; thread-safe.

    Args:
        **params: the fields of :class:`MemoryConfig` (same names and defaults).

    Raises:
        ConfigError: if a parameter cannot work.
    """

    def __init__(self, **params: Any) -> None:
        self.config = MemoryConfig(**params)
        self._lock = threading.RLock()
        self._tracks: dict[int, Track] = {}
        self._index = SpatialHashGrid(self.config.cell_size)
        self._floor = FloorEstimate()
        self._completed_to: float | None = None  # the floor the furniture's boxes reach down to
        self._next_id = 0
        self._frame_id = ""
        self._vocabulary: tuple[str, ...] = ()
        self._last_frame = (-1, 0)
        self._n_updates = 0
        self._snapshot: MemorySnapshot | None = None
        self._discovery = ObjectDiscovery() if self.config.discover_unknown else None

    @classmethod
    def from_config(cls, config: MemoryConfig) -> SceneMemory:
        """A memory with the parameters of ``config``."""
        return cls(**asdict(config))

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
            self._add_vocabulary(det.class_names)
            if len(det) and self._frame_id and det.frame_id != self._frame_id:
                raise FrameError(f"frame {perception.frame_index}: detections are in frame '{det.frame_id}', "
                                 f"the scene memory holds objects in '{self._frame_id}'")
            if frame is not None and self.config.amodal:
                self._floor.update(frame)
                self._follow_floor()
            views = self._views(frame) if frame is not None else {}
            if len(det):
                self._frame_id = det.frame_id
            valid = np.all(np.isfinite(det.boxes), axis=1) & np.all(det.boxes[:, 3:6] > 0, axis=1)
            valid &= np.isfinite(det.scores)
            keep = valid & (det.scores >= self.config.score_threshold)
            order = np.flatnonzero(keep)
            order = order[np.argsort(-det.scores[order], kind="stable")]  # greedy: best detection first
            boxes = det.boxes[order]
            scores = np.clip(det.scores[order], 0.0, 1.0)
            names = [det.class_names[i] for i in det.labels[order]]
            points = [det.points[i] for i in order] if det.points is not None else [None] * len(order)
            keys = [self._keys(p) for p in points]
            boxes_2d = det.boxes_2d[order] if det.boxes_2d is not None else None
            around = det.surround_z[order] if det.surround_z is not None else np.full(len(order), np.nan)

            # Objects present at the start of the frame keep their boxes until a detection takes
            # them, so one batched IoU call serves the whole frame.
            hits, iou_dd = self._matches(_Queries(boxes, names, keys, boxes_2d), views, with_queries=True)
            created: list[int] = []
            updated: list[int] = []
            taken: set[int] = set()
            used: list[int] = []
            n_suppressed = 0
            for k in range(len(boxes)):
                # Non-maximum suppression within the frame: a better detection already covers it.
                if any(iou_dd[k, j] > self.config.iou_threshold and self._same_class(names[k], names[j]) for j in used):
                    n_suppressed += 1
                    continue
                free = [obj_id for obj_id in hits[k] if obj_id not in taken]
                if hits[k] and not free:
                    n_suppressed += 1  # its objects were all taken by better detections of this frame
                    continue
                cut = boxes_2d is not None and _cut_by_edge(boxes_2d[k], frame)
                whole = boxes_2d is not None and frame is not None and np.all(np.isfinite(boxes_2d[k])) and not cut
                detection = _Detection(boxes[k], float(scores[k]), names[k], points[k], cut, float(around[k]), whole)
                if free:
                    obj_id = free[0]
                    self._observe(self._tracks[obj_id], detection, perception)
                    updated.append(obj_id)
                else:
                    obj_id = self._create(detection, perception)
                    created.append(obj_id)
                track = self._tracks[obj_id]
                if track.colour.wants_sample(track.n_obs):  # the colour of the detection's pixels
                    track.colour.add(detection_samples(perception, order[k:k + 1])[0], float(scores[k]))
                taken.add(obj_id)
                used.append(k)
            spared: set[int] = set()
            discovery_s, named_now = self._discover(perception, views, taken, created, updated, spared)
            taken = (taken - {gone for gone, _ in named_now}) | {kept for _, kept in named_now}
            missed, forgotten = self._existence(views, taken | spared, perception)
            merged = named_now + self._merge_pass(sorted(taken))
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
            )

    def _add_vocabulary(self, names: tuple[str, ...]) -> None:
        if not set(names) <= set(self._vocabulary):
            self._vocabulary += tuple(n for n in dict.fromkeys(names) if n not in self._vocabulary)

    def _same_class(self, a: str, b: str) -> bool:
        return self.config.class_agnostic or a == b

    def _compatible(self, track: Track, name: str) -> bool:
        """Whether beyond box overlap a detection of ``name`` may be ``track`` (see Track.compatible)."""
        return track.compatible(name) if self.config.class_agnostic else name == track.class_name

    def _keys(self, points: np.ndarray | None) -> np.ndarray | None:
        if points is None or not self.config.geometry_voxel or len(points) == 0:
            return None
        return np.unique(voxel_keys(points, self.config.geometry_voxel))

    def _matches(self, q: _Queries, views: dict[int, Visibility],
                 with_queries: bool = False) -> tuple[list[list[int]], np.ndarray]:
        """Per query, ids of the objects it is (module docstring), best fit first.

        One IoU call serves all queries (the IoU's fixed cost per call dominates at these sizes).

        Args:
            q: the query boxes, classes, voxel keys, 2D boxes and per query an id to leave out.
            views: objects seen in this frame (only for queries with 2D boxes).
            with_queries: also return the (Q, Q) IoUs of the queries among themselves.

        Returns:
            The per-query id lists and the (Q, Q) query IoUs (zeros unless ``with_queries``).
        """
        n = len(q.boxes)
        near = [{int(c) for c in self._index.query(b) if c != q.exclude[i]} for i, b in enumerate(q.boxes)]
        found = [set(f) for f in near]
        # Per query, the 2D IoU of its box with each object's seen region in this image: objects whose
        # region the 2D box covers are candidates wherever their box is.
        seen = ([c for c, v in views.items() if v.box_2d is not None]
                if q.boxes_2d is not None and self.config.image_match < 1 else [])
        image_fits: list[dict[int, float]] = [{} for _ in range(n)]
        if seen:
            i2d = box_iou_2d(q.boxes_2d, np.array([views[c].box_2d for c in seen]))
            for i in range(n):
                image_fits[i] = dict(zip(seen, i2d[i].tolist(), strict=True))
                found[i] |= {c for c, f in image_fits[i].items() if f >= self.config.image_match and c != q.exclude[i]}
        union = np.array(sorted({c for f in found for c in f}), dtype=np.int64)
        others = [self._tracks[int(c)].box for c in union]
        if with_queries and n > 1 and (len(union) or _spheres_overlap(q.boxes)):
            iou, ios = _overlaps(q.boxes, np.concatenate([q.boxes, np.array(others).reshape(-1, BOX_DIM)]))
            iou_qq, iou, ios = iou[:, :n], iou[:, n:], ios[:, n:]
        elif len(union):
            iou, ios = _overlaps(q.boxes, np.array(others))
            iou_qq = np.zeros((n, n))
        else:
            return [[] for _ in range(n)], np.zeros((n, n))
        out: list[list[int]] = []
        for i in range(n):
            ranked = []
            for j in np.flatnonzero(np.isin(union, list(found[i]))):
                track = self._tracks[int(union[j])]
                fit = self._fit_of(q, i, track, float(iou[i, j]), float(ios[i, j]), image_fits[i].get(track.id),
                                   track.id in near[i])
                if fit is not None:
                    ranked.append((-fit, -ios[i, j], track.id))
            out.append([t for _, _, t in sorted(ranked)])
        return out, iou_qq

    def _fit_of(self, q: _Queries, i: int, track: Track, iou: float, ios: float, i2d: float | None,
                near: bool) -> float | None:
        """How well query ``i`` fits ``track`` (the best of its IoU, geometry and image fits), or
        None when it is not that object (module docstring); ``i2d``: the IoU of the query's 2D box
        with the object's seen region in this image (None: not seen, or no image match);
        ``near``: their bounding spheres meet (else they can share no geometry).

        Objects built from points (lifted detections) see only parts of things, and their parts
        of neighbours overlap; for them, objects of different classes merge only when each was
        also seen as the other's class, and nothing joins an object past its class's size. A
        network's amodal boxes (no points) keep the demo's plain class-agnostic rule.
        """
        cfg = self.config
        name = q.names[i]
        if (name == UNKNOWN_CLASS) != (track.class_name == UNKNOWN_CLASS):
            return None  # unknown objects become named ones only by a confident named object (_name_unknown)
        if name == UNKNOWN_CLASS and q.tracks is not None:  # two unknown objects are one when their boxes
            return iou if iou > _UNKNOWN_SAME else None  # mostly agree: touching things share voxels
        same = track.class_name == name
        lifted = track.geometry is not None or q.keys[i] is not None
        fit = iou if self._same_class(track.class_name, name) else 0.0
        hit = fit > cfg.iou_threshold or (same and ios > cfg.containment_threshold)
        if lifted and q.tracks is not None and not same:
            hit &= self._compatible(track, name) and self._compatible(q.tracks[i], track.class_name)
        if self._compatible(track, name):
            geo = self._geometry_fit(q.blocks(i), track) if near and q.may_touch(i, track.geometry) else 0.0
            hit |= geo >= cfg.geometry_match > 0
            fit = max(fit, geo)
            if i2d is not None:
                hit |= i2d >= cfg.image_match
                fit = max(fit, i2d)
        if not hit or (lifted and not union_plausible(track.box, q.boxes[i], track.class_name)):
            return None
        return fit

    @staticmethod
    def _geometry_fit(blocks: np.ndarray | None, track: Track) -> float:
        """How much of a query's voxels (their neighbourhoods) lie on the object's geometry (0 without either)."""
        if blocks is None or track.geometry is None or len(track.geometry) == 0:
            return 0.0
        return near_fraction(blocks, track.geometry.keys)

    # ------------------------------------------------------------------ existence

    def _views(self, frame: Frame) -> dict[int, Visibility]:
        """How the objects near the camera fall in this frame, by id."""
        R, t = frame.T_world_camera[:3, :3], frame.T_world_camera[:3, 3]
        middle = t + R[:, 2] * _VIEW_RADIUS
        query = np.array([*middle, 2 * _VIEW_RADIUS, 2 * _VIEW_RADIUS, 2 * _VIEW_RADIUS, 0.0, 0.0, 0.0])
        ids = [int(i) for i in self._index.query(query)]
        if not ids:
            return {}
        samples, tolerances = [], []
        for i in ids:
            track = self._tracks[i]
            if track.geometry is not None and len(track.geometry) >= 4:
                samples.append(track.geometry.sample(_VIEW_SAMPLES))
                tolerances.append(0.0)
            else:  # box samples: the box's own front surface hides its inside
                samples.append(box_samples(track.box))
                tolerances.append(0.5 * float(track.box[3:6].max()))
        # Objects none of whose samples can fall in the image are not in view: skipped, as their
        # Visibility would say nothing (no sample seen, hidden or seen through).
        bounds = np.array([[s.min(axis=0), s.max(axis=0)] for s in samples])
        keep = np.flatnonzero(may_be_in_view(bounds[:, 0], bounds[:, 1], frame))
        ids, samples = [ids[k] for k in keep], [samples[k] for k in keep]
        tolerances = [tolerances[k] for k in keep]
        if not ids:
            return {}
        return dict(zip(ids, visibility(samples, np.array(tolerances), frame), strict=True))

    def _existence(self, views: dict[int, Visibility], taken: set[int],
                   perception: FramePerception) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Evidence against the objects in view but not detected; forget those that fall too low.

        Returns:
            (ids that lost evidence, ids forgotten).
        """
        cfg = self.config
        place = place_of(perception.viewpoint, cfg.existence_place)
        missed, forgotten = [], []
        for obj_id, view in views.items():
            track = self._tracks.get(obj_id)
            if track is None or obj_id in taken:
                continue
            change = 0.0
            if view.through_fraction >= 0.5:
                change += cfg.existence_through
            elif view.seen_fraction >= cfg.view_fraction and view.min_side_px() >= cfg.view_min_px:
                change += cfg.existence_miss
                track.n_missed += 1
            if change == 0.0:
                continue
            missed.append(obj_id)
            self._evidence(track, change, place, perception.stamp_ns)
            if track.log_odds < 0.0 and perception.stamp_ns - track.last_ns > cfg.forget_after_s * 1e9:
                del self._tracks[obj_id]
                self._index.remove(obj_id)
                forgotten.append(obj_id)
        return tuple(sorted(missed)), tuple(sorted(forgotten))

    def _hit(self, track: Track, det: _Detection, perception: FramePerception) -> None:
        """A detection's evidence, in the look of the place it was made from (memory/existence.py):
        more for a whole view than for one the image's edge cuts (or whose image region is unknown)."""
        cfg = self.config
        place = place_of(perception.viewpoint, cfg.existence_place)
        hit = cfg.existence_hit_whole if det.whole else cfg.existence_hit
        self._evidence(track, hit * det.score, place, perception.stamp_ns, hit=True)

    def _evidence(self, track: Track, value: float, place: Place | None, stamp_ns: int, hit: bool = False) -> None:
        """Add one frame's existence evidence to the object, in the place the frame looked from."""
        cfg = self.config
        track.existence.add(value, place, int(stamp_ns), cfg.existence_revisit_s, cfg.existence_max_places,
                            cfg.existence_min, cfg.existence_max, hit)
        track.log_odds = track.existence.log_odds(cfg.existence_min, cfg.existence_max)
        track.cached = None

    # ------------------------------------------------------------------ unknown objects

    def _discover(self, perception: FramePerception, views: dict[int, Visibility], taken: set[int],
                  created: list[int], updated: list[int], spared: set[int]) -> tuple[float, list[tuple[int, int]]]:
        """Take in the frame's unknown objects (memory/discovery.py): a segment that is part of a named
        object is left out; one that is an unknown object not yet taken this frame adds to it (the
        evidence rules of every object); the rest are new objects of class ``UNKNOWN_CLASS``.

        Frames discovery does not look at (ObjectDiscovery.discover) put the unknown objects in view in
        ``spared`` (no evidence against them), and so does a segment over two of them (they are there).

        Returns:
            The seconds it took, and the merges of unknown objects into named ones (removed, survivor).
        """
        if self._discovery is None or perception.frame is None:
            return 0.0, []
        start = time.perf_counter()
        found = self._discovery.discover(perception.frame, self._floor.z)
        if found is None:  # not a frame discovery looks at: it says nothing of the unknown objects in view
            spared |= {i for i in views if self._tracks[i].class_name == UNKNOWN_CLASS}
            return time.perf_counter() - start, []
        if len(found) and not self._frame_id:
            self._frame_id = found.frame_id
        for k in range(len(found)):
            points = found.points[k]
            obj_id, holding = self._unknown_fit(found.boxes[k], self._keys(points), taken)
            if obj_id == _SKIP:
                spared.update(holding)  # two things seen as one: both are there, neither is missed
                continue
            detection = _Detection(found.boxes[k], float(found.scores[k]), UNKNOWN_CLASS, points, False,
                                   float(found.surround_z[k]))
            if obj_id is None:
                obj_id = self._create(detection, perception)
                created.append(obj_id)
            else:
                self._observe(self._tracks[obj_id], detection, perception)
                updated.append(obj_id)
            track = self._tracks[obj_id]
            if track.colour.wants_sample(track.n_obs):
                track.colour.add(sample_colour(perception.frame.color, found.pixels[k]), float(found.scores[k]))
            taken.add(obj_id)
        merges = self._name_unknown(taken)
        return time.perf_counter() - start, merges

    def _confident_named(self, track: Track) -> bool:
        """Whether a track is a named object the memory publishes (and not furniture things rest on)."""
        return (track.class_name != UNKNOWN_CLASS and track.confidence >= self.config.publish_confidence
                and class_key(track.class_name) not in SUPPORT_CLASSES)

    def _name_unknown(self, taken: set[int]) -> list[tuple[int, int]]:
        """A confident named object of this frame that covers an unknown object (IoU above
        ``iou_threshold``, or ``geometry_match`` of its voxels within one of the unknown object's) is that
        object, one object and not two: the unknown one goes, and the named one, as the detections made
        it (the geometry's evidence says nothing of the name), keeps the older of the two ids (the
        unknown object's id now names it).

        Returns:
            (removed id, surviving id) pairs.
        """
        merges: list[tuple[int, int]] = []
        for obj_id in sorted(taken):
            named = self._tracks.get(obj_id)
            if named is None or not self._confident_named(named):
                continue
            others = [self._tracks[int(c)] for c in self._index.query(named.box)
                      if self._tracks[int(c)].class_name == UNKNOWN_CLASS]
            if not others:
                continue
            iou = _overlaps(named.box[None], np.array([t.box for t in others]))[0][0]
            keys = named.geometry.keys if named.geometry is not None else None
            blocks = None if keys is None else neighbourhoods(keys[::max(1, len(keys) // _FRACTION_SAMPLES)])
            cfg = self.config
            for other in (t for t, v in zip(others, iou, strict=True)
                          if v > cfg.iou_threshold or self._geometry_fit(blocks, t) >= cfg.geometry_match):
                del self._tracks[other.id]
                self._index.remove(other.id)
                if other.id < named.id:  # the older id survives, as in every merge
                    merges.append((named.id, other.id))
                    del self._tracks[named.id]
                    self._index.remove(named.id)
                    named.id = other.id
                    named.first_frame, named.first_ns = min((named.first_frame, named.first_ns),
                                                            (other.first_frame, other.first_ns))
                    named.cached = None
                    self._tracks[named.id] = named
                    self._index.insert(named.id, named.box)
                else:
                    merges.append((other.id, named.id))
        return merges

    def _unknown_fit(self, box: np.ndarray, keys: np.ndarray | None,
                     taken: set[int]) -> tuple[int | None, list[int]]:
        """The unknown object a segment is (the best fit: box IoU above ``_UNKNOWN_SAME``, or
        ``geometry_match`` of its voxels among the object's own, those its box is fitted to: two things side
        by side must not grow one of them); None when it is a new one; ``_SKIP`` when it lies on a
        confident named object (a chair's backrest seen over the table; not furniture that things rest on)
        or on two unknown objects at once (two things that touch, seen as one). Named objects the memory
        is unsure of do not count: the geometry shows that something is there, not that the detector named
        it right. An unknown object grows only as far as a compact thing can (its shape prior,
        memory/class_shapes.py). Also returns the unknown objects that hold part of the segment."""
        cfg = self.config
        ids = [int(c) for c in self._index.query(box)]
        if not ids:
            return None, []
        tracks = [self._tracks[c] for c in ids]
        boxes = np.array([t.box for t in tracks])
        iou = _overlaps(box[None], boxes)[0][0]
        inside = box_intersection_volume(box[None], boxes)[0] / max(float(np.prod(box[3:6])), 1e-9)
        blocks = None if keys is None else neighbourhoods(keys[::max(1, len(keys) // _FRACTION_SAMPLES)])
        best, best_fit, holding = None, 0.0, []
        for j, track in enumerate(tracks):
            if track.class_name != UNKNOWN_CLASS:  # a part of a named object: in its box and on its voxels
                if self._confident_named(track) and (iou[j] > cfg.iou_threshold or (
                        inside[j] >= _NAMED_PART and self._geometry_fit(blocks, track) >= _NAMED_PART)):
                    return _SKIP, []
                continue
            # Unknown objects: their own voxels (those the box is fitted to), not the strays of one bad segment.
            own = track.geometry.keys[track.geometry.core(*self._core_rule(track))] if track.geometry else None
            geo = near_fraction(blocks, own) if blocks is not None and own is not None else 0.0
            same = fraction_in(keys, own) if keys is not None and own is not None else 0.0
            if geo >= _BRIDGE_SHARE:
                holding.append(track.id)
            fit = max(float(iou[j]), same)
            if (iou[j] > _UNKNOWN_SAME or same >= cfg.geometry_match) and track.id not in taken and fit > best_fit \
                    and union_plausible(track.box, box, UNKNOWN_CLASS):
                best, best_fit = track.id, fit
        return (_SKIP if len(holding) >= 2 else best), holding

    # ------------------------------------------------------------------ tracks

    def _merge_pass(self, ids: list[int]) -> list[tuple[int, int]]:
        """Merge duplicates of the objects touched by a frame; (removed, survivor) pairs."""
        ids = [i for i in ids if i in self._tracks]
        merges: list[tuple[int, int]] = []
        for obj_id, hits in zip(ids, self._duplicates_of(ids), strict=True):
            # The batched matches hold until the first merge changes a box; from then on, recompute.
            if obj_id in self._tracks and (hits or merges):
                merges += self._merge_duplicates(obj_id)
        return merges

    def _duplicates_of(self, ids: list[int]) -> list[list[int]]:
        """Per object, the objects that are it too: box overlap (as a detection's), or, for one
        class, shared geometry, or touching geometry of two parts that views cut at the image's edge."""
        if not ids:
            return []
        tracks = [self._tracks[i] for i in ids]
        keys = [t.geometry.keys if t.geometry is not None else None for t in tracks]
        queries = _Queries(np.array([t.box for t in tracks]), [t.class_name for t in tracks], keys, exclude=ids,
                           tracks=tracks)
        out = self._matches(queries, {})[0]
        for track, hits in zip(tracks, out, strict=True):
            if track.geometry is None or self.config.geometry_merge <= 0:
                continue
            for c in (int(c) for c in self._index.query(track.box)):
                other = self._tracks[c]
                if c == track.id or c in hits or other.class_name != track.class_name or other.geometry is None \
                        or track.class_name == UNKNOWN_CLASS:
                    continue
                if self._parts_of_one(track, other) and union_plausible(track.box, other.box, track.class_name):
                    hits.append(c)
        return out

    def _parts_of_one(self, a: Track, b: Track) -> bool:
        """Whether two objects of one class are parts of one: they share voxels, or, for a class
        that can be larger than a close view holds (furniture), they touch and most views of each
        cut it at the image's edge (two whole books side by side stay two)."""
        smaller, larger = sorted((a.geometry, b.geometry), key=len)
        if fraction_in(smaller.keys, larger.keys) >= self.config.geometry_merge:
            return True
        if not parts_may_touch(a.class_name):
            return False
        cut = all(t.n_cut >= 0.5 * t.n_obs for t in (a, b))
        if not cut:
            return False
        sample = smaller.keys[::max(1, len(smaller.keys) // _FRACTION_SAMPLES)]
        return near_fraction(neighbourhoods(sample), larger.keys) >= self.config.geometry_touch

    def _merge_duplicates(self, obj_id: int) -> list[tuple[int, int]]:
        """Merge every duplicate of ``obj_id`` into the older one, repeatedly."""
        merges: list[tuple[int, int]] = []
        while True:
            hits = self._duplicates_of([obj_id])[0]
            if not hits:
                return merges
            older, younger = sorted((obj_id, hits[0]))
            self._absorb(self._tracks[older], self._tracks.pop(younger))
            self._index.remove(younger)
            merges.append((younger, older))
            obj_id = older

    def _create(self, det: _Detection, perception: FramePerception) -> int:
        obj_id = self._next_id
        self._next_id += 1
        frame, stamp = int(perception.frame_index), int(perception.stamp_ns)
        track = Track(obj_id, canonical_box(det.box), det.score, det.score, {det.name: det.score}, det.name, 1, frame,
                      frame, stamp, stamp, log_odds=self.config.existence_prior, n_cut=int(det.cut),
                      existence=ExistenceEvidence.starting_at(self.config.existence_prior))
        self._hit(track, det, perception)
        track.add_recess(det.recess)
        self._add_points(track, det.points, perception.frame)
        self._seen_from(track, det.score, perception)
        self._tracks[obj_id] = track
        self._index.insert(obj_id, track.box)
        return obj_id

    def _observe(self, track: Track, det: _Detection, perception: FramePerception) -> None:
        score, name = det.score, det.name
        track.box = fuse_boxes(track.box, track.weight, det.box, score)
        track.weight = min(track.weight + score, self.config.max_fusion_weight)
        if self.config.score_mode is ScoreMode.MAX:
            track.score = max(track.score, score)
        else:
            track.score = (1.0 - self.config.score_ema) * track.score + self.config.score_ema * score
        track.evidence[name] = track.evidence.get(name, 0.0) + score
        if track.evidence[name] > track.evidence[track.class_name]:
            track.class_name = name
        track.n_obs += 1
        track.n_cut += int(det.cut)
        track.last_frame, track.last_ns = int(perception.frame_index), int(perception.stamp_ns)
        self._hit(track, det, perception)
        track.add_recess(det.recess)
        self._add_points(track, det.points, perception.frame)
        self._seen_from(track, score, perception)
        track.cached = None
        self._index.update(track.id, track.box)

    def _add_points(self, track: Track, points: np.ndarray | None, frame: Frame | None) -> None:
        """Grow the track's geometry with a detection's points, count which of its voxels the frame
        saw, and refit its box to the object's own voxels."""
        if points is None or not self.config.geometry_voxel or len(points) == 0:
            return
        if track.geometry is None:
            track.geometry = ObjectGeometry(self.config.geometry_voxel, self.config.geometry_max_voxels)
        geometry = track.geometry
        geometry.add(points)
        if frame is not None:
            seen = classify_points(geometry.centroids(), 0.0, frame).seen
            geometry.mark_seen(seen, np.unique(voxel_keys(points, geometry.voxel_size)))
        self._fit(track)

    def _core_rule(self, track: Track) -> tuple[int, float]:
        """(min_count, min_ratio) of the voxels an object's box is fitted to (ObjectGeometry.core)."""
        return 2 if track.n_obs >= self.config.geometry_min_count_after else 1, self.config.geometry_min_ratio

    def _fit(self, track: Track) -> None:
        """The track's box from its geometry, completed with its class's shape prior, facing its views."""
        if track.geometry is None or not is_yaw_only(track.box):
            return
        box = track.geometry.fit_box(*self._core_rule(track))
        if box is None:
            return
        if self.config.amodal:
            box = complete_box(box, track.class_name, self._floor.z)
        track.box = box
        self._turn_front(track)

    def _follow_floor(self) -> None:
        """Refit the floor-standing objects when the floor estimate has moved: frames that saw only
        a table top took it for the floor, and a chair completed to it, and not seen since, would
        keep that box."""
        z = self._floor.z
        if z is None or (self._completed_to is not None and abs(z - self._completed_to) <= _FLOOR_MOVED):
            return
        self._completed_to = z
        for track in self._tracks.values():
            prior = shape_prior(track.class_name)
            if prior is not None and prior.on_floor:
                self._fit(track)
                track.cached = None
                self._index.update(track.id, track.box)

    def _seen_from(self, track: Track, score: float, perception: FramePerception) -> None:
        """Add a sighting's direction to the track's evidence and turn its front that way."""
        if not self.config.front_from_views or perception.viewpoint is None:
            return
        ray = np.asarray(perception.viewpoint, dtype=np.float64).reshape(3)[:2] - track.box[:2]
        length = float(np.linalg.norm(ray))
        if np.isfinite(length) and length > 1e-6:
            track.seen_from = track.seen_from + score * ray / length
            self._turn_front(track)

    def _turn_front(self, track: Track) -> None:
        """Write the track's box with its front towards the directions it was seen from."""
        if self.config.front_from_views and np.any(track.seen_from):
            track.box = face_box(track.box, track.seen_from, self._front_along(track.class_name))

    def _front_along(self, class_name: str) -> str | None:
        """Which horizontal extent the class's front lies along (MemoryConfig.front_from_shape)."""
        if not self.config.front_from_shape:
            return None
        key = class_key(class_name)
        return "short" if key in SHORT_FRONT else "long" if key in LONG_FRONT else None

    def _absorb(self, keep: Track, gone: Track) -> None:
        keep.box = fuse_boxes(keep.box, keep.weight, gone.box, gone.weight)
        if self.config.score_mode is ScoreMode.MAX:
            keep.score = max(keep.score, gone.score)
        else:
            keep.score = (keep.weight * keep.score + gone.weight * gone.score) / (keep.weight + gone.weight)
        keep.weight = min(keep.weight + gone.weight, self.config.max_fusion_weight)
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
        if gone.geometry is not None:
            if keep.geometry is None:
                keep.geometry = gone.geometry
            else:
                keep.geometry.merge(gone.geometry)
        self._fit(keep)
        self._turn_front(keep)
        if gone.first_frame < keep.first_frame:
            keep.first_frame, keep.first_ns = gone.first_frame, gone.first_ns
        if gone.last_frame > keep.last_frame:
            keep.last_frame, keep.last_ns = gone.last_frame, gone.last_ns
        keep.cached = None
        self._index.update(keep.id, keep.box)

    # ------------------------------------------------------------------ reading

    def objects(self) -> list[SceneObject]:
        """Every object, by increasing id."""
        return list(self.snapshot().objects)

    def published_objects(self) -> list[SceneObject]:
        """Confident objects seen at least ``min_observations`` times, at most ``max_per_class``
        per class and ``max_unknown`` unknown objects (highest score first), best score first overall."""
        return self.snapshot().published(self.config.max_per_class, self.config.min_observations,
                                         self.config.publish_confidence, {UNKNOWN_CLASS: self.config.max_unknown})

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
                objs = tuple(self._tracks[i].to_object() for i in sorted(self._tracks))
                ids = np.array([o.id for o in objs], dtype=np.int64)
                boxes = np.array([o.box for o in objs], dtype=np.float64).reshape(-1, BOX_DIM)
                scores = np.array([o.score for o in objs], dtype=np.float64)
                for arr in (ids, boxes, scores):
                    arr.setflags(write=False)
                self._snapshot = MemorySnapshot(
                    objs, ids, boxes, scores, tuple(o.class_name for o in objs), self._frame_id,
                    self._last_frame[0], self._last_frame[1], self._n_updates,
                )
            return self._snapshot

    def reset(self) -> None:
        """Forget every object; ids keep counting (an id is never reused by this memory)."""
        with self._lock:
            self._tracks.clear()
            self._index.clear()
            self._floor.reset()
            if self._discovery is not None:
                self._discovery.reset()
            self._completed_to = None
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
            }

    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides: Any) -> SceneMemory:
        """Rebuild a memory from ``to_dict()``'s document; keyword arguments override its parameters.

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
        memory = cls.from_config(replace(config, **overrides))
        try:
            memory._frame_id = str(data["frame_id"])
            memory._vocabulary = tuple(str(n) for n in data.get("vocabulary", ()))
            if data.get("floor_z") is not None:
                memory._floor.assume(float(data["floor_z"]))
                memory._completed_to = memory._floor.z
            for o in data["objects"]:
                track = Track.from_dict(o, _V1_LOG_ODDS)
                memory._tracks[track.id] = track
                memory._index.insert(track.id, track.box)
            memory._next_id = max(int(data["next_id"]), max(memory._tracks, default=-1) + 1)
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
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> SceneMemory:
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
            return cls.from_dict(data, **overrides)
        except InputError as err:
            raise InputError(f"{path}: {err}") from None
