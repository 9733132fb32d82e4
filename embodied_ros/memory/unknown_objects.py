"""Unknown objects in the scene memory: which object a discovered segment is, and when a named object
is an unknown one (memory/discovery.py finds the segments)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..classes import SUPPORT_CLASSES
from ..detections import Detections3D, FramePerception, class_key
from ..geometry.boxes import BOX_DIM
from ..geometry.iou import box_intersection_volume
from .association import UNKNOWN_SAME, geometry_fit, overlaps, overlaps_of, point_keys, sampled_blocks
from .class_shapes import union_plausible
from .config import MemoryConfig
from .discovery import UNKNOWN_CLASS
from .object_colour import sample_colour
from .object_geometry import fraction_in, near_fraction
from .observation_fusion import Observation, ObservationFusion, core_rule
from .spatial_index import SpatialHashGrid
from .track import Track, sure

SKIP = -1  # a discovered segment that is part of a named object, or two unknown ones seen as one
_SEGMENTS_KEPT = 8  # per unknown object, the boxes of its latest segments (what its extent is compared with)
_NAMED_PART = 0.5  # ... when this fraction of its voxels lies within one voxel of the named object's
_BRIDGE_SHARE = 0.25  # ... or this fraction within one voxel of each of two unknown objects' voxels


class UnknownObjects:
    """Takes discovered segments into the memory's objects (shares its track dict, index and fusion)."""

    def __init__(self, config: MemoryConfig, tracks: dict[int, Track], index: SpatialHashGrid,
                 fusion: ObservationFusion, create: Callable[[Observation, FramePerception], int]) -> None:
        self.config = config
        self._tracks = tracks
        self._index = index
        self._fusion = fusion
        self._create = create  # a new object of one detection; returns its id
        self._segments: dict[int, list[np.ndarray]] = {}  # per unknown object, its latest segments' boxes

    def take_in(self, found: Detections3D, perception: FramePerception, taken: set[int], created: list[int],
                updated: list[int], spared: set[int]) -> list[tuple[int, int]]:
        """Take in the segments discovery found in ``perception``'s frame (SceneMemory._discover): ids go
        to ``taken`` and to ``created`` or ``updated``; the unknown objects under a segment over two of
        them go to ``spared``.

        Returns:
            The merges of unknown objects into named ones (removed, survivor): ``name_unknown``.
        """
        near = sorted({int(c) for box in found.boxes for c in self._index.query(box)})
        table = _FrameOverlaps(found.boxes, [self._tracks[c] for c in near], self._segments)
        for k in range(len(found)):
            points = found.points[k]
            keys = point_keys(points, self.config.geometry_voxel)
            obj_id, holding, inside = self._fit(found.boxes[k], keys, taken, table, k)
            if obj_id == SKIP:
                spared.update(holding)  # two things seen as one: both are there, neither is missed
                continue
            if obj_id is not None and not self._consistent(obj_id, found.boxes[k], inside.get(obj_id)):
                spared.add(obj_id)  # not its extent (a smear of mixed depth, or it and its neighbour): no evidence
                continue
            detection = Observation(found.boxes[k], float(found.scores[k]), UNKNOWN_CLASS, points, False,
                                   float(found.surround_z[k]))
            if obj_id is None:
                obj_id = self._create(detection, perception)
                created.append(obj_id)
            else:
                self._fusion.observe(self._tracks[obj_id], detection, perception)
                updated.append(obj_id)
            track = self._tracks[obj_id]
            if track.wants_colour():
                track.add_colour(sample_colour(perception.frame.color, found.pixels[k]), float(found.scores[k]))
            taken.add(obj_id)
            segments = self._segments[obj_id] = [*self._segments.get(obj_id, [])[1 - _SEGMENTS_KEPT:], found.boxes[k]]
            if len(segments) >= 2:  # the segment the others agree with most: the thing as a whole view shows it
                track.place_box(_consensus(segments))  # (the union of every view's voxels is wider: the views' poses
                self._index.update(obj_id, track.box)  # and the mixed depth at its edges disagree by centimetres)
        for gone in [i for i in self._segments if i not in self._tracks]:
            del self._segments[gone]
        return self.name_unknown(taken)

    def _consistent(self, obj_id: int, box: np.ndarray, inside: np.ndarray | None = None) -> bool:
        """Whether a segment keeps the extent of the unknown object it fits: it agrees with one of the object's
        earlier segments (``extents_agree``); an object with none yet (just loaded) takes any. A thing gives much
        the same segment from every look; a smear of mixed depth along a monitor's edge lies along each view's
        rays, and two things seen as one are larger than either. ``inside``: the box's intersection volumes with
        those segments, when known (``_fit``)."""
        earlier = self._segments.get(obj_id)
        ratio = self.config.unknown_extent_ratio
        return not earlier or bool(extents_agree(box, np.array(earlier), ratio, inside).any())

    def reset(self) -> None:
        self._segments.clear()

    def confident_named(self, track: Track) -> bool:
        """Whether a track is a named object the memory publishes (and not furniture things rest on)."""
        return (track.class_name != UNKNOWN_CLASS and sure(track, self.config.publish_confidence)
                and class_key(track.class_name) not in SUPPORT_CLASSES)

    def name_unknown(self, taken: set[int]) -> list[tuple[int, int]]:
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
            if named is None or not self.confident_named(named):
                continue
            others = [self._tracks[int(c)] for c in self._index.query(named.box)
                      if self._tracks[int(c)].class_name == UNKNOWN_CLASS]
            if not others:
                continue
            iou = overlaps(named.box[None], np.array([t.box for t in others]))[0][0]
            blocks = sampled_blocks(named.geometry.keys if named.geometry is not None else None)
            cfg = self.config
            for other in (t for t, v in zip(others, iou, strict=True)
                          if v > cfg.iou_threshold or geometry_fit(blocks, t) >= cfg.geometry_match):
                del self._tracks[other.id]
                self._index.remove(other.id)
                if other.id < named.id:  # the older id survives, as in every merge
                    merges.append((named.id, other.id))
                    del self._tracks[named.id]
                    self._index.remove(named.id)
                    named.take_id_of(other)
                    self._tracks[named.id] = named
                    self._index.insert(named.id, named.box)
                else:
                    merges.append((other.id, named.id))
        return merges

    def fit_segment(self, box: np.ndarray, keys: np.ndarray | None,
                    taken: set[int]) -> tuple[int | None, list[int]]:
        """The unknown object a segment is (the best fit: box IoU above ``UNKNOWN_SAME``, or
        ``geometry_match`` of its voxels among the object's own, those its box is fitted to: two things side
        by side must not grow one of them); None when it is a new one; ``SKIP`` when it lies on a
        confident named object (a chair's backrest seen over the table; not furniture that things rest on)
        or on two unknown objects at once (two things that touch, seen as one). Named objects the memory
        is unsure of do not count: the geometry shows that something is there, not that the detector named
        it right. An unknown object grows only as far as a compact thing can (its shape prior,
        memory/class_shapes.py). Also returns the unknown objects that hold part of the segment."""
        best, holding, _ = self._fit(box, keys, taken)
        return best, holding

    def _fit(self, box: np.ndarray, keys: np.ndarray | None, taken: set[int], table: _FrameOverlaps | None = None,
             k: int = 0) -> tuple[int | None, list[int], dict[int, np.ndarray]]:
        """``fit_segment``, and the box's intersection volumes with each unknown candidate's latest segments (what
        ``_consistent`` asks next); ``table``: the frame's overlaps, ``box`` its ``k``-th segment."""
        cfg = self.config
        ids = [int(c) for c in self._index.query(box)]
        if not ids:
            return None, [], {}
        tracks = [self._tracks[c] for c in ids]
        if table is None:
            table, k = _FrameOverlaps(box[None], tracks, self._segments), 0
        inter, inside_segments = table.volumes(k, tracks, self._segments)
        boxes = np.array([t.box for t in tracks])
        iou = overlaps_of(box[None], boxes, inter[None])[0][0]
        inside = inter / max(float(np.prod(box[3:6])), 1e-9)
        blocks = sampled_blocks(keys)
        best, best_fit, holding = None, 0.0, []
        for j, track in enumerate(tracks):
            if track.class_name != UNKNOWN_CLASS:  # a part of a named object: in its box and on its voxels
                if self.confident_named(track) and (iou[j] > cfg.iou_threshold or (
                        inside[j] >= _NAMED_PART and geometry_fit(blocks, track) >= _NAMED_PART)):
                    return SKIP, [], {}
                continue
            # Unknown objects: their own voxels (those the box is fitted to), not the strays of one bad segment.
            own = track.geometry.keys[track.geometry.core(*core_rule(track, cfg))] if track.geometry else None
            geo = near_fraction(blocks, own) if blocks is not None and own is not None else 0.0
            same = fraction_in(keys, own) if keys is not None and own is not None else 0.0
            if geo >= _BRIDGE_SHARE:
                holding.append(track.id)
            fit = max(float(iou[j]), same)
            if (iou[j] > UNKNOWN_SAME or same >= cfg.geometry_match) and track.id not in taken and fit > best_fit \
                    and union_plausible(track.box, box, UNKNOWN_CLASS):
                best, best_fit = track.id, fit
        return (SKIP if len(holding) >= 2 else best), holding, inside_segments


