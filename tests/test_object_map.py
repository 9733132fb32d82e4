"""The object map's evidence rules on constructed scenes: exact depth frames, real lifting, real memory.

A ray-cast scene gives each frame's depth; the "detector" is the box's projection (what a perfect
2D detector would give, or nothing, frame by frame), lifted through that depth by the real
lifting code, so objects carry real geometry and the memory's visibility tests see real depth.
"""

from __future__ import annotations

import numpy as np
import pytest
from rendered_scenes import look_at, project_box, render_frame

from embodied_ros.detections import Detections2D, Detections3D, FramePerception
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.amodal import FloorEstimate
from embodied_ros.memory.changes import ChangeConfig
from embodied_ros.memory.class_shapes import parts_may_touch
from embodied_ros.memory.discovery import UNKNOWN_CLASS
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.network.lifting import LiftingParams, lift_detections

NAMES = ("box", "chair", "sofa", "diningtable", "cup", "book", "microwave", "tvmonitor", "remote", "sink")
CRATE = np.array([0.0, 2.0, 0.2, 0.4, 0.4, 0.4, 0.0, 0.0, 0.0])  # 40 cm box on the floor, 2 m ahead
EYE = np.array([0.0, 0.0, 1.0])


def _perceive(frame, boxes_3d: list[np.ndarray], names: list[str], scores: list[float] | None = None,
              boxes_xyxy: list[np.ndarray] | None = None) -> FramePerception:
    """A perfect 2D detector's boxes of ``boxes_3d`` (or the given pixel boxes), lifted through the frame."""
    xyxy = boxes_xyxy if boxes_xyxy is not None else [project_box(frame.T_world_camera, b) for b in boxes_3d]
    n = len(xyxy)
    dets = Detections2D(np.array(xyxy, dtype=np.float64).reshape(n, 4), np.array([NAMES.index(c) for c in names]),
                        np.array(scores if scores is not None else [0.8] * n, dtype=np.float64), NAMES)
    lifted = lift_detections(frame, dets, LiftingParams())
    return FramePerception(frame.index, frame.stamp_ns, lifted, dets, viewpoint=frame.T_world_camera[:3, 3].copy(),
                           frame=frame)


def _published_ids(memory: SceneMemory) -> set[int]:
    return {o.id for o in memory.published_objects()}


