"""Change events in the bag (/embodied/changes, /embodied/change_markers), objects.json's history, and
`embodied-ros changes RUN`; a synthetic room's second state and the truth of what changed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from embodied_ros.cli import main
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.change_events import ChangeKind, ChangeLog
from embodied_ros.messages.types import typestore
from embodied_ros.outputs.bag_writer import OutputTopics, SceneBagWriter
from embodied_ros.outputs.change_messages import RecentChanges, change_markers
from embodied_ros.outputs.objects_json import write_objects_json
from embodied_ros.synthetic import RevisitConfig, generate_scene, revisit

S = 1_000_000_000
CUP = np.array([1.0, 2.0, 0.8, 0.08, 0.08, 0.1, 0.0, 0.0, 0.0])


def _log() -> ChangeLog:
    log = ChangeLog()
    gone = log.add(ChangeKind.REMOVED, 3, "cup", "white", CUP, None, 10 * S, 30, 4 * S)
    log.add(ChangeKind.MOVED, 3, "cup", "white", CUP, CUP + [1.5, 0, 0, 0, 0, 0, 0, 0, 0], 12 * S, 36, 4 * S,
            (gone.seq,))
    log.add(ChangeKind.NEW, 9, "object", "red", None, CUP + [0, -1, -0.75, 0, 0, 0, 0, 0, 0], 13 * S, 39)
    return log


def test_the_bag_holds_each_change_and_the_markers_of_the_recent_ones(tmp_path: Path) -> None:
    log, topics = _log(), OutputTopics()
    with SceneBagWriter(tmp_path, write_inputs=False) as writer:
        for event in log.events():
            writer.write_changes(event.stamp_ns, "map", [event], log.current())
    with AnyReader([tmp_path], default_typestore=typestore()) as reader:
        got: dict[str, list] = {}
        for conn, stamp, raw in reader.messages():
            got.setdefault(conn.topic, []).append((stamp, reader.deserialize(raw, conn.msgtype)))
    changes = [m for _, m in got[topics.changes]]
    assert [(c.seq, c.kind, c.id, c.class_name) for c in changes] == [(1, 0, 3, "cup"), (2, 2, 3, "cup"),
                                                                      (3, 1, 9, "object")]
    moved = changes[1]
    assert list(moved.replaces) == [1] and moved.header.frame_id == "map" and moved.colour == "white"
    np.testing.assert_allclose(moved.old_box, CUP)
    np.testing.assert_allclose(moved.new_box[:3], CUP[:3] + [1.5, 0, 0])
    assert (moved.last_seen.sec, changes[2].old_box.tolist()) == (4, [0.0] * 9)
    assert [s for s, _ in got[topics.changes]] == [10 * S, 12 * S, 13 * S]  # at the stamp each was made
    markers = got[topics.change_markers][-1][1].markers
    kinds = {(m.ns, m.id) for m in markers[1:]}
    assert kinds == {("change_ghosts", 2), ("change_arrows", 2), ("change_boxes", 2), ("change_labels", 2),
                     ("change_boxes", 3), ("change_labels", 3)}  # the move: ghost, arrow, box; the new: box
    arrow = next(m for m in markers if m.ns == "change_arrows")
    assert [(p.x, p.y) for p in arrow.points] == [(1.0, 2.0), (2.5, 2.0)]  # from where it stood to where it went


def test_the_markers_show_the_recent_changes_and_are_drawn_again_only_when_those_change() -> None:
    recent = RecentChanges(window_s=2.0)
    current = _log().current()
    assert [e.seq for e in recent.to_draw(current, 13 * S)] == [2, 3]
    assert recent.to_draw(current, 13 * S) is None  # nothing new to draw
    assert [e.seq for e in recent.to_draw(current, 14.5 * S)] == [3]  # the move grew old
    assert recent.to_draw([], 100 * S) == [] and len(change_markers([], "map", 0).markers) == 1  # DELETEALL only


def test_changes_lists_a_runs_history(tmp_path: Path, capsys) -> None:
    write_objects_json(tmp_path / "objects.json", [], "map", extra={"changes": [e.to_dict() for e in
                                                                                 _log().current()]})
    assert main(["changes", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"2 changes in {tmp_path}: 1 moved, 0 removed, 1 new"
    assert "moved cup #3 (white) from (1.00, 2.00, 0.80) to (2.50, 2.00, 0.80), 1.5 m" in out[1]
    assert main(["changes", str(tmp_path), "--json"]) == 0
    assert [e["kind"] for e in json.loads(capsys.readouterr().out)] == ["moved", "new"]
    assert main(["changes", str(tmp_path / "absent")]) == 2
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "objects.json").write_text("{")
    assert main(["changes", str(tmp_path)]) == 2 and capsys.readouterr().err.startswith("embodied-ros: error: ")
    assert main(["changes", str(tmp_path / "absent"), str(tmp_path)]) == 2  # no map there
    assert "no memory.json" in capsys.readouterr().err


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_a_revisited_room_changes_as_its_truth_says(seed: int) -> None:
    scene = generate_scene(seed)
    visit = revisit(scene, RevisitConfig(moved=(2, 2), removed=(1, 1), added=(1, 2)))
    first, second = visit.first.objects, visit.second.objects
    kinds = [c.kind for c in visit.changes]
    assert kinds.count("removed") == 1 and kinds.count("moved") >= 1 and kinds.count("new") >= 1
    assert len({c.class_name for c in visit.changes}) == len(visit.changes)  # one thing of a class changes
    assert [o.instance_id for o in second] == list(range(len(second)))
    assert all(o.support < 0 or second[o.support].class_name in ("table", "cabinet", "shelf") for o in second)
    for change in visit.changes:
        before = [o for o in first if np.allclose(o.box, change.old_box)] if change.old_box is not None else []
        after = [o for o in second if np.allclose(o.box, change.new_box)] if change.new_box is not None else []
        if change.kind == "removed":
            assert len(before) == 1 and not any(np.allclose(o.box, change.old_box) for o in second)
        elif change.kind == "new":
            assert len(after) == 1 and after[0].class_name == change.class_name
        else:  # the same thing (shape, colour), elsewhere and clear of where it stood
            (was,), (now,) = before, after
            assert now.parts == was.parts and np.array_equal(now.color, was.color)
            assert box_iou_3d(was.box[None], now.box[None])[0, 0] == 0.0
            assert np.linalg.norm(now.box[:3] - was.box[:3]) >= 0.5
    n1 = len(visit.first)
    late = visit.render(n1)
    assert late.frame.index == n1 and late.frame.stamp_ns == n1 * 100_000_000 + 60 * S  # a minute after
    assert late.frame.extras["instance"].shape == late.instance.shape
    assert late.frame.extras["classes"] == tuple(o.class_name for o in second)


def test_a_later_recording_whose_clock_restarts_is_shifted_after_the_map(tmp_path: Path) -> None:
    """`changes MAP RECORDING`: a recording whose stamps start before the map's last frame (a camera's clock
    restarted) is moved to start a minute after it, keeping its own spacing; one that starts later is left."""
    from embodied_ros.cli.changes import LATER_NS, _Later
    from embodied_ros.synthetic import SceneConfig, SyntheticSource, TrajectoryConfig

    source = SyntheticSource(seed=3, config=SceneConfig(width=64, height=64, trajectory=TrajectoryConfig(n_frames=3)))
    stamps = [f.stamp_ns for f in source.frames()]
    map_end = stamps[-1] + 5 * S  # the map's last frame came after the recording's first stamps
    shifted = [f.stamp_ns for f in _Later(source, map_end).frames()]
    assert shifted[0] == map_end + LATER_NS
    assert np.diff(shifted).tolist() == np.diff(stamps).tolist()
    assert [f.stamp_ns for f in _Later(source, stamps[0] - LATER_NS - S).frames()] == stamps