class _FrameOverlaps:
    """The intersection volumes of a frame's segments with the objects near them and with those objects' latest
    segments, computed together (one call costs about a millisecond whatever its size, and a pair's volume is the
    same number in any batch); an object whose box or latest segments changed since is computed again when asked."""

    def __init__(self, segments: np.ndarray, tracks: list[Track], latest: dict[int, list[np.ndarray]]) -> None:
        self._segments = segments
        self._box = {t.id: t.box.copy() for t in tracks}
        self._latest = {t.id: latest.get(t.id, []) for t in tracks if t.class_name == UNKNOWN_CLASS}
        columns = [t.box for t in tracks] + [b for boxes in self._latest.values() for b in boxes]
        self._column = {t.id: j for j, t in enumerate(tracks)}
        ends = len(tracks) + np.cumsum([len(b) for b in self._latest.values()], dtype=np.int64)
        self._span = {i: (int(end) - len(b), int(end)) for (i, b), end in zip(self._latest.items(), ends, strict=True)}
        self._table = (box_intersection_volume(segments, np.array(columns)) if columns
                       else np.zeros((len(segments), 0)))

    def volumes(self, k: int, tracks: list[Track], latest: dict[int, list[np.ndarray]]
                ) -> tuple[np.ndarray, dict[int, np.ndarray]]:
        """Segment ``k``'s (T,) intersection volumes with the tracks, and per unknown track with its latest segments
        (``latest``: each unknown object's list, replaced when it changes)."""
        inter = np.zeros(len(tracks))
        inside: dict[int, np.ndarray] = {}
        todo: list[tuple[int | None, int, np.ndarray]] = []  # (unknown id or None, track index, boxes) to compute
        for j, t in enumerate(tracks):
            if t.id in self._column and np.array_equal(self._box[t.id], t.box):
                inter[j] = self._table[k, self._column[t.id]]
            else:
                todo.append((None, j, t.box[None]))
            if t.class_name != UNKNOWN_CLASS:
                continue
            now, then = latest.get(t.id, []), self._latest.get(t.id)
            if then is not None and (now is then or not (now or then)):
                inside[t.id] = self._table[k, slice(*self._span[t.id])]
            else:
                todo.append((t.id, j, np.reshape(now, (-1, BOX_DIM))))
        if todo:
            fresh = box_intersection_volume(self._segments[k:k + 1], np.concatenate([b for *_, b in todo]))[0]
            ends = np.cumsum([len(b) for *_, b in todo])
            for (i, j, b), end in zip(todo, ends, strict=True):
                if i is None:
                    inter[j] = fresh[end - 1]
                else:
                    inside[i] = fresh[end - len(b):end]
        return inter, inside


