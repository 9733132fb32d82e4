"""Unknown objects from the geometry (issue 30), on rendered scenes with exact depth: a table standing on the
floor before a wall, things on the table. What stands on a support and is compact is one unknown object across
views; the wall, the table top and what lies flat are not; a named detection that later covers an unknown
object makes it one named object; colour and size words pick unknown objects out."""

from __future__ import annotations

import math

import numpy as np
import pytest
from rendered_scenes import look_at, project_box, render_frame

from embodied_ros.detections import Detections2D, Detections3D, FramePerception
from embodied_ros.frame import Frame
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.grounding import Grounder
from embodied_ros.memory.discovery import UNKNOWN_CLASS, ObjectDiscovery
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.network.lifting import LiftingParams, lift_detections

TABLE = np.array([0.0, 0.0, 0.375, 1.2, 0.8, 0.75, 0.0, 0.0, 0.0])  # a solid table, top at 0.75 m
THING = np.array([0.2, 0.05, 0.81, 0.2, 0.15, 0.12, 0.4, 0.0, 0.0])  # standing on it
MAGAZINE = np.array([-0.35, -0.1, 0.755, 0.3, 0.22, 0.01, 0.2, 0.0, 0.0])  # lying flat on it
POSTER = np.array([-0.2, 0.89, 1.2, 0.4, 0.02, 0.3, 0.0, 0.0, 0.0])  # flat on the wall
WALL_Y = 0.9
GREY = (128, 128, 128)


def _eyes(n: int = 4) -> list[np.ndarray]:
    """Cameras 2.2 m from the table, 1.6 m high, from the side away from the wall (each its own place)."""
    return [np.array([2.2 * math.cos(a), 2.2 * math.sin(a), 1.6])
            for a in np.radians(np.linspace(-125.0, -55.0, n))]


def _views(boxes: list[np.ndarray], colors: list[tuple[int, int, int]] | None = None, n: int = 4) -> list[Frame]:
    return [render_frame(look_at(eye, TABLE[:3] + [0.0, 0.0, 0.4]), boxes, wall_y=WALL_Y, index=k, colors=colors)
            for k, eye in enumerate(_eyes(n))]


def _perception(frame: Frame, named: list[tuple[str, np.ndarray]] = ()) -> FramePerception:
    """The frame with named detections lifted from the 2D boxes of the given 3D boxes (as a detector's)."""
    names = ("diningtable", "cup")
    if named:
        boxes_2d = np.array([project_box(frame.T_world_camera, box) for _, box in named])
        found = Detections2D(boxes_2d, np.array([names.index(n) for n, _ in named]), np.full(len(named), 0.9), names)
        detections = lift_detections(frame, found, LiftingParams())
    else:
        detections = Detections3D.empty(names, frame.world_frame)
    return FramePerception(frame.index, frame.stamp_ns, detections, viewpoint=frame.T_world_camera[:3, 3].copy(),
                           frame=frame)


def _unknown(memory: SceneMemory) -> list:
    return [o for o in memory.published_objects() if o.class_name == UNKNOWN_CLASS]


def test_a_box_on_a_table_is_one_unknown_object_and_the_wall_and_table_top_are_not() -> None:
    frames = _views([TABLE, THING, MAGAZINE, POSTER])
    discovery = ObjectDiscovery()
    for frame in frames:  # each view alone: the thing, and nothing on the wall, the table top or lying flat
        found = discovery.discover(frame)
        assert found is not None and len(found) == 1, found.boxes if found is not None else None
        assert box_iou_3d(found.boxes, THING[None])[0, 0] > 0.4  # its back is hidden
        assert found.surround_z[0] == pytest.approx(0.75, abs=0.02)  # it stands on the table top
    memory = SceneMemory()
    for frame in frames:
        memory.update(_perception(frame))
    things = _unknown(memory)
    assert len(things) == 1 and box_iou_3d(things[0].box[None], THING[None])[0, 0] > 0.6, things
    assert things[0].n_looks >= 2  # seen from several places: evidence in looks, as for named objects


