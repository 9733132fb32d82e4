"""What changed: removed, new and moved objects from evidence in looks, on rendered scenes with lifted detections.

A crate stands on the floor in front of a wall; the camera looks from places half a metre or more apart
(each a look), detections are the crate's projected boxes lifted through the rendered depth. A second pass
comes a minute after the first, the room changed or not.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from rendered_scenes import look_at, project_box, render_frame

from embodied_ros.detections import Detections2D, FramePerception
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.change_events import ChangeKind, ChangeLog
from embodied_ros.memory.changes import ChangeConfig
from embodied_ros.memory.existence import ExistenceEvidence, Look
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.memory.track import Track
from embodied_ros.memory.view_store import ViewStore, pool_depth
from embodied_ros.network.lifting import LiftingParams, lift_detections

CRATE = np.array([0.0, 2.0, 0.2, 0.4, 0.4, 0.4, 0.0, 0.0, 0.0])
THERE = np.array([0.8, 2.6, 0.2, 0.4, 0.4, 0.4, 0.3, 0.0, 0.0])  # where it goes, in view of both eyes
PERSON = np.array([0.0, 2.0, 0.85, 0.4, 0.3, 1.7, 0.0, 0.0, 0.0])  # a person's height: a mover by its shape
SCREEN = np.array([0.3, 1.1, 0.55, 1.8, 0.1, 1.1, 0.0, 0.0, 0.0])  # a panel between the eyes and the crate
EYES = [np.array([0.0, 0.0, 1.0]), np.array([1.2, 0.0, 1.0]), np.array([-1.0, 0.2, 1.1])]
WALL_Y = 4.0
S = 1_000_000_000
PASS_2 = 60 * S


def _look(memory: SceneMemory, eye: np.ndarray, target: np.ndarray, boxes: list[np.ndarray],
          detect: list[np.ndarray], t0_ns: int, index: int, frames: int = 3, name: str = "box") -> list:
    """``frames`` frames 0.1 s apart from ``eye`` towards ``target``: the room holds ``boxes``, the detector
    finds ``detect`` (score 0.8). Returns the change events the frames made."""
    T = look_at(eye, target)
    events = []
    for k in range(frames):
        frame = replace(render_frame(T, boxes, wall_y=WALL_Y), stamp_ns=t0_ns + k * S // 10, index=index + k)
        px = [project_box(T, b) for b in detect]
        dets = Detections2D(np.array(px).reshape(-1, 4), np.zeros(len(px), np.int64), np.full(len(px), 0.8), (name,))
        lifted = lift_detections(frame, dets, LiftingParams())
        result = memory.update(FramePerception(frame.index, frame.stamp_ns, lifted, dets, viewpoint=eye, frame=frame))
        events += result.changes
    return events


def _first_pass(memory: SceneMemory, boxes: list[np.ndarray], detect: list[np.ndarray], name: str = "box") -> list:
    events = []
    for k, eye in enumerate(EYES[:2]):
        events += _look(memory, eye, CRATE[:3], boxes, detect, 2 * k * S, 10 * k, name=name)
    return events


def _memory(**changes: object) -> SceneMemory:
    return SceneMemory(changes=ChangeConfig(**changes), discover_unknown=False)  # the detector's evidence alone


def test_a_thing_taken_away_is_removed_after_two_clear_looks() -> None:
    memory = _memory()
    assert _first_pass(memory, [CRATE], [CRATE]) == []  # the first pass discovers, it changes nothing
    (crate,) = memory.published_objects()
    assert _look(memory, EYES[0], CRATE[:3], [], [], PASS_2, 100) == []  # one clear look is not yet enough
    (event,) = _look(memory, EYES[1], CRATE[:3], [], [], PASS_2 + 2 * S, 110)
    assert event.kind is ChangeKind.REMOVED and event.object_id == crate.id and event.class_name == "box"
    assert box_iou_3d(event.old_box[None], CRATE[None])[0, 0] > 0.5 and event.new_box is None
    assert event.last_seen_ns == crate.last_seen_ns and event.stamp_ns > PASS_2
    assert memory.get(crate.id) is None and memory.published_objects() == []  # the map lets it go
    assert [e.seq for e in memory.changes.log.since(PASS_2)] == [event.seq]


def test_a_thing_taken_from_against_the_wall_is_removed() -> None:
    """A crate stood a centimetre before the wall: once it is gone, its back third lies at the wall's depth (within
    the depth margin) and only its front is seen through, under twice as many points as lie at their depth."""
    crate = CRATE.copy()
    crate[1] = WALL_Y - 0.21
    memory = _memory()
    _first_pass(memory, [crate], [crate])
    (before,) = memory.published_objects()
    events = _look(memory, EYES[0], crate[:3], [], [], PASS_2, 100)
    events += _look(memory, EYES[1], crate[:3], [], [], PASS_2 + 2 * S, 110)
    (event,) = events
    assert event.kind is ChangeKind.REMOVED and event.object_id == before.id
    assert np.linalg.norm(event.old_box[:3] - crate[:3]) < 0.3  # the map's box of a crate against a wall: its front


def test_hidden_is_not_gone() -> None:
    """From both eyes a panel stands between the camera and the crate: the crate's place is not seen."""
    memory = _memory()
    _first_pass(memory, [CRATE], [CRATE])
    (crate,) = memory.published_objects()
    events = []
    for k, eye in enumerate(EYES[:2]):
        events += _look(memory, eye, CRATE[:3], [CRATE, SCREEN], [], PASS_2 + 2 * k * S, 100 + 10 * k)
    assert events == [] and memory.get(crate.id) is not None
    # Taken away behind the panel: still not seen, still no change.
    for k, eye in enumerate(EYES[:2]):
        events += _look(memory, eye, CRATE[:3], [SCREEN], [], 2 * PASS_2 + 2 * k * S, 200 + 10 * k)
    assert events == [] and memory.get(crate.id) is not None