def extents_agree(box: np.ndarray, others: np.ndarray, ratio: float, inside: np.ndarray | None = None) -> np.ndarray:
    """(M,) whether an upright box (9,) has the extent of each of the boxes (M, 9): at least half the smaller of the
    two lies in the larger, and their extents (the footprint's two, sorted, and the height) differ by at most
    ``ratio`` times. ``inside``: (M,) the box's intersection volumes with the others, when known."""
    mine = np.concatenate([np.sort(box[3:5]), box[5:6]])
    theirs = np.concatenate([np.sort(others[:, 3:5], axis=1), others[:, 5:6]], axis=1)
    alike = np.all(np.maximum(mine, theirs) <= ratio * np.minimum(mine, theirs), axis=1)
    inside = box_intersection_volume(box[None], others)[0] if inside is None else inside
    smaller = np.minimum(float(np.prod(box[3:6])), np.prod(others[:, 3:6], axis=1))
    return alike & (inside >= 0.5 * smaller)


def _consensus(boxes: list[np.ndarray]) -> np.ndarray:
    """The upright box (9,) its segments (9,) agree on: the median centre, and the median extents along the axes
    of the segment whose centre lies nearest that."""
    b = np.array(boxes)
    centre = np.median(b[:, :3], axis=0)
    best = b[int(np.argmin(np.linalg.norm(b[:, :3] - centre, axis=1)))]
    turn = b[:, 6] - best[6]
    c, s = np.abs(np.cos(turn)), np.abs(np.sin(turn))
    out = best.copy()
    out[:3] = centre
    out[3] = np.median(c * b[:, 3] + s * b[:, 4])  # each box's extent along the chosen axes
    out[4] = np.median(s * b[:, 3] + c * b[:, 4])
    out[5] = np.median(b[:, 5])
    return out
