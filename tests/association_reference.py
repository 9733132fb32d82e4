"""The object map's association as it was before it judged a frame's pairs as arrays (issue 41): a slow
reference that tests compare the memory with, frame for frame.

``ReferenceAssociation.matches`` judges each (query, object) pair on its own (``_fit_of``) with the
geometry fit by 27 binary searches per voxel (``near_fraction``), the class-size check per pair and
numpy's ``isin``; its merge pass asks each object alone once a merge has changed the objects; everything
else is the memory's own.
"""

from __future__ import annotations

import numpy as np

from embodied_ros.geometry.boxes import BOX_DIM
from embodied_ros.geometry.iou import box_iou_2d
from embodied_ros.memory.association import (
    UNKNOWN_SAME,
    Association,
    Queries,
    _spheres_overlap,
    geometry_fit,
    overlaps,
    sampled_blocks,
)
from embodied_ros.memory.class_shapes import union_plausible
from embodied_ros.memory.discovery import UNKNOWN_CLASS
from embodied_ros.memory.neighbours import kept_apart
from embodied_ros.memory.track import Track
from embodied_ros.memory.visibility import Visibility


class ReferenceAssociation(Association):
    """``Association`` with the per-pair matching it had before issue 41."""

    def matches(self, q: Queries, views: dict[int, Visibility],
                with_queries: bool = False) -> tuple[list[list[int]], np.ndarray]:
        n = len(q.boxes)
        near = [{int(c) for c in self._index.query(b) if c != q.exclude[i]} for i, b in enumerate(q.boxes)]
        found = [set(f) for f in near]
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

    def merge_pass(self, ids: list[int]) -> list[tuple[int, int]]:
        ids = [i for i in ids if i in self._tracks]
        merges: list[tuple[int, int]] = []
        for obj_id, hits in zip(ids, self._duplicates_of(ids), strict=True):
            if obj_id in self._tracks and (hits or merges):
                merges += self._merge_duplicates(obj_id)
        return merges

    def _fit_of(self, q: Queries, i: int, track: Track, iou: float, ios: float, i2d: float | None,
                near: bool) -> float | None:
        cfg = self.config
        name = q.names[i]
        if (name == UNKNOWN_CLASS) != (track.class_name == UNKNOWN_CLASS):
            return None
        if name == UNKNOWN_CLASS and q.tracks is not None:
            return iou if iou > UNKNOWN_SAME else None
        same = track.class_name == name
        lifted = track.geometry is not None or q.keys[i] is not None
        fit = iou if self.same_class(track.class_name, name) else 0.0
        hit = fit > cfg.iou_threshold or (same and ios > cfg.containment_threshold)
        if lifted and q.tracks is not None and not same:
            hit &= self._compatible(track, name) and self._compatible(q.tracks[i], track.class_name)
        if self._compatible(track, name):
            blocks = sampled_blocks(q.keys[i])
            geo = geometry_fit(blocks, track) if near and q.may_touch(i, track.geometry) else 0.0
            hit |= geo >= cfg.geometry_match > 0
            fit = max(fit, geo)
            if i2d is not None:
                hit |= i2d >= cfg.image_match
                fit = max(fit, i2d)
        if not hit or (lifted and not union_plausible(track.box, q.boxes[i], track.class_name)):
            return None
        if lifted and q.tracks is not None and not (same or union_plausible(track.box, q.boxes[i], name)):
            return None
        if q.tracks is not None and kept_apart(q.tracks[i], track):
            return None
        return fit