def test_leaving_the_view_is_not_gone() -> None:
    memory = _memory()
    _first_pass(memory, [CRATE], [CRATE])
    events = []
    for k, eye in enumerate(EYES):  # the camera turns to the left wall, away from the crate
        events += _look(memory, eye, eye + [-2.0, 0.3, -0.5], [], [], PASS_2 + 2 * k * S, 100 + 10 * k)
    assert events == [] and len(memory.published_objects()) == 1


@pytest.mark.parametrize("old_place_first", [True, False])
def test_a_moved_thing_is_one_move_with_its_id_kept(old_place_first: bool) -> None:
    memory = _memory()
    assert _first_pass(memory, [CRATE], [CRATE]) == []
    (crate,) = memory.published_objects()
    moved = THERE.copy()
    if old_place_first:  # looking past where it went: the old place seen empty twice, then the new one
        events = _look(memory, EYES[0], CRATE[:3], [moved], [], PASS_2, 100)
        events += _look(memory, EYES[1], CRATE[:3], [moved], [], PASS_2 + 2 * S, 110)
        events += _look(memory, EYES[2], THERE[:3], [moved], [moved], PASS_2 + 4 * S, 120)
        # A second look at the new place: the map shows a box once two looks agree on it (memory/settling.py).
        events += _look(memory, EYES[0], THERE[:3], [moved], [moved], PASS_2 + 6 * S, 130)
    else:  # the new place first (told as new), then the old one seen empty
        events = _look(memory, EYES[2], THERE[:3], [moved], [moved], PASS_2, 100)
        events += _look(memory, EYES[0], CRATE[:3], [moved], [moved], PASS_2 + 2 * S, 110)
        events += _look(memory, EYES[1], CRATE[:3], [moved], [moved], PASS_2 + 4 * S, 120)
    first, move = events
    assert first.kind is (ChangeKind.REMOVED if old_place_first else ChangeKind.NEW)
    assert move.kind is ChangeKind.MOVED and move.replaces == (first.seq,)
    assert move.object_id == crate.id  # the id is kept
    assert box_iou_3d(move.old_box[None], CRATE[None])[0, 0] > 0.5
    assert box_iou_3d(move.new_box[None], THERE[None])[0, 0] > 0.25
    assert move.distance == pytest.approx(np.linalg.norm(THERE[:3] - CRATE[:3]), abs=0.15)
    assert [e.seq for e in memory.changes.log.current()] == [move.seq]  # the history holds the move alone
    (now,) = [o for o in memory.published_objects() if o.class_name == "box"]
    assert now.id == crate.id and box_iou_3d(now.box[None], THERE[None])[0, 0] > 0.25