def _two_looks(memory: SceneMemory, frames: int = 3) -> np.ndarray:
    """The crate detected in ``frames`` frames from each of two places (two looks: memory/settling.py);
    returns the pose of the second."""
    for i in range(2 * frames):
        T = look_at(EYE + [0.6 * (i // frames), 0.0, 0.0], CRATE[:3])
        memory.update(_perceive(render_frame(T, [CRATE], index=i), [CRATE], ["box"]))
    return T


@pytest.mark.parametrize("keep_believed", [False, True])
def test_an_object_in_view_but_no_longer_detected_fades_and_is_forgotten(keep_believed: bool):
    # The detector's evidence alone: the geometry still shows a thing.
    memory = SceneMemory(changes=ChangeConfig(keep_believed=keep_believed), discover_unknown=False)
    _two_looks(memory)
    (obj,) = memory.objects()
    assert obj.id in _published_ids(memory) and obj.confidence > 0.7
    faded_after = forgotten_after = None
    for k in range(1, 60):  # from both places in turn: each place's look says it is gone
        T = look_at(EYE + [0.6 * (k % 2), 0.0, 0.0], CRATE[:3])
        result = memory.update(_perceive(render_frame(T, [CRATE], index=5 + k), [], []))
        if faded_after is None and obj.id not in _published_ids(memory):
            faded_after = k
        if obj.id in result.forgotten:
            forgotten_after = k
            break
        assert obj.id in result.missed
    assert faded_after is not None and faded_after <= 10  # a few views from each place where it was plainly there
    if keep_believed:  # the map believed it, and no look saw its place empty: kept, unpublished (memory/changes.py)
        assert forgotten_after is None and memory.get(obj.id).confidence < 0.7
        return
    assert forgotten_after is not None and memory.get(obj.id) is None
    assert memory.objects() == []


def test_hidden_or_out_of_view_is_not_evidence_against():
    memory = SceneMemory()
    T = _two_looks(memory)
    (obj,) = memory.objects()
    screen = np.array([0.0, 1.0, 0.6, 1.2, 0.1, 1.2, 0.0, 0.0, 0.0])  # a panel between the camera and the crate
    away = look_at(EYE, np.array([0.0, -2.0, 0.2]))  # turned round
    for k in range(20):
        hidden = memory.update(_perceive(render_frame(T, [CRATE, screen], index=6 + k), [], []))
        elsewhere = memory.update(_perceive(render_frame(away, [CRATE], index=26 + k), [], []))
        assert obj.id not in hidden.missed and obj.id not in elsewhere.missed
    assert obj.id in _published_ids(memory)


def test_a_place_seen_through_counts_more_than_a_miss():
    T = look_at(EYE, CRATE[:3])
    memory = SceneMemory()
    for i in range(3):
        memory.update(_perceive(render_frame(T, [CRATE], index=i), [CRATE], ["box"]))
    (obj,) = memory.objects()
    before = memory.get(obj.id).confidence
    memory.update(_perceive(render_frame(T, [], index=3), [], []))  # the crate is gone: the floor behind shows
    gone = memory.get(obj.id).confidence
    twin = SceneMemory()
    for i in range(3):
        twin.update(_perceive(render_frame(T, [CRATE], index=i), [CRATE], ["box"]))
    twin.update(_perceive(render_frame(T, [CRATE], index=3), [], []))  # still there, not detected
    missed = twin.get(obj.id).confidence
    assert gone < missed < before


def test_a_table_seen_in_two_halves_is_one_whole_table():
    table = np.array([0.0, 2.2, 0.375, 2.0, 0.8, 0.75, 0.0, 0.0, 0.0])
    left, right = np.array([-0.75, 0.6, 1.3]), np.array([0.75, 0.6, 1.3])
    memory = SceneMemory()
    fragments = []
    for i, eye in enumerate([left] * 3 + [right] * 3 + [left]):  # a look back confirms the whole (memory/settling)
        T = look_at(eye, np.array([eye[0], 2.2, 0.5]))  # close up: each view holds a bit more than half
        frame = render_frame(T, [table], index=i)
        seen = project_box(T, table)
        seen = np.clip(seen, [0, 0, 0, 0], [frame.width - 1, frame.height - 1] * 2)
        perception = _perceive(frame, [table], ["diningtable"], boxes_xyxy=[seen])
        fragments.append(perception.detections.boxes[0][3])
        memory.update(perception)
    assert max(fragments) < 1.5  # every view lifted a part of the table
    (obj,) = memory.objects()
    assert obj.class_name == "diningtable" and obj.n_observations == 7 and obj.settled
    assert obj.box[3] > 1.85 and box_iou_3d(obj.box[None], table[None])[0, 0] > 0.4  # its front and top were seen
    boxes_only = SceneMemory(geometry_voxel=0.0)  # without geometry each view is its own part
    for i, eye in enumerate([left] * 3 + [right] * 3):
        T = look_at(eye, np.array([eye[0], 2.2, 0.5]))
        frame = render_frame(T, [table], index=i)
        seen = np.clip(project_box(T, table), [0, 0, 0, 0], [frame.width - 1, frame.height - 1] * 2)
        boxes_only.update(_perceive(frame, [table], ["diningtable"], boxes_xyxy=[seen]))
    assert max(o.box[3] for o in boxes_only.objects()) < 1.6


def test_a_chair_seen_over_a_table_reaches_the_floor():
    chair = np.array([0.0, 2.6, 0.45, 0.45, 0.45, 0.9, 0.0, 0.0, 0.0])
    table = np.array([0.0, 1.9, 0.375, 1.4, 0.8, 0.75, 0.0, 0.0, 0.0])  # hides the chair below its top
    memory = SceneMemory()
    for i in range(4):
        T = look_at(np.array([0.3 * i - 0.45, 0.0, 1.2]), np.array([0.0, 2.6, 0.6]))
        frame = render_frame(T, [chair, table], index=i)
        top = project_box(T, chair)
        top[3] = min(top[3], project_box(T, table)[1])  # the detector sees the part above the table
        memory.update(_perceive(frame, [chair], ["chair"], boxes_xyxy=[top]))
    (obj,) = [o for o in memory.objects() if o.class_name == "chair"]
    assert memory.floor_z == pytest.approx(0.0, abs=0.03)
    assert obj.box[2] - 0.5 * obj.box[5] == pytest.approx(0.0, abs=0.05)  # down to the floor
    assert min(obj.box[3], obj.box[4]) >= 0.4  # a chair's least footprint
    no_prior = SceneMemory(amodal=False)
    for i in range(4):
        T = look_at(np.array([0.3 * i - 0.45, 0.0, 1.2]), np.array([0.0, 2.6, 0.6]))
        frame = render_frame(T, [chair, table], index=i)
        top = project_box(T, chair)
        top[3] = min(top[3], project_box(T, table)[1])
        no_prior.update(_perceive(frame, [chair], ["chair"], boxes_xyxy=[top]))
    (part,) = [o for o in no_prior.objects() if o.class_name == "chair"]
    assert part.box[2] - 0.5 * part.box[5] > 0.6  # only what showed above the table top


def test_furniture_completed_to_a_table_top_taken_for_the_floor_reaches_the_real_floor_once_seen():
    # The first views see only a wide table top (the floor estimate's lowest dense layer) and a chair's
    # back above it; later views see the floor but no longer the chair: the chair must still reach it.
    table = np.array([0.0, 2.0, 0.375, 4.0, 3.0, 0.75, 0.0, 0.0, 0.0])
    chair = np.array([0.0, 3.8, 0.45, 0.45, 0.45, 0.9, 0.0, 0.0, 0.0])
    memory = SceneMemory()
    for i in range(4):
        T = look_at(np.array([0.2 * i - 0.3, 1.0, 1.7]), np.array([0.0, 3.8, 0.7]))
        frame = render_frame(T, [chair, table], wall_y=4.3, index=i)
        top = project_box(T, chair)
        top[3] = project_box(T, np.array([0.0, 3.5, 0.75, 0.01, 0.01, 0.01, 0, 0, 0]), margin=0.0)[1]  # far edge
        memory.update(_perceive(frame, [chair], ["chair"], boxes_xyxy=[top]))
    assert memory.floor_z == pytest.approx(0.75, abs=0.05)  # the table top
    (obj,) = memory.objects()
    assert obj.box[2] - 0.5 * obj.box[5] > 0.6
    for i in range(4, 8):  # back from the table, looking down at the floor before it; the chair out of view
        T = look_at(np.array([0.2 * i - 1.1, -2.0, 1.2]), np.array([0.0, -0.5, 0.0]))
        memory.update(_perceive(render_frame(T, [chair, table], wall_y=4.3, index=i), [], []))
    assert memory.floor_z == pytest.approx(0.0, abs=0.05)
    (obj,) = memory.objects()
    assert obj.box[2] - 0.5 * obj.box[5] == pytest.approx(0.0, abs=0.05)


def _box(x: float, y: float = 0.0, z: float = 0.5, dx: float = 0.5, dy: float = 0.5, dz: float = 0.5) -> np.ndarray:
    return np.array([x, y, z, dx, dy, dz, 0.0, 0.0, 0.0])


def _boxes_frame(index: int, boxes: list[np.ndarray], scores: list[float], names: list[str]) -> FramePerception:
    det = Detections3D(np.array(boxes).reshape(-1, 9), [NAMES.index(n) for n in names], scores, NAMES, "world")
    return FramePerception(index, index * 1_000_000, det)


def test_the_per_class_limit_never_hides_a_confirmed_object():
    memory = SceneMemory(max_per_class=10)
    shelf = [_box(2.0 * i, 5.0, 0.5, 0.3, 0.2, 0.05) for i in range(12)]
    for i in range(2):  # twelve books glimpsed twice, with low scores: not yet confirmed
        memory.update(_boxes_frame(i, shelf, [0.25] * 12, ["book"] * 12))
    confirmed = _box(0.0, 0.0, 0.5, 0.3, 0.2, 0.05)
    for i in range(2, 8):  # one book seen six times at a lower score still
        memory.update(_boxes_frame(i, [confirmed], [0.2], ["book"]))
    published = memory.published_objects()
    assert len(memory.objects()) == 13
    assert [o.n_observations for o in published] == [6]
    legacy = SceneMemory(max_per_class=10, publish_confidence=0.0)  # the limit by score alone hides it
    for i in range(2):
        legacy.update(_boxes_frame(i, shelf, [0.25] * 12, ["book"] * 12))
    for i in range(2, 8):
        legacy.update(_boxes_frame(i, [confirmed], [0.2], ["book"]))
    assert 6 not in [o.n_observations for o in legacy.published_objects()]


def test_the_class_is_the_posterior_of_all_detections():
    memory = SceneMemory()
    for i, (name, score) in enumerate([("chair", 0.6), ("sofa", 0.7), ("chair", 0.5), ("chair", 0.6), ("sofa", 0.3)]):
        memory.update(_boxes_frame(i, [_box(0.0, dz=0.9) + np.r_[0.01 * i, np.zeros(8)]], [score], [name]))
    (obj,) = memory.objects()
    assert obj.class_name == "chair" and dict(obj.class_scores) == pytest.approx({"chair": 1.7, "sofa": 1.0})


def test_an_object_larger_than_its_class_can_be_is_not_published():
    memory = SceneMemory()
    tray, mug = _box(0.0, dx=0.6, dy=0.45, dz=0.05), _box(3.0, dx=0.1, dy=0.09, dz=0.1)
    for i in range(5):
        memory.update(_boxes_frame(i, [tray, mug], [0.7, 0.7], ["cup", "cup"]))
    assert {o.class_name for o in memory.objects()} == {"cup"} and len(memory.objects()) == 2
    (published,) = memory.published_objects()
    assert published.box[3] < 0.2
    assert max(o.confidence for o in memory.objects() if o.box[3] > 0.5) <= 0.1


def test_an_object_smaller_than_its_class_can_be_is_not_published():
    memory = SceneMemory()
    model, oven = _box(0.0, dx=0.15, dy=0.1, dz=0.12), _box(3.0, dx=0.5, dy=0.35, dz=0.3)
    for i in range(5):  # a small wooden model called "microwave", and a real one
        memory.update(_boxes_frame(i, [model, oven], [0.7, 0.7], ["microwave", "microwave"]))
    assert len(memory.objects()) == 2
    (published,) = memory.published_objects()
    assert published.box[3] > 0.4



def test_a_screen_lifted_as_a_strip_or_two_screens_as_one_are_not_published():
    memory = SceneMemory()
    strip, pair = _box(0.0, dx=0.6, dy=0.1, dz=0.05), _box(-3.0, dx=1.9, dy=0.1, dz=0.47)
    monitor = _box(3.0, dx=1.05, dy=0.1, dz=0.45)
    for i in range(5):  # a panel that returned no depth leaves the strip below it; two monitors side by side
        memory.update(_boxes_frame(i, [strip, pair, monitor], [0.7] * 3, ["tvmonitor"] * 3))
    assert len(memory.objects()) == 3
    (published,) = memory.published_objects()
    assert published.box[0] == pytest.approx(3.0, abs=0.05)

def test_a_food_box_called_remote_is_not_published_a_game_controller_is():
    memory = SceneMemory()
    food_box, controller = _box(0.0, dx=0.33, dy=0.23, dz=0.08), _box(2.0, dx=0.17, dy=0.12, dz=0.05)
    for i in range(5):  # remotes and phones are held in one hand: at most ~12 cm across
        memory.update(_boxes_frame(i, [food_box, controller], [0.7] * 2, ["remote"] * 2))
    assert len(memory.objects()) == 2
    (published,) = memory.published_objects()
    assert published.box[0] == pytest.approx(2.0, abs=0.05)


def test_only_long_furniture_is_joined_from_parts_that_only_touch():
    assert parts_may_touch("diningtable") and parts_may_touch("sofa") and parts_may_touch("bed")
    assert not any(parts_may_touch(c) for c in ("cup", "book", "monitor", "tvmonitor", "chair", "microwave"))


def test_neighbours_do_not_merge_past_their_class_size():
    T = look_at(EYE, np.array([0.0, 1.6, 0.0]))
    books = [np.array([x, 1.6, 0.01, 0.3, 0.22, 0.02, 0.0, 0.0, 0.0]) for x in (-0.16, 0.16, 0.48)]  # touching
    memory = SceneMemory()
    for i in range(4):
        frame = render_frame(T, books, index=i)
        memory.update(_perceive(frame, books, ["book"] * 3))
    assert len(memory.objects()) == 3
    assert all(o.box[3] < 0.5 for o in memory.objects())


def test_geometry_and_evidence_survive_save_and_load(tmp_path):
    T = look_at(EYE, CRATE[:3])
    memory = SceneMemory()
    for i in range(3):
        memory.update(_perceive(render_frame(T, [CRATE], index=i), [CRATE], ["box"]))
    memory.update(_perceive(render_frame(T, [CRATE], index=3), [], []))
    memory.save(tmp_path / "memory.json")
    loaded = SceneMemory.load(tmp_path / "memory.json")
    assert loaded.objects() == memory.objects() and loaded.floor_z == pytest.approx(memory.floor_z)
    assert np.array_equal(loaded.geometry_points(0), memory.geometry_points(0))
    nxt = _perceive(render_frame(T, [CRATE], index=4), [CRATE], ["box"])
    assert loaded.update(nxt) == memory.update(nxt)
    assert loaded.objects() == memory.objects()


def _points_box(box: np.ndarray, step: float = 0.02) -> np.ndarray:
    """Surface-like points filling an axis-aligned box (world), ``step`` apart."""
    lo, hi = box[:3] - 0.5 * box[3:6], box[:3] + 0.5 * box[3:6]
    axes = [np.arange(lo[k], hi[k] + 1e-9, step) if hi[k] - lo[k] > step else np.array([box[k]]) for k in range(3)]
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)


def _lifted_frame(index: int, boxes: list[np.ndarray], names: list[str], scores: list[float],
                  points: list[np.ndarray]) -> FramePerception:
    det = Detections3D(np.array(boxes).reshape(-1, 9), [NAMES.index(n) for n in names], scores, NAMES, "world",
                       points=tuple(points))
    return FramePerception(index, index * 1_000_000, det)


def test_a_detection_on_an_objects_surface_is_that_object_however_little_box_they_share():
    top = _box(0.0, dx=2.0, dy=0.4, dz=0.01)  # a table top, one layer of points
    memory = SceneMemory()
    for i in range(3):
        memory.update(_lifted_frame(i, [top], ["diningtable"], [0.8], [_points_box(top)]))
    part = _box(0.85, dx=0.3, dy=0.4, dz=0.01) + np.r_[0, 0, 0.02, np.zeros(6)]  # its end, 2 cm higher (noise)
    assert box_iou_3d(part[None], memory.objects()[0].box[None])[0, 0] < 0.15
    memory.update(_lifted_frame(3, [part], ["diningtable"], [0.8], [_points_box(part)]))
    (obj,) = memory.objects()
    assert obj.n_observations == 4


def test_an_object_does_not_grow_past_its_class_by_taking_a_neighbours_detection():
    mug = _box(0.0, dx=0.1, dy=0.1, dz=0.1)
    memory = SceneMemory()
    for i in range(3):
        memory.update(_lifted_frame(i, [mug], ["cup"], [0.8], [_points_box(mug)]))
    sloppy = _box(0.2, dx=0.5, dy=0.1, dz=0.1)  # the mug, the table and the next cup in one box
    assert box_iou_3d(sloppy[None], memory.objects()[0].box[None])[0, 0] > 0.15
    memory.update(_lifted_frame(3, [sloppy], ["cup"], [0.8], [_points_box(sloppy)]))
    assert len(memory.objects()) == 2
    assert memory.get(0).box[3] < 0.15 and memory.get(0).n_observations == 3


def test_a_class_seen_once_in_an_object_does_not_make_it_that_class():
    table = _box(0.0, dx=1.6, dy=0.8, dz=0.05)
    memory = SceneMemory()
    for i in range(5):
        memory.update(_lifted_frame(i, [table], ["diningtable"], [0.8], [_points_box(table)]))
    memory.update(_lifted_frame(5, [table], ["chair"], [0.3], [_points_box(table)]))  # the table, once called chair
    (obj,) = memory.objects()
    assert obj.class_name == "diningtable" and dict(obj.class_scores)["chair"] == pytest.approx(0.3)
    chair = _box(0.85, 0.0, 0.5, dx=0.3, dy=0.3, dz=0.05)  # the chair, on the table's geometry but not its box
    memory.update(_lifted_frame(6, [chair], ["chair"], [0.7], [_points_box(chair)]))
    assert sorted(o.class_name for o in memory.objects()) == ["chair", "diningtable"]


def test_what_surrounded_an_object_in_a_few_views_is_not_part_of_its_box():
    T = look_at(EYE, CRATE[:3])
    memory = SceneMemory()
    floor_patch = _points_box(np.array([0.45, 2.0, 0.0, 0.3, 0.3, 0.0, 0, 0, 0]))  # floor beside the crate
    for i in range(8):
        frame = render_frame(T, [CRATE], index=i)
        perception = _perceive(frame, [CRATE], ["box"])
        if i in (0, 3):  # two views' clusters ran onto the floor beside it
            pts = perception.detections.points
            perception = FramePerception(
                i, frame.stamp_ns, Detections3D(perception.detections.boxes, perception.detections.labels,
                                                perception.detections.scores, NAMES, "world",
                                                perception.detections.boxes_2d,
                                                (np.concatenate([pts[0], floor_patch]),), perception.detections.pixels),
                perception.detections_2d, viewpoint=perception.viewpoint, frame=frame)
        memory.update(perception)
    (obj,) = memory.objects()
    assert obj.box[0] + 0.5 * max(obj.box[3], obj.box[4]) < 0.3  # the crate's side is at x = 0.2, the patch at 0.6


def test_detections_from_new_places_count_more_than_from_one_place():
    cup = _box(0.0, dx=0.1, dy=0.1, dz=0.1)
    here, moving = SceneMemory(), SceneMemory()
    for i in range(4):
        det = Detections3D(cup[None], [NAMES.index("cup")], [0.3], NAMES, "world")
        here.update(FramePerception(i, i, det, viewpoint=np.array([0.0, -1.0, 1.0])))
        moving.update(FramePerception(i, i, det, viewpoint=np.array([0.6 * i, -1.0, 1.0])))
    assert here.objects()[0].confidence < 0.7 < moving.objects()[0].confidence
    assert here.published_objects() == [] and len(moving.published_objects()) == 1


def _slab(x0: float, x1: float, y0: float, y1: float, z0: float, z1: float) -> np.ndarray:
    return np.array([(x0 + x1) / 2, (y0 + y1) / 2, (z0 + z1) / 2, x1 - x0, y1 - y0, z1 - z0, 0.0, 0.0, 0.0])


def _counter_views(scene: list[np.ndarray], thing: np.ndarray, name: str, memory: SceneMemory) -> None:
    """Three places above a counter, two frames each, the detector calling ``thing`` ``name`` at 0.8."""
    for i, x in enumerate((-0.6, 0.0, 0.6)):
        T = look_at(np.array([x, 0.6, 1.7]), thing[:3])
        for j in range(2):
            memory.update(_perceive(render_frame(T, scene, index=10 * i + j), [thing], [name]))


def test_a_sink_is_a_basin_lower_than_its_counter_and_a_thing_standing_on_it_is_not():
    basin = _slab(-0.25, 0.25, 1.6, 2.0, 0.7, 0.9)  # the hole in the counter top, its floor at 0.7
    sink_counter = [_slab(-1.0, 1.0, 1.5, 2.1, 0.0, 0.7), _slab(-1.0, -0.25, 1.5, 2.1, 0.7, 0.9),
                    _slab(0.25, 1.0, 1.5, 2.1, 0.7, 0.9), _slab(-0.25, 0.25, 1.5, 1.6, 0.7, 0.9),
                    _slab(-0.25, 0.25, 2.0, 2.1, 0.7, 0.9)]
    sink = SceneMemory()
    _counter_views(sink_counter, basin, "sink", sink)
    assert [o.class_name for o in sink.published_objects()] == ["sink"]
    model = _slab(-0.15, 0.15, 1.7, 1.9, 0.9, 1.15)  # a wooden model standing on a plain counter
    counter = [_slab(-1.0, 1.0, 1.5, 2.1, 0.0, 0.9), model]
    not_sink = SceneMemory()
    _counter_views(counter, model, "sink", not_sink)
    (obj,) = [o for o in not_sink.objects() if o.class_name != UNKNOWN_CLASS]
    assert obj.class_name == "sink" and obj.confidence <= 0.1
    assert [o.class_name for o in not_sink.published_objects()] == [UNKNOWN_CLASS]  # a thing, not a sink
    as_box = SceneMemory()  # what stands on the counter may be a box: no rule keeps it out
    _counter_views(counter, model, "box", as_box)
    assert [o.class_name for o in as_box.published_objects()] == ["box"]


def test_the_floor_is_the_lowest_dense_layer_any_frame_saw_however_long_the_table_was_watched():
    table = np.array([0.0, 2.0, 0.375, 4.0, 3.0, 0.75, 0.0, 0.0, 0.0])  # fills the close views below
    floor_view = render_frame(look_at(np.array([0.0, -2.0, 1.2]), np.array([0.0, -0.5, 0.0])), [table])
    table_view = render_frame(look_at(np.array([0.0, 1.0, 1.7]), np.array([0.0, 3.8, 0.7])), [table], wall_y=4.3)
    floor = FloorEstimate()
    floor.update(table_view)
    assert floor.z == pytest.approx(0.75, abs=0.03)  # until the floor is seen, the table top stands for it
    floor.update(floor_view)  # one frame of a five-frame recording sees the floor ...
    for _ in range(400):  # ... and a 30 Hz stream then watches the table for 13 s
        floor.update(table_view)
    assert floor.z == pytest.approx(0.0, abs=0.03)