def test_one_view_of_a_thing_is_not_yet_an_object() -> None:
    """Clutter that never holds together is not an object: one look publishes nothing."""
    memory = SceneMemory()
    memory.update(_perception(_views([TABLE, THING], n=1)[0]))
    assert not _unknown(memory) and len(memory.objects()) == 1


def test_a_named_detection_over_an_unknown_object_makes_one_named_object() -> None:
    frames = _views([TABLE, THING], n=6)
    memory = SceneMemory()
    for frame in frames[:3]:
        memory.update(_perception(frame))
    (unknown,) = _unknown(memory)
    for frame in frames[3:]:  # the detector now names it
        memory.update(_perception(frame, [("cup", THING)]))
    near = [o for o in memory.published_objects() if box_iou_3d(o.box[None], THING[None])[0, 0] > 0.3]
    assert len(near) == 1, near  # one object, not two
    assert near[0].class_name == "cup" and near[0].id == unknown.id  # it keeps the unknown object's id
    assert not _unknown(memory)


RED, BLUE, BLACK = (200, 30, 30), (30, 60, 200), (20, 20, 20)
SMALL_RED = np.array([0.35, 0.1, 0.8, 0.1, 0.1, 0.1, 0.0, 0.0, 0.0])
LARGE_BLUE = np.array([-0.3, 0.05, 0.875, 0.3, 0.2, 0.25, 0.0, 0.0, 0.0])
SMALL_BLACK = np.array([0.05, -0.2, 0.78, 0.14, 0.08, 0.06, 0.0, 0.0, 0.0])
FAR_GREY = np.array([0.95, 0.3, 0.2, 0.25, 0.25, 0.4, 0.0, 0.0, 0.0])  # on the floor beside the table


@pytest.fixture(scope="module")
def things_on_a_table() -> SceneMemory:
    boxes = [TABLE, SMALL_RED, LARGE_BLUE, SMALL_BLACK, FAR_GREY]
    memory = SceneMemory()
    for frame in _views(boxes, colors=[(150, 110, 70), RED, BLUE, BLACK, GREY], n=5):
        memory.update(_perception(frame, [("diningtable", TABLE)]))
    return memory


@pytest.mark.parametrize(("phrase", "box"), [
    ("the red thing on the table", SMALL_RED),
    ("the large object on the table", LARGE_BLUE),
    ("the small black thing on the table", SMALL_BLACK),
    ("the blue item", LARGE_BLUE),
    ("the grey object on the floor", FAR_GREY),
    ("the blue box", LARGE_BLUE),  # no class of the detector: an unnamed object of a box's size, by its colour
])
def test_colour_and_size_words_pick_the_unknown_object(things_on_a_table: SceneMemory, phrase: str,
                                                       box: np.ndarray) -> None:
    unknown = _unknown(things_on_a_table)
    assert len(unknown) == 4, [(o.id, np.round(o.box[:6], 2)) for o in unknown]
    answer = Grounder(load_encoder=False).ground(phrase, things_on_a_table.snapshot(),
                                                 vocabulary=things_on_a_table.vocabulary)
    assert answer.success, answer.message
    assert box_iou_3d(answer.best.object.box[None], box[None])[0, 0] > 0.4, answer.message
    assert "unnamed object #" in answer.message


def test_a_class_the_detector_cannot_name_needs_more_than_its_name(things_on_a_table: SceneMemory) -> None:
    """"the pc tower" alone does not say which unnamed object, and none on the table is a PC tower's size;
    a word whose shape is not known ("flurbo") names none of them; "the cup" (a class the detector knows,
    none mapped) never answers with an unnamed one."""
    g = Grounder(load_encoder=False)
    for phrase in ("the pc tower", "the pc tower on the table", "the flurbo on the table", "the cup", "the red cup"):
        answer = g.ground(phrase, things_on_a_table.snapshot(), vocabulary=things_on_a_table.vocabulary)
        assert not answer.success, answer.message