@pytest.mark.parametrize("old_place_first", [True, False])
def test_a_new_place_seen_empty_too_few_times_to_be_new_still_completes_a_move(old_place_first: bool) -> None:
    """The first pass saw where the crate goes empty from two looks, fewer than ``new_looks`` (3): alone it is not
    new, but the removal of a crate makes it the crate moved, in either order; nothing is told of it before."""
    memory = _memory(new_looks=3)
    assert _first_pass(memory, [CRATE], [CRATE]) == []
    (crate,) = memory.published_objects()
    old = [(EYES[0], CRATE, []), (EYES[1], CRATE, [])]  # the old place seen empty (the crate there undetected)
    new = [(EYES[2], THERE, [THERE]), (EYES[0], THERE, [THERE])]  # the crate detected where it went
    events = []
    for k, (eye, target, detect) in enumerate(old + new if old_place_first else new + old):
        events += _look(memory, eye, target[:3], [THERE], detect, PASS_2 + 2 * k * S, 100 + 10 * k)
    if old_place_first:
        removed, move = events
        assert removed.kind is ChangeKind.REMOVED and move.replaces == (removed.seq,)
    else:
        (move,) = events  # the new place alone told nothing
        assert move.replaces == ()
    assert move.kind is ChangeKind.MOVED and move.object_id == crate.id
    assert box_iou_3d(move.old_box[None], CRATE[None])[0, 0] > 0.5
    assert box_iou_3d(move.new_box[None], THERE[None])[0, 0] > 0.25
    assert [e.seq for e in memory.changes.log.current()] == [move.seq]


def test_a_thing_seen_empty_too_few_times_is_not_new_without_a_removal() -> None:
    memory = _memory(new_looks=3)
    assert _first_pass(memory, [], []) == []  # its place seen empty from two looks
    events = _look(memory, EYES[2], CRATE[:3], [CRATE], [CRATE], PASS_2, 100)
    events += _look(memory, EYES[0], CRATE[:3], [CRATE], [CRATE], PASS_2 + 2 * S, 110)
    assert events == [] and len(memory.published_objects()) == 1
    assert memory.changes.log.current() == []


def test_a_removal_and_a_new_thing_of_another_class_are_no_move() -> None:
    memory = _memory()
    _first_pass(memory, [CRATE], [CRATE])
    events = _look(memory, EYES[0], CRATE[:3], [THERE], [], PASS_2, 100)
    events += _look(memory, EYES[1], CRATE[:3], [THERE], [], PASS_2 + 2 * S, 110)
    events += _look(memory, EYES[2], THERE[:3], [THERE], [THERE], PASS_2 + 4 * S, 120, name="chair")
    assert [e.kind for e in events] == [ChangeKind.REMOVED, ChangeKind.NEW]
    assert events[1].class_name == "chair" and events[1].replaces == ()
    # ... and a move is told only within the window: the same crate, found an hour later, is new.
    late = _memory(move_window_s=30.0)
    _first_pass(late, [CRATE], [CRATE])
    events = _look(late, EYES[0], CRATE[:3], [THERE], [], PASS_2, 100)
    events += _look(late, EYES[1], CRATE[:3], [THERE], [], PASS_2 + 2 * S, 110)
    events += _look(late, EYES[2], THERE[:3], [THERE], [THERE], PASS_2 + 3600 * S, 120)
    assert [e.kind for e in events] == [ChangeKind.REMOVED, ChangeKind.NEW]


def test_a_thing_put_where_the_floor_was_seen_is_new() -> None:
    memory = _memory()
    assert _first_pass(memory, [], []) == []  # the floor and the wall, nothing on them
    (event,) = _look(memory, EYES[0], CRATE[:3], [CRATE], [CRATE], PASS_2, 100)
    assert event.kind is ChangeKind.NEW and event.old_box is None
    assert box_iou_3d(event.new_box[None], CRATE[None])[0, 0] > 0.5


