"""Discovery's steps done together give the one-at-a-time steps' numbers (issue 41): the standing things of real
kitchen frames against tests/discovery_reference.py's loop over pieces, a frame's overlap table against one overlap
computation per segment, and a support height from one contact look-up against a look-up of its own."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from discovery_reference import standing_things as standing_things_reference

import embodied_ros.memory.discovery as discovery_module
from embodied_ros.detections import Detections3D, FramePerception
from embodied_ros.frame import Frame
from embodied_ros.geometry.iou import box_intersection_volume
from embodied_ros.memory.discovery import UNKNOWN_CLASS
from embodied_ros.memory.room_surfaces import SupportMap
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.memory.standing_things import standing_things
from embodied_ros.memory.track import Track, confident, sure
from embodied_ros.memory.unknown_objects import _FrameOverlaps
from embodied_ros.recordings import open_source

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"


@pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"redkitchen frames not found at {KITCHEN}")
def test_standing_things_are_the_piece_by_piece_ones_on_kitchen_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    compared: list[int] = []

    def both(*args: object) -> list[tuple]:
        got, want = standing_things(*args), standing_things_reference(*args)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(g[0], w[0])  # the box, bit for bit
            for a, b in zip(g[1:4], w[1:4], strict=True):  # its points, rows and columns
                np.testing.assert_array_equal(a, b)
            assert g[4] == w[4]  # the support's height
        compared.append(len(want))
        return got

    monkeypatch.setattr(discovery_module, "standing_things", both)
    memory = SceneMemory()  # its floor estimate reaches discovery as it would in a run
    with open_source(KITCHEN) as source:
        for frame in source.frames(max_frames=24):
            if isinstance(frame, Frame):
                memory.update(FramePerception(frame.index, frame.stamp_ns,
                                              Detections3D.empty(("cup",), frame.world_frame),
                                              viewpoint=frame.T_world_camera[:3, 3].copy(), frame=frame))
    assert len(compared) >= 20 and sum(compared) >= 20  # keyframes looked at, and things found on them


def _track(i: int, box: np.ndarray, name: str) -> Track:
    return Track(i, box, 1.0, 1.0, {name: 1.0}, name, 1, 0, 0, 0, 0)


def _upright(rng: np.random.Generator, n: int) -> np.ndarray:
    boxes = np.zeros((n, 9))
    boxes[:, :3] = rng.uniform(0.0, 0.4, (n, 3))
    boxes[:, 3:6] = rng.uniform(0.05, 0.3, (n, 3))
    boxes[:, 6] = rng.uniform(-1.5, 1.5, n)
    return boxes


@pytest.mark.parametrize("seed", range(4))
def test_a_frames_overlap_table_is_one_overlap_computation_per_segment(seed: int) -> None:
    rng = np.random.default_rng(seed)
    segments = _upright(rng, 6)
    tracks = [_track(i, b, UNKNOWN_CLASS if i % 3 else "cup") for i, b in enumerate(_upright(rng, 9))]
    latest = {t.id: list(_upright(rng, int(rng.integers(0, 4)))) for t in tracks if t.class_name == UNKNOWN_CLASS}
    table = _FrameOverlaps(segments, tracks, latest)
    # During the frame an object is observed (its box moves, a segment joins its latest) and one is created.
    tracks[1].box = tracks[1].box + np.array([0.03, -0.02, 0.01, 0, 0, 0, 0.2, 0, 0])
    latest[2] = [*latest[2], segments[0]]
    tracks.append(_track(100, segments[3].copy(), UNKNOWN_CLASS))
    for k in range(len(segments)):
        inter, inside = table.volumes(k, tracks, latest)
        np.testing.assert_array_equal(inter, box_intersection_volume(segments[k:k + 1],
                                                                     np.array([t.box for t in tracks]))[0])
        assert set(inside) == {t.id for t in tracks if t.class_name == UNKNOWN_CLASS}
        for i, got in inside.items():
            want = latest.get(i, [])
            np.testing.assert_array_equal(got, box_intersection_volume(segments[k:k + 1], np.reshape(want, (-1, 9)))[0])


def test_a_support_height_from_the_deepest_window_is_each_windows_own() -> None:
    rng = np.random.default_rng(0)
    supports = SupportMap()
    for height in (0.0, 0.72, 0.9):  # a floor, a table and a shelf, seen in patches
        xy = rng.uniform(0, 1, (400, 2))
        supports.add(np.column_stack([xy, height + rng.normal(0, 0.01, 400)]))
    points = np.column_stack([rng.uniform(0, 1, 60), rng.uniform(0, 1, 60), rng.choice([0.04, 0.78, 0.95], 60)])
    cells, layers = supports.cells_near(points, 0.12, 0.02)
    checked = 0
    for below in (0.05, 0.061, 0.08, 0.1, 0.12):
        window = layers >= -int(np.ceil(below / supports.layer))
        for part in np.array_split(np.arange(len(points)), 6):
            got = supports.height_of(points[part], cells[part] & window, layers)
            want = supports.height_under(points[part], below, 0.02)
            assert got == want or (np.isnan(got) and np.isnan(want))
            checked += not np.isnan(want)
    assert checked >= 10


@pytest.mark.parametrize("least", [0.5, 0.7, 0.93])
def test_the_sure_tracks_by_log_odds_first_are_those_of_that_confidence(least: float) -> None:
    rng = np.random.default_rng(0)
    boundary = math.log(least / (1.0 - least))
    tracks = []
    for k in range(400):  # log-odds around the boundary, down to a few ulps; some boxes no cup can have
        box = np.array([0, 0, 0, 0.1, 0.1, 0.1, 0, 0, 0.0]) * (1.0 if k % 5 else 30.0)
        track = _track(k, box, "cup")
        track.log_odds = boundary + rng.choice([-1, 1]) * 10.0 ** -rng.uniform(0, 15)
        tracks.append(track)
    want = [t for t in tracks if t.confidence >= least]
    assert confident(tracks, least) == want and [t for t in tracks if sure(t, least)] == want
    assert 0 < len(want) < len(tracks)
