"""Track: an object's own updates (a detection fused in, a duplicate absorbed, an id taken over)."""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.memory.config import MemoryConfig, ScoreMode
from embodied_ros.memory.track import Track


def _track(obj_id: int, name: str, score: float, first: int, last: int, x: float = 0.0) -> Track:
    box = np.array([x, 0.0, 0.5, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    return Track(obj_id, box, score, score, {name: score}, name, last - first + 1, first, last, 10 * first, 10 * last)


def test_a_fused_detection_counts_and_its_class_wins_once_it_has_more_evidence() -> None:
    config = MemoryConfig(score_mode=ScoreMode.MAX)
    track = _track(0, "chair", 0.5, 1, 1)
    track.to_object()  # cached until the track changes
    track.fuse_detection(track.box.copy(), 0.4, "sofa", True, 2, 20, config)
    assert (track.class_name, track.n_obs, track.n_cut, track.last_frame, track.last_ns) == ("chair", 2, 1, 2, 20)
    assert track.score == pytest.approx(0.5) and track.cached is None
    track.fuse_detection(track.box.copy(), 0.4, "sofa", False, 3, 30, config)
    assert track.class_name == "sofa" and track.evidence == pytest.approx({"chair": 0.5, "sofa": 0.8})
    assert track.to_object().class_name == "sofa"


def test_an_absorbed_duplicate_gives_its_sightings_evidence_and_the_earliest_and_latest_frames() -> None:
    config = MemoryConfig(score_mode=ScoreMode.MAX, max_fusion_weight=10.0)
    keep, gone = _track(3, "table", 0.6, 5, 8), _track(7, "table", 0.9, 2, 12, x=0.2)
    gone.n_cut, gone.n_missed, keep.n_missed = 2, 1, 4
    keep.absorb(gone, config)
    assert keep.id == 3 and keep.n_obs == 4 + 11 and keep.n_cut == 2 and keep.n_missed == 1
    assert (keep.first_frame, keep.first_ns, keep.last_frame, keep.last_ns) == (2, 20, 12, 120)
    assert keep.score == pytest.approx(0.9) and keep.weight == pytest.approx(1.5)
    assert keep.evidence == pytest.approx({"table": 1.5})
    assert 0.0 < keep.box[0] < 0.2  # the boxes fused, weighted by their fusion weights


def test_a_track_taking_an_older_id_keeps_the_earlier_first_sighting() -> None:
    named, unknown = _track(9, "cup", 0.8, 6, 9), _track(4, "object", 0.5, 3, 7)
    named.to_object()
    named.take_id_of(unknown)
    assert (named.id, named.first_frame, named.first_ns, named.last_frame) == (4, 3, 30, 9)
    assert named.to_object().id == 4