def test_a_thing_that_stood_there_all_along_is_not_new_when_detected_late() -> None:
    memory = _memory()
    assert _first_pass(memory, [CRATE], []) == []  # in plain view, never detected
    assert _look(memory, EYES[0], CRATE[:3], [CRATE], [CRATE], PASS_2, 100) == []
    assert _look(memory, EYES[1], CRATE[:3], [CRATE], [CRATE], PASS_2 + 2 * S, 110) == []  # two looks: published
    assert len(memory.published_objects()) == 1  # in the map, and no change


def test_only_the_looks_before_the_first_that_saw_it_there_count() -> None:
    """Seen empty, then standing there undetected, then empty again (a surface some views see and others see
    through, or a thing carried off for a while): one empty look came before the first that saw it there,
    fewer than ``new_looks``, so it is not new. The same looks all empty make it new."""
    def detected_after(middle: list[np.ndarray]) -> list:
        memory = _memory()
        _look(memory, EYES[0], CRATE[:3], [], [], 0, 0)
        _look(memory, EYES[1], CRATE[:3], middle, [], 2 * S, 10)
        _look(memory, EYES[2], CRATE[:3], [], [], 4 * S, 20)
        return _look(memory, EYES[0], CRATE[:3], [CRATE], [CRATE], PASS_2, 100)

    assert [e.kind for e in detected_after([])] == [ChangeKind.NEW]
    assert detected_after([CRATE]) == []


def test_a_thing_whose_place_was_never_seen_is_not_new() -> None:
    memory = _memory()
    for k, eye in enumerate(EYES[:2]):  # the first pass looks at the left wall only
        _look(memory, eye, eye + [-2.0, 0.3, -0.5], [], [], 2 * k * S, 10 * k)
    assert _look(memory, EYES[0], CRATE[:3], [CRATE], [CRATE], PASS_2, 100) == []
    assert _look(memory, EYES[1], CRATE[:3], [CRATE], [CRATE], PASS_2 + 2 * S, 110) == []  # two looks: published
    assert len(memory.published_objects()) == 1


def test_an_unknown_object_is_watched_once_found_from_three_places_on_the_floor() -> None:
    """Existence's places are cells of camera positions in 3D: a camera that rose across a cell's edge is one place
    on the floor, and what geometry alone found from two places (a segment some viewpoints show) is not watched."""
    def unknown(places: list[tuple[int, int, int]]) -> Track:
        evidence = ExistenceEvidence(0.0, {p: Look(1.0, 1, k * S, 1, k * S) for k, p in enumerate(places)})
        return Track(1, CRATE.copy(), 1.0, 0.9, {"object": 0.9}, "object", len(places), 0, 0, 0, 0, log_odds=3.0,
                     existence=evidence)

    two_places = [(1, 1, 2), (1, 1, 3), (0, 1, 2)]  # (1, 1) seen from two heights
    memory = _memory()
    memory.changes.establish_all({1: unknown(two_places)})
    assert memory.changes.n_established == 0
    memory.changes.establish_all({1: unknown([*two_places, (0, 2, 2)])})
    assert memory.changes.n_established == 1


def test_structure_and_people_never_change() -> None:
    # A person is a mover (memory/movers.py), tracked apart and never an object of the map: never a change.
    memory = _memory()
    _first_pass(memory, [PERSON], [PERSON], name="person")  # a person standing there, then gone
    assert memory.published_objects() == [] and [o.class_name for o in memory.current_movers()] == ["person"]
    events = _look(memory, EYES[0], CRATE[:3], [], [], PASS_2, 100)
    events += _look(memory, EYES[1], CRATE[:3], [], [], PASS_2 + 2 * S, 110)
    assert events == [] and memory.changes.n_established == 0
    assert memory.structure_objects()  # the room's structure (the floor), kept apart from the objects
    # Structure a detector names is an object of the map, and never watched: a "cabinet" taken away is no change.
    memory = _memory()
    _first_pass(memory, [CRATE], [CRATE], name="cabinet")
    assert [o.class_name for o in memory.published_objects()] == ["cabinet"]
    events = _look(memory, EYES[0], CRATE[:3], [], [], PASS_2, 100)
    events += _look(memory, EYES[1], CRATE[:3], [], [], PASS_2 + 2 * S, 110)
    assert events == [] and memory.changes.n_established == 0


