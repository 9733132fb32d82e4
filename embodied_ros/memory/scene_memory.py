"""The scene memory: world-frame 3D detections accumulated over time into persistent objects.

Per frame (see DESIGN.md, Accumulation): detections scoring below ``score_threshold`` are
dropped; the rest, highest score first, are associated with the memory through the spatial
index and the exact 9-DoF IoU. A detection whose IoU with an object is strictly above
``iou_threshold`` is that object (class-agnostic by default): the best-IoU object not yet
taken in this frame takes it. Within a frame, greedy by score, a detection is a duplicate and
is suppressed, as non-maximum suppression would, when it overlaps a better detection of the
same frame above the threshold or when all the objects it matches were already taken by
better detections. Otherwise it becomes a new object. A fused object that now overlaps
another above the threshold is merged into the older one, so duplicates of one physical
object do not pile up.

Ids: integers from 0, never reused by one memory, not after a merge (the older id survives)
and not after ``reset()`` (the counter keeps going, so an RViz marker or a grounding answer
holding an id never names a different object); ``save``/``load`` keep the counter.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..detections import FramePerception, class_key
from ..errors import FrameError, InputError
from ..geometry.boxes import BOX_DIM, box_volumes
from ..geometry.iou import box_intersection_volume
from .box_fusion import canonical_box, face_box, fuse_boxes
from .config import MemoryConfig, ScoreMode
from .object_colour import ColourAccumulator, colour_name, detection_samples
from .scene_object import MemorySnapshot, SceneObject, UpdateResult
from .spatial_index import SpatialHashGrid

__all__ = ["MemorySnapshot", "SceneMemory", "SceneObject", "UpdateResult"]

FORMAT = "embodied_ros/scene_memory"
FORMAT_VERSION = 1

# Classes whose front lies across their depth, along the shorter horizontal extent, and those
# whose front lies along the longer one (a bed's foot); MemoryConfig.front_from_shape. Names as
# the detectors give them (COCO's "couch", "tv"), as detections.class_key writes them.
SHORT_FRONT: frozenset[str] = frozenset({"sofa", "couch", "cabinet", "shelf", "bookshelf", "bookcase", "monitor",
                                         "tv", "tvmonitor", "door", "window"})
LONG_FRONT: frozenset[str] = frozenset({"bed"})


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


@dataclass
class _Track:
    """Mutable state of one object inside the memory."""

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
    seen_from: np.ndarray = field(default_factory=lambda: np.zeros(2))  # sum of score x unit direction to viewpoints
    colour: ColourAccumulator = field(default_factory=ColourAccumulator)  # its pixels' colour over all views
    cached: SceneObject | None = field(default=None, repr=False)


class SceneMemory:
    """Persistent objects fused from per-frame world-frame detections; thread-safe.

    Args:
        score_threshold, iou_threshold, max_per_class, containment_threshold, min_observations,
            class_agnostic, score_mode, score_ema, max_fusion_weight, cell_size, front_from_views,
            front_from_shape: see
            :class:`MemoryConfig` (same names and defaults).

    Raises:
        ConfigError: if a parameter cannot work.
    """

    def __init__(
        self,
        *,
        score_threshold: float = 0.075,
        iou_threshold: float = 0.15,
        max_per_class: int = 10,
        containment_threshold: float = 0.5,
        min_observations: int = 2,
        class_agnostic: bool = True,
        score_mode: ScoreMode | str = ScoreMode.MAX,
        score_ema: float = 0.3,
        max_fusion_weight: float = 20.0,
        cell_size: float = 1.0,
        front_from_views: bool = True,
        front_from_shape: bool = True,
    ) -> None:
        self.config = MemoryConfig(
            score_threshold=score_threshold, iou_threshold=iou_threshold, max_per_class=max_per_class,
            containment_threshold=containment_threshold, min_observations=min_observations,
            class_agnostic=class_agnostic, score_mode=score_mode,  # type: ignore[arg-type]  # str accepted
            score_ema=score_ema, max_fusion_weight=max_fusion_weight, cell_size=cell_size,
            front_from_views=front_from_views, front_from_shape=front_from_shape,
        )
        self._lock = threading.RLock()
        self._tracks: dict[int, _Track] = {}
        self._index = SpatialHashGrid(self.config.cell_size)
        self._next_id = 0
        self._frame_id = ""
        self._vocabulary: tuple[str, ...] = ()
        self._last_frame = (-1, 0)
        self._n_updates = 0
        self._snapshot: MemorySnapshot | None = None

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

    # ------------------------------------------------------------------ update

    def update(self, perception: FramePerception) -> UpdateResult:
        """Fuse one frame's world-frame detections into the memory.

        The cost depends on the detections and their neighbourhoods, not on the number of
        objects: candidates come from the spatial index, and the exact IoUs of a frame are
        computed in two or three batched calls.

        Raises:
            FrameError: if the detections are in another frame than the memory's objects.
        """
        det = perception.detections
        with self._lock:
            self._n_updates += 1
            self._last_frame = (int(perception.frame_index), int(perception.stamp_ns))
            self._snapshot = None
            self._add_vocabulary(det.class_names)
            if len(det) == 0:
                return UpdateResult()
            if self._frame_id and det.frame_id != self._frame_id:
                raise FrameError(f"frame {perception.frame_index}: detections are in frame '{det.frame_id}', "
                                 f"the scene memory holds objects in '{self._frame_id}'")
            self._frame_id = det.frame_id
            valid = np.all(np.isfinite(det.boxes), axis=1) & np.all(det.boxes[:, 3:6] > 0, axis=1)
            valid &= np.isfinite(det.scores)
            keep = valid & (det.scores >= self.config.score_threshold)
            order = np.flatnonzero(keep)
            order = order[np.argsort(-det.scores[order], kind="stable")]  # greedy: best detection first
            boxes = det.boxes[order]
            scores = np.clip(det.scores[order], 0.0, 1.0)
            names = [det.class_names[i] for i in det.labels[order]]

            # Objects present at the start of the frame keep their boxes until a detection takes
            # them, so one batched IoU call serves the whole frame.
            hits, iou_dd = self._matches_batch(boxes, names, with_queries=True)
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
                if free:
                    obj_id = free[0]
                    self._observe(self._tracks[obj_id], boxes[k], float(scores[k]), names[k], perception)
                    updated.append(obj_id)
                else:
                    obj_id = self._create(boxes[k], float(scores[k]), names[k], perception)
                    created.append(obj_id)
                track = self._tracks[obj_id]
                if track.colour.wants_sample(track.n_obs):  # the colour of the detection's pixels
                    track.colour.add(detection_samples(perception, order[k:k + 1])[0], float(scores[k]))
                taken.add(obj_id)
                used.append(k)
            merged = self._merge_pass(sorted(taken))
            new = set(created)
            return UpdateResult(
                created=tuple(i for i in created if i in self._tracks),
                updated=tuple(sorted({i for i in updated + [s for _, s in merged] if i in self._tracks} - new)),
                merged=tuple(merged),
                n_low_score=int(np.count_nonzero(valid & ~keep)),
                n_suppressed=n_suppressed,
                n_invalid=int(np.count_nonzero(~valid)),
            )

    def _add_vocabulary(self, names: tuple[str, ...]) -> None:
        if not set(names) <= set(self._vocabulary):
            self._vocabulary += tuple(n for n in dict.fromkeys(names) if n not in self._vocabulary)

    def _same_class(self, a: str, b: str) -> bool:
        return self.config.class_agnostic or a == b

    def _matches_batch(self, boxes: np.ndarray, names: list[str], exclude: list[int] | None = None,
                       with_queries: bool = False) -> tuple[list[list[int]], np.ndarray]:
        """Per query box, ids of objects with IoU > threshold (class rule applied), best IoU first.

        One IoU call serves all queries (the IoU's fixed cost per call dominates at these sizes).

        Args:
            boxes: (Q, 9) query boxes, world frame.
            names: class name of each query (used when not class-agnostic).
            exclude: per query, an object id to leave out (the query object itself), or None.
            with_queries: also return the (Q, Q) IoUs of the queries among themselves.

        Returns:
            The per-query id lists and the (Q, Q) query IoUs (zeros unless ``with_queries``).
        """
        n = len(boxes)
        skip = [-1] * n if exclude is None else exclude
        found = [[int(c) for c in self._index.query(b) if c != skip[q]] for q, b in enumerate(boxes)]
        union = np.array(sorted({c for f in found for c in f}), dtype=np.int64)
        others = [self._tracks[int(c)].box for c in union]
        if with_queries and n > 1 and (len(union) or _spheres_overlap(boxes)):
            iou, ios = _overlaps(boxes, np.concatenate([boxes, np.array(others).reshape(-1, BOX_DIM)]))
            iou_qq, iou, ios = iou[:, :n], iou[:, n:], ios[:, n:]
        elif len(union):
            iou, ios = _overlaps(boxes, np.array(others))
            iou_qq = np.zeros((n, n))
        else:
            return [[] for _ in range(n)], np.zeros((n, n))
        other_names = [self._tracks[int(c)].class_name for c in union]
        out: list[list[int]] = []
        for q in range(n):
            same = np.array([name == names[q] for name in other_names], dtype=bool)
            hit = (iou[q] > self.config.iou_threshold) | (same & (ios[q] > self.config.containment_threshold))
            col = np.flatnonzero(hit)
            col = col[np.lexsort((union[col], -ios[q, col], -iou[q, col]))]  # best IoU, then containment, older id
            out.append([int(c) for c in union[col]
                        if c != skip[q] and self._same_class(self._tracks[int(c)].class_name, names[q])])
        return out, iou_qq

    def _merge_pass(self, ids: list[int]) -> list[tuple[int, int]]:
        """Merge duplicates of the objects touched by a frame; (removed, survivor) pairs."""
        tracks = [self._tracks[i] for i in ids]
        hits, _ = self._matches_batch(np.array([t.box for t in tracks]).reshape(-1, BOX_DIM),
                                      [t.class_name for t in tracks], ids)
        merges: list[tuple[int, int]] = []
        for obj_id, row in zip(ids, hits, strict=True):
            # The batched IoUs hold until the first merge changes a box; from then on, recompute.
            if obj_id in self._tracks and (row or merges):
                merges += self._merge_duplicates(obj_id)
        return merges

    def _create(self, box: np.ndarray, score: float, name: str, perception: FramePerception) -> int:
        obj_id = self._next_id
        self._next_id += 1
        frame, stamp = int(perception.frame_index), int(perception.stamp_ns)
        track = _Track(obj_id, canonical_box(box), score, score, {name: score}, name, 1, frame, frame, stamp, stamp)
        self._seen_from(track, score, perception)
        self._tracks[obj_id] = track
        self._index.insert(obj_id, track.box)
        return obj_id

    def _observe(self, track: _Track, box: np.ndarray, score: float, name: str, perception: FramePerception) -> None:
        track.box = fuse_boxes(track.box, track.weight, box, score)
        track.weight = min(track.weight + score, self.config.max_fusion_weight)
        if self.config.score_mode is ScoreMode.MAX:
            track.score = max(track.score, score)
        else:
            track.score = (1.0 - self.config.score_ema) * track.score + self.config.score_ema * score
        track.evidence[name] = track.evidence.get(name, 0.0) + score
        if track.evidence[name] > track.evidence[track.class_name]:
            track.class_name = name
        track.n_obs += 1
        track.last_frame, track.last_ns = int(perception.frame_index), int(perception.stamp_ns)
        self._seen_from(track, score, perception)
        track.cached = None
        self._index.update(track.id, track.box)

    def _seen_from(self, track: _Track, score: float, perception: FramePerception) -> None:
        """Add a sighting's direction to the track's evidence and turn its front that way."""
        if not self.config.front_from_views or perception.viewpoint is None:
            return
        ray = np.asarray(perception.viewpoint, dtype=np.float64).reshape(3)[:2] - track.box[:2]
        length = float(np.linalg.norm(ray))
        if np.isfinite(length) and length > 1e-6:
            track.seen_from = track.seen_from + score * ray / length
            self._turn_front(track)

    def _turn_front(self, track: _Track) -> None:
        """Write the track's box with its front towards the directions it was seen from."""
        if self.config.front_from_views and np.any(track.seen_from):
            track.box = face_box(track.box, track.seen_from, self._front_along(track.class_name))

    def _front_along(self, class_name: str) -> str | None:
        """Which horizontal extent the class's front lies along (MemoryConfig.front_from_shape)."""
        if not self.config.front_from_shape:
            return None
        key = class_key(class_name)
        return "short" if key in SHORT_FRONT else "long" if key in LONG_FRONT else None

    def _matches(self, box: np.ndarray, name: str, exclude: int = -1) -> list[int]:
        return self._matches_batch(box[None], [name], [exclude])[0][0]

    def _merge_duplicates(self, obj_id: int) -> list[tuple[int, int]]:
        """Merge every object overlapping ``obj_id`` above the threshold into the older one, repeatedly."""
        merges: list[tuple[int, int]] = []
        while True:
            track = self._tracks[obj_id]
            hits = self._matches(track.box, track.class_name, exclude=obj_id)
            if not hits:
                return merges
            older, younger = sorted((obj_id, hits[0]))
            self._absorb(self._tracks[older], self._tracks.pop(younger))
            self._index.remove(younger)
            merges.append((younger, older))
            obj_id = older

    def _absorb(self, keep: _Track, gone: _Track) -> None:
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
        keep.seen_from = keep.seen_from + gone.seen_from
        keep.colour.merge(gone.colour)
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
        """Objects seen at least ``min_observations`` times, at most ``max_per_class`` per class
        (highest score first), best score first overall."""
        return self.snapshot().published(self.config.max_per_class, self.config.min_observations)

    def get(self, obj_id: int) -> SceneObject | None:
        """The object with id ``obj_id``, or None if there is none (never was, or merged away)."""
        with self._lock:
            track = self._tracks.get(int(obj_id))
            return None if track is None else self._object(track)

    def snapshot(self) -> MemorySnapshot:
        """An immutable copy of the current state (cached until the next change)."""
        with self._lock:
            if self._snapshot is None:
                objs = tuple(self._object(self._tracks[i]) for i in sorted(self._tracks))
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
            self._frame_id = ""
            self._last_frame = (-1, 0)
            self._n_updates = 0
            self._snapshot = None

    @staticmethod
    def _object(track: _Track) -> SceneObject:
        if track.cached is None:
            evidence = tuple(sorted(((n, float(v)) for n, v in track.evidence.items()), key=lambda p: (-p[1], p[0])))
            lab = track.colour.lab()
            track.cached = SceneObject(
                track.id, track.class_name, float(track.score), track.box.copy(), evidence, track.n_obs,
                track.first_frame, track.last_frame, track.first_ns, track.last_ns,
                colour_lab=lab, colour_name=colour_name(lab),
            )
        return track.cached

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
                "next_id": self._next_id,
                "objects": [
                    {
                        "id": t.id, "class_name": t.class_name, "score": t.score,
                        "box": [float(v) for v in t.box], "class_scores": dict(t.evidence),
                        "n_observations": t.n_obs, "first_seen_frame": t.first_frame,
                        "last_seen_frame": t.last_frame, "first_seen_ns": t.first_ns,
                        "last_seen_ns": t.last_ns, "fusion_weight": t.weight,
                        "seen_from": [float(v) for v in t.seen_from],
                        "colour": t.colour.to_json(),
                    }
                    for t in (self._tracks[i] for i in sorted(self._tracks))
                ],
            }

    @classmethod
    def from_dict(cls, data: dict[str, Any], **overrides: Any) -> SceneMemory:
        """Rebuild a memory from ``to_dict()``'s document; keyword arguments override its parameters.

        Raises:
            InputError: if the document is not a scene memory of a known version.
        """
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise InputError(f"not a scene memory document (expected format '{FORMAT}')")
        if data.get("format_version") != FORMAT_VERSION:
            raise InputError(f"scene memory document version {data.get('format_version')!r} is not {FORMAT_VERSION}")
        try:
            config = MemoryConfig(**data["config"])
        except (KeyError, TypeError) as err:
            raise InputError(f"scene memory document has no valid config: {err}") from None
        memory = cls.from_config(replace(config, **overrides))
        try:
            memory._frame_id = str(data["frame_id"])
            memory._vocabulary = tuple(str(n) for n in data.get("vocabulary", ()))
            for o in data["objects"]:
                track = _Track(
                    int(o["id"]), np.array(o["box"], dtype=np.float64).reshape(BOX_DIM), float(o["fusion_weight"]),
                    float(o["score"]), {str(k): float(v) for k, v in o["class_scores"].items()},
                    str(o["class_name"]), int(o["n_observations"]), int(o["first_seen_frame"]),
                    int(o["last_seen_frame"]), int(o["first_seen_ns"]), int(o["last_seen_ns"]),
                    np.array(o.get("seen_from", (0.0, 0.0)), dtype=np.float64).reshape(2),
                    colour=ColourAccumulator.from_json(o.get("colour")),
                )
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
        tmp.write_text(json.dumps(self.to_dict(), indent=1))
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str], **overrides: Any) -> SceneMemory:
        """Read a memory written by ``save``; keyword arguments override its parameters.

        Raises:
            InputError: if the file is missing, not JSON or not a scene memory.
        """
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise InputError(f"{path}: cannot read the scene memory: {err}") from None
        try:
            return cls.from_dict(data, **overrides)
        except InputError as err:
            raise InputError(f"{path}: {err}") from None
