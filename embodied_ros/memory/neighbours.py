"""Two things side by side stay two: neighbours the map shows are never made one object.

A detector often boxes two neighbours together (two monitors on one wall, a magazine on the leaflets
beside it), and a lift of such a box takes in both. The object the detection joins then holds its
neighbour's voxels, its box grows over both, and the next merge makes the two one object with one box.
Two rules keep them apart:

* ``kept_apart``: two objects the map shows (each appeared with a settled box, memory/settling.py) whose
  shown boxes hardly overlap are two things; they are never merged. Furniture that can be seen in parts
  (a table seen in halves, memory/class_shapes.parts_may_touch) is left to the parts rule.
* ``without_neighbours``: a detection's points that lie on the own voxels of another object of its class
  that the map shows are that neighbour's; the object the detection joins does not take them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..detections import class_key
from ..geometry.iou import box_iou_3d
from .class_shapes import parts_may_touch
from .object_geometry import neighbourhoods, voxel_keys
from .spatial_index import SpatialHashGrid

if TYPE_CHECKING:
    from .track import Track

APART_IOU = 0.1  # shown boxes overlapping less than this are two things, not two views of one


def _shown(track: Track) -> np.ndarray | None:
    """The box the map shows of an object on the map, else None."""
    return track.settling.shown if track.settling.appeared else None


def kept_apart(a: Track, b: Track) -> bool:
    """Whether two objects must not merge: both are on the map, neither class is seen in parts, and
    their shown boxes overlap by less than ``APART_IOU``."""
    box_a, box_b = _shown(a), _shown(b)
    if box_a is None or box_b is None or parts_may_touch(a.class_name) or parts_may_touch(b.class_name):
        return False
    return float(box_iou_3d(box_a[None], box_b[None])[0, 0]) < APART_IOU


def without_neighbours(points: np.ndarray | None, name: str, own_id: int, tracks: dict[int, Track],
                       index: SpatialHashGrid, min_ratio: float) -> np.ndarray | None:
    """A detection's (N, 3) points without those within one voxel of the own voxels (covered in at least
    ``min_ratio`` of the frames that saw them) of another object of class ``name`` on the map."""
    if points is None or not len(points):
        return points
    lo, hi = points.min(axis=0), points.max(axis=0)
    query = np.array([*(0.5 * (lo + hi)), *(hi - lo + 0.1), 0.0, 0.0, 0.0])
    key = class_key(name)
    keep = np.ones(len(points), dtype=bool)
    for c in index.query(query):
        other = tracks.get(int(c))
        if other is None or other.id == own_id or other.geometry is None or not other.settling.appeared \
                or class_key(other.class_name) != key:
            continue
        own = other.geometry.keys[other.geometry.core(1, min_ratio)]
        if not len(own):
            continue
        blocks = neighbourhoods(voxel_keys(points, other.geometry.voxel_size))  # (N, 27)
        at = np.clip(np.searchsorted(own, blocks), 0, len(own) - 1)
        keep &= ~(own[at] == blocks).any(axis=1)
    return points if keep.all() else points[keep]