def test_changes_off_change_nothing() -> None:
    memory = _memory(enabled=False)
    _first_pass(memory, [CRATE], [CRATE])
    events = _look(memory, EYES[0], CRATE[:3], [], [], PASS_2, 100)
    events += _look(memory, EYES[1], CRATE[:3], [], [], PASS_2 + 2 * S, 110)
    assert events == [] and len(memory.changes.views) == 0


def test_a_saved_map_tells_what_changed_after_it_was_loaded(tmp_path) -> None:
    memory = _memory()
    _first_pass(memory, [CRATE, THERE], [CRATE, THERE])  # two crates
    memory.save(tmp_path / "memory.json")
    loaded = SceneMemory.load(tmp_path / "memory.json")
    assert len(loaded.changes.views) == len(memory.changes.views) > 0
    assert loaded.changes.n_established == 2 and loaded.changes.log.since(since_load=True) == []
    events = _look(loaded, EYES[0], CRATE[:3], [THERE], [THERE], PASS_2, 100)
    events += _look(loaded, EYES[1], CRATE[:3], [THERE], [THERE], PASS_2 + 2 * S, 110)
    (event,) = events
    assert event.kind is ChangeKind.REMOVED and box_iou_3d(event.old_box[None], CRATE[None])[0, 0] > 0.5
    assert loaded.changes.log.since(since_load=True) == [event]
    again = SceneMemory.load(tmp_path / "memory.json")  # the history is saved with the map
    loaded.save(tmp_path / "later.json")
    assert [e.to_dict() for e in SceneMemory.load(tmp_path / "later.json").changes.log.current()] == [event.to_dict()]
    assert again.changes.log.current() == []


def test_the_history_is_numbered_replaced_and_read_since() -> None:
    log = ChangeLog(max_events=3)
    box = np.arange(9.0)
    a = log.add(ChangeKind.REMOVED, 4, "cup", "white", box, None, 10 * S, 1)
    log.mark_loaded()
    b = log.add(ChangeKind.NEW, 7, "book", None, None, box, 20 * S, 2)
    c = log.add(ChangeKind.MOVED, 4, "cup", "white", box, box + 1, 30 * S, 3, 5 * S, (a.seq,))
    assert [e.seq for e in log.current()] == [b.seq, c.seq]  # the move replaces the removal
    assert [e.seq for e in log.since(25 * S)] == [c.seq]
    assert [e.seq for e in log.since(since_load=True)] == [b.seq, c.seq]
    assert "moved cup #4 (white)" in c.summary() and c.distance == pytest.approx(np.sqrt(3))
    again = ChangeLog.from_dict(log.to_dict())
    assert [e.to_dict() for e in again.events()] == [e.to_dict() for e in log.events()]
    for _ in range(3):
        log.add(ChangeKind.NEW, 9, "box", None, None, box, 40 * S, 4)
    assert len(log.events()) == 3 and log.events()[-1].seq == 6  # bounded, numbers go on


def test_pooled_views_keep_the_nearest_depth_and_judge_points() -> None:
    depth = np.full((8, 8), 3.0, np.float32)
    depth[:2, :2] = 1.0  # something two pixels wide and near
    depth[4:, 4:] = 0.0  # no depth
    pooled = pool_depth(depth, 4)
    assert pooled.tolist() == [[1.0, 3.0], [3.0, np.inf]]
    eye = np.array([0.0, 0.0, 1.0])
    T = look_at(eye, np.array([0.0, 3.0, 1.0]))
    frame = render_frame(T, [], wall_y=3.0)
    store = ViewStore(pool=8)
    assert store.add(frame, (0, 0, 2), 0) and not store.add(frame, (0, 0, 2), 0)  # one view a look
    ahead = np.array([[0.0, 2.0, 1.0], [0.1, 2.9, 1.0], [0.0, 3.5, 1.0], [0.0, -1.0, 1.0]])
    (j,) = store.judge(ahead, 0.0, before_ns=1)
    assert (j.inside, j.through, j.seen, j.hidden) == (3, 1, 1, 1)  # before, on and behind the wall; behind us
    assert store.judge(ahead, 0.0, before_ns=0) == []  # only views taken before
    again = ViewStore.from_dict(store.to_dict())
    assert again.judge(ahead, 0.0, before_ns=1) == store.judge(ahead, 0.0, before_ns=1)
