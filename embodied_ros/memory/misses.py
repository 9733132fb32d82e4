"""Per frame, the memory's objects in view that no detection took: which they are, and the evidence they lose.

``objects_in_view`` says how the objects near the camera fall in the frame (memory/visibility.py, on their
``surface_samples``); ``take_misses`` counts a miss against those in view and not hidden, more where the
frame sees through their place (memory/existence.py's looks), and forgets those that fall low enough.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING

import numpy as np

from ..detections import FramePerception
from ..frame import Frame
from .config import MemoryConfig
from .existence import place_of
from .spatial_index import SpatialHashGrid
from .visibility import Visibility, box_samples, may_be_in_view, visibility

if TYPE_CHECKING:
    from .track import Track

_VIEW_SAMPLES = 64  # surface points per object in the visibility test
_VIEW_RADIUS = 3.0  # metres: objects within twice this of the view's middle are tested


def surface_samples(track: Track) -> tuple[np.ndarray, float]:
    """(P, 3) world points of an object for visibility tests and the depth tolerance (m) they need: voxel
    centroids of its geometry (0), or points inside its box when it has none (half its largest extent: the
    box's own front surface hides its inside)."""
    if track.geometry is not None and len(track.geometry) >= 4:
        return track.geometry.sample(_VIEW_SAMPLES), 0.0
    return box_samples(track.box), 0.5 * float(track.box[3:6].max())


def objects_in_view(frame: Frame, tracks: dict[int, Track], index: SpatialHashGrid) -> dict[int, Visibility]:
    """How the objects near the camera fall in this frame, by id."""
    R, t = frame.T_world_camera[:3, :3], frame.T_world_camera[:3, 3]
    middle = t + R[:, 2] * _VIEW_RADIUS
    query = np.array([*middle, 2 * _VIEW_RADIUS, 2 * _VIEW_RADIUS, 2 * _VIEW_RADIUS, 0.0, 0.0, 0.0])
    ids = [int(i) for i in index.query(query)]
    if not ids:
        return {}
    samples, tolerances, bounds = [], [], []
    for i in ids:
        track = tracks[i]
        points, tolerance = surface_samples(track)
        samples.append(points)
        tolerances.append(tolerance)
        if tolerance == 0.0:  # the geometry's samples: their bounds kept until the geometry changes
            bounds.append(track.geometry.sample_bounds(_VIEW_SAMPLES))
        else:
            bounds.append(np.stack([points.min(axis=0), points.max(axis=0)]))
    # Objects none of whose samples can fall in the image are not in view: skipped, as their
    # Visibility would say nothing (no sample seen, hidden or seen through).
    bounds = np.array(bounds)
    keep = np.flatnonzero(may_be_in_view(bounds[:, 0], bounds[:, 1], frame))
    ids, samples = [ids[k] for k in keep], [samples[k] for k in keep]
    tolerances = [tolerances[k] for k in keep]
    if not ids:
        return {}
    return dict(zip(ids, visibility(samples, np.array(tolerances), frame), strict=True))


def take_misses(config: MemoryConfig, tracks: dict[int, Track], index: SpatialHashGrid,
                views: dict[int, Visibility], taken: set[int], perception: FramePerception,
                kept: Container[int] = ()) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Evidence against the objects in view but not detected; forget (remove from ``tracks`` and
    ``index``) those that fall too low, except the ids in ``kept`` (objects the map believed: only a clear
    look at their empty place lets them go, memory/changes.py).

    Returns:
        (ids that lost evidence, ids forgotten).
    """
    cfg = config
    place = place_of(perception.viewpoint, cfg.existence_place)
    missed, forgotten = [], []
    for obj_id, view in views.items():
        track = tracks.get(obj_id)
        if track is None or obj_id in taken:
            continue
        change = 0.0
        if view.through_fraction >= 0.5:
            change += cfg.existence_through
        elif view.seen_fraction >= cfg.view_fraction and view.min_side_px() >= cfg.view_min_px:
            change += cfg.existence_miss
            track.add_miss()
        if change == 0.0:
            continue
        missed.append(obj_id)
        track.add_evidence(change, place, perception.stamp_ns, cfg)
        if (track.log_odds < 0.0 and perception.stamp_ns - track.last_ns > cfg.forget_after_s * 1e9
                and obj_id not in kept):
            del tracks[obj_id]
            index.remove(obj_id)
            forgotten.append(obj_id)
    return tuple(sorted(missed)), tuple(sorted(forgotten))
