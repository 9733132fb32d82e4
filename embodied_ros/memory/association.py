"""Association: which objects of the scene memory a detection, or another object, is.

The rules are in memory/scene_memory.py's module docstring: box overlap, shared geometry, or an
image region that covers the object's seen region; objects that turn out to be one merge into the
older one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..geometry.boxes import BOX_DIM, box_volumes
from ..geometry.columns import column_max, column_min, sorted_unique
from ..geometry.iou import box_intersection_volume, box_iou_2d
from .class_shapes import parts_may_touch, union_plausible, unions_plausible
from .config import MemoryConfig
from .discovery import UNKNOWN_CLASS
from .neighbours import kept_apart
from .object_geometry import ObjectGeometry, fraction_in, near_fraction, neighbourhoods, unpack_voxels, voxel_keys
from .spatial_index import SpatialHashGrid
from .track import Track
from .visibility import Visibility

FRACTION_SAMPLES = 512  # voxels per query whose share on an object's geometry is measured
UNKNOWN_SAME = 0.3  # two unknown objects whose boxes overlap by more than this IoU are one


def overlaps(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, M) exact IoU and intersection over the smaller volume of (N, 9) and (M, 9) boxes."""
    return overlaps_of(a, b, box_intersection_volume(a, b))


def overlaps_of(a: np.ndarray, b: np.ndarray, inter: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``overlaps`` of boxes whose (N, M) intersection volumes ``inter`` are known."""
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


def sampled_blocks(keys: np.ndarray | None) -> np.ndarray | None:
    """The 3 x 3 x 3 neighbourhoods of at most ``FRACTION_SAMPLES`` of the voxel keys, evenly spread."""
    return None if keys is None else neighbourhoods(keys[::max(1, len(keys) // FRACTION_SAMPLES)])


def geometry_fit(blocks: np.ndarray | None, track: Track) -> float:
    """How much of a query's voxels (their neighbourhoods) lie on the object's geometry (0 without either)."""
    if blocks is None or track.geometry is None or len(track.geometry) == 0:
        return 0.0
    return near_fraction(blocks, track.geometry.keys)


def point_keys(points: np.ndarray | None, voxel_size: float) -> np.ndarray | None:
    """The sorted unique voxel keys of a detection's points (None without points or voxels)."""
    if points is None or not voxel_size or len(points) == 0:
        return None
    return sorted_unique(voxel_keys(points, voxel_size))


class Queries:
    """What association compares of a set of query boxes (detections or objects)."""

    def __init__(self, boxes: np.ndarray, names: list[str], keys: list[np.ndarray | None] | None = None,
                 boxes_2d: np.ndarray | None = None, exclude: list[int] | None = None,
                 tracks: list[Track] | None = None) -> None:
        self.boxes, self.names = boxes, names
        self.keys = keys if keys is not None else [None] * len(boxes)
        self.boxes_2d = boxes_2d
        self.exclude = exclude if exclude is not None else [-1] * len(boxes)
        self.tracks = tracks  # the queries are objects (merging), not detections
        self._samples: dict[int, np.ndarray] = {}
        self._bounds: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}

    def sample(self, i: int) -> np.ndarray:
        """The lattice indices (M, 3) of at most ``FRACTION_SAMPLES`` of query ``i``'s voxels, evenly spread
        (a fraction needs no more), computed once for all the objects it is compared with."""
        if i not in self._samples:
            keys = self.keys[i]
            self._samples[i] = unpack_voxels(keys[::max(1, len(keys) // FRACTION_SAMPLES)])
        return self._samples[i]

    def geometry_fit(self, i: int, track: Track) -> float:
        """``geometry_fit`` of query ``i``'s voxels on ``track``: the fraction of its sample within one voxel
        of the object's voxels (0 without either, or when their index bounds are apart)."""
        geometry = track.geometry
        if self.keys[i] is None or geometry is None or len(geometry) == 0 or not self.may_touch(i, geometry):
            return 0.0
        sample = self.sample(i)
        return float(geometry.near_count(sample)) / len(sample)

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
            self._bounds[i] = (tuple(column_min(ijk).tolist()), tuple(column_max(ijk).tolist()))
        lo, hi = self._bounds[i]
        return all(a - 1 <= b for a, b in zip(lo, theirs[1], strict=True)) and all(
            a <= b + 1 for a, b in zip(theirs[0], hi, strict=True))


class Association:
    """Matches queries to the memory's objects and merges duplicates (shares its track dict and index).

    Args:
        config: the memory's parameters.
        tracks: the memory's objects by id.
        index: the memory's spatial index of their boxes.
        absorb: fuses a duplicate (second) into the object that keeps its id (first).
    """

    def __init__(self, config: MemoryConfig, tracks: dict[int, Track], index: SpatialHashGrid,
                 absorb: Callable[[Track, Track], None]) -> None:
        self.config = config
        self._tracks = tracks
        self._index = index
        self._absorb = absorb

    def same_class(self, a: str, b: str) -> bool:
        """Whether detections of ``a`` and ``b`` suppress each other and match by box overlap."""
        return self.config.class_agnostic or a == b

    def _compatible(self, track: Track, name: str) -> bool:
        """Whether beyond box overlap a detection of ``name`` may be ``track`` (see Track.compatible)."""
        return track.compatible(name) if self.config.class_agnostic else name == track.class_name

    def matches(self, q: Queries, views: dict[int, Visibility],
                with_queries: bool = False) -> tuple[list[list[int]], np.ndarray]:
        """Per query, ids of the objects it is (memory/scene_memory.py's docstring), best fit first.

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
            iou, ios = overlaps(q.boxes, np.concatenate([q.boxes, np.array(others).reshape(-1, BOX_DIM)]))
            iou_qq, iou, ios = iou[:, :n], iou[:, n:], ios[:, n:]
        elif len(union):
            iou, ios = overlaps(q.boxes, np.array(others))
            iou_qq = np.zeros((n, n))
        else:
            return [[] for _ in range(n)], np.zeros((n, n))
        # Every (query, object) candidate pair at once.
        qi = np.repeat(np.arange(n), [len(f) for f in found])
        uj = np.searchsorted(union, np.array([c for f in found for c in sorted(f)], dtype=np.int64))
        tracks = [self._tracks[int(c)] for c in union[uj]]
        i2d = [image_fits[i].get(t.id) for i, t in zip(qi.tolist(), tracks, strict=True)]
        near_pair = np.array([t.id in near[i] for i, t in zip(qi.tolist(), tracks, strict=True)], dtype=bool)
        fit, ok = self._pair_fits(q, qi, tracks, iou[qi, uj], ios[qi, uj], i2d, near_pair)
        out: list[list[int]] = [[] for _ in range(n)]
        ids = union[uj]
        order = np.lexsort((ids, -ios[qi, uj], -fit, qi))  # per query: best fit, then most contained, then id
        for k in order[ok[order]].tolist():
            out[int(qi[k])].append(int(ids[k]))
        return out, iou_qq

    def _pair_fits(self, q: Queries, qi: np.ndarray, tracks: list[Track], iou: np.ndarray, ios: np.ndarray,
                   i2d: list[float | None], near: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """How well each query ``qi`` (P,) fits each object ``tracks`` (P): the best of its IoU, geometry and
        image fits, and whether it is that object at all (memory/scene_memory.py's docstring), for all
        pairs at once; ``i2d``: the IoU of the query's 2D box with the object's seen region in this image
        (None: not seen, or no image match); ``near``: their bounding spheres meet (else they can share no
        geometry).

        Objects built from points (lifted detections) see only parts of things, and their parts
        of neighbours overlap; for them, objects of different classes merge only when each was
        also seen as the other's class, and nothing joins an object past its class's size. A
        network's amodal boxes (no points) keep the demo's plain class-agnostic rule. Unknown objects
        become named ones only by a confident named object (name_unknown); two unknown objects are one
        when their boxes mostly agree (touching things share voxels).
        """
        cfg = self.config
        names = [q.names[i] for i in qi.tolist()]
        unknown_q = np.array([name == UNKNOWN_CLASS for name in names], dtype=bool)
        unknown_t = np.array([t.class_name == UNKNOWN_CLASS for t in tracks], dtype=bool)
        same = np.array([t.class_name == name for t, name in zip(tracks, names, strict=True)], dtype=bool)
        lifted = np.array([t.geometry is not None or q.keys[i] is not None
                           for i, t in zip(qi.tolist(), tracks, strict=True)], dtype=bool)
        fit = np.where(same | cfg.class_agnostic, iou, 0.0)
        hit = (fit > cfg.iou_threshold) | (same & (ios > cfg.containment_threshold))
        compatible = np.array([self._compatible(t, name) for t, name in zip(tracks, names, strict=True)], dtype=bool)
        if q.tracks is not None:
            across = lifted & ~same
            back = np.array([bool(a) and self._compatible(q.tracks[i], t.class_name)
                             for a, i, t in zip(across.tolist(), qi.tolist(), tracks, strict=True)], dtype=bool)
            hit &= ~across | (compatible & back)
        decided = unknown_q != unknown_t  # unknown and named never match by these rules
        if q.tracks is not None:
            decided |= unknown_q  # two unknown objects: their boxes' IoU alone
        plausible = np.ones(len(qi), dtype=bool)
        check = lifted & ~decided
        if check.any():
            at = np.flatnonzero(check)
            plausible[at] = unions_plausible(np.array([tracks[k].box for k in at]), q.boxes[qi[at]],
                                             [tracks[k].class_name for k in at])
        # The geometry fit matters only where the pair can still be the same object.
        for k in np.flatnonzero(compatible & ~decided & plausible).tolist():
            i = int(qi[k])
            geo = q.geometry_fit(i, tracks[k]) if near[k] else 0.0
            hit[k] |= geo >= cfg.geometry_match > 0
            fit[k] = max(fit[k], geo)
            if i2d[k] is not None:
                hit[k] |= i2d[k] >= cfg.image_match
                fit[k] = max(fit[k], i2d[k])
        ok = hit & ~(lifted & ~plausible) & ~decided
        if q.tracks is not None:  # a merge (memory/neighbours.py, memory/settling.py)
            for k in np.flatnonzero(ok).tolist():
                i = int(qi[k])
                if lifted[k] and not same[k] and not union_plausible(tracks[k].box, q.boxes[i], names[k]):
                    ok[k] = False  # the merged object takes the class with most evidence: either one's must fit it
                elif kept_apart(q.tracks[i], tracks[k]):
                    ok[k] = False
        if q.tracks is not None:
            both = unknown_q & unknown_t
            fit = np.where(both, iou, fit)
            ok |= both & (iou > UNKNOWN_SAME)
        return fit, ok

    # ------------------------------------------------------------------ merging

    def merge_pass(self, ids: list[int]) -> list[tuple[int, int]]:
        """Merge duplicates of the objects touched by a frame; (removed, survivor) pairs."""
        ids = [i for i in ids if i in self._tracks]
        merges: list[tuple[int, int]] = []
        pending = list(zip(ids, self._duplicates_of(ids), strict=True))
        while pending:
            obj_id, hits = pending.pop(0)
            if obj_id not in self._tracks or not hits:
                continue
            merges += self._merge_duplicates(obj_id)
            # The batched matches hold until a merge changes the objects: then the rest's again, in one batch
            # (each object's duplicates are the same asked alone or with others).
            rest = [i for i, _ in pending if i in self._tracks]
            pending = list(zip(rest, self._duplicates_of(rest), strict=True))
        return merges

    def _duplicates_of(self, ids: list[int]) -> list[list[int]]:
        """Per object, the objects that are it too: box overlap (as a detection's), or, for one
        class, shared geometry, or touching geometry of two parts that views cut at the image's edge."""
        if not ids:
            return []
        tracks = [self._tracks[i] for i in ids]
        keys = [t.geometry.keys if t.geometry is not None else None for t in tracks]
        queries = Queries(np.array([t.box for t in tracks]), [t.class_name for t in tracks], keys, exclude=ids,
                          tracks=tracks)
        out = self.matches(queries, {})[0]
        for track, hits in zip(tracks, out, strict=True):
            if track.geometry is None or self.config.geometry_merge <= 0:
                continue
            for c in (int(c) for c in self._index.query(track.box)):
                other = self._tracks[c]
                if c == track.id or c in hits or other.class_name != track.class_name or other.geometry is None \
                        or track.class_name == UNKNOWN_CLASS:
                    continue
                if self._parts_of_one(track, other) and union_plausible(track.box, other.box, track.class_name) \
                        and not kept_apart(track, other):
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
        sample = smaller.keys[::max(1, len(smaller.keys) // FRACTION_SAMPLES)]
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
