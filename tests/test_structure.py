"""The room's structure (issue 39) on rendered scenes with exact depth: a worktop on cabinets along a wall is a
counter and the cabinets below it a cabinet, a free-standing table is neither; boards on a wall are shelves,
counted from the top; a drawer unit against a wall is a cabinet. Grounding speaks about them ("the cup on the
counter", "the second shelf", "the cabinet under the sink")."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from rendered_scenes import look_at, project_box, render_frame

from embodied_ros.detections import Detections2D, Detections3D, FramePerception
from embodied_ros.frame import Frame
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.grounding import Grounder
from embodied_ros.grounding.map_view import published_snapshot
from embodied_ros.memory.config import MemoryConfig
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.memory.scene_object import MemorySnapshot, SceneObject
from embodied_ros.memory.structure import RoomStructure
from embodied_ros.memory.structure_rules import RoomSurfaces, StructureParams, StructurePiece, find_structure
from embodied_ros.network.lifting import LiftingParams, lift_detections

WALL_Y = 1.5  # the wall the rendered room has, facing the cameras (at y < 0)
CABINETS = np.array([0.0, 1.2, 0.43, 2.0, 0.6, 0.86, 0.0, 0.0, 0.0])  # against the wall, 0.6 m deep
WORKTOP = np.array([0.0, 1.19, 0.88, 2.04, 0.62, 0.04, 0.0, 0.0, 0.0])  # on them, overhanging 2 cm
CUP_ON_WORKTOP = np.array([0.4, 1.1, 0.95, 0.08, 0.08, 0.1, 0.0, 0.0, 0.0])
TABLE_TOP = np.array([0.0, -0.8, 0.74, 1.2, 0.8, 0.03, 0.0, 0.0, 0.0])  # free-standing, 0.75 m high
LEGS = [np.array([x, y, 0.3625, 0.05, 0.05, 0.725, 0.0, 0.0, 0.0]) for x in (-0.55, 0.55) for y in (-1.15, -0.45)]
CUP_ON_TABLE = np.array([-0.2, -0.8, 0.805, 0.08, 0.08, 0.1, 0.0, 0.0, 0.0])
BOARDS = [np.array([0.0, WALL_Y - 0.15, z, 1.2, 0.3, 0.02, 0.0, 0.0, 0.0]) for z in (0.5, 0.9, 1.3)]
DRAWERS = np.array([0.0, WALL_Y - 0.225, 0.375, 0.8, 0.45, 0.75, 0.0, 0.0, 0.0])  # a drawer unit, 0.45 m deep


def _frames(boxes: list[np.ndarray], target: np.ndarray, n: int = 5, height: float = 1.6,
            distance: float = 2.8) -> list[Frame]:
    """Views from the room's side, each from its own place, 3 s apart (the structure's rules run every 2 s)."""
    eyes = [target + np.array([distance * math.cos(a), distance * math.sin(a), 0.0]) for a in
            np.radians(np.linspace(-120.0, -60.0, n))]
    return [render_frame(look_at(np.array([e[0], e[1], height]), target), boxes, wall_y=WALL_Y, index=30 * k)
            for k, e in enumerate(eyes)]


def _perception(frame: Frame, named: list[tuple[str, np.ndarray]] = ()) -> FramePerception:
    names = ("diningtable", "cup")
    if named:
        boxes_2d = np.array([project_box(frame.T_world_camera, box) for _, box in named])
        found = Detections2D(boxes_2d, np.array([names.index(n) for n, _ in named]), np.full(len(named), 0.9), names)
        detections = lift_detections(frame, found, LiftingParams())
    else:
        detections = Detections3D.empty(names, frame.world_frame)
    return FramePerception(frame.index, frame.stamp_ns, detections, viewpoint=frame.T_world_camera[:3, 3].copy(),
                           frame=frame)


def _map(frames: list[Frame], named: list[tuple[str, np.ndarray]] = ()) -> SceneMemory:
    memory = SceneMemory()
    for frame in frames:
        memory.update(_perception(frame, named))
    return memory


def _of(memory: SceneMemory, name: str) -> list[SceneObject]:
    return [o for o in memory.published_structure() if o.class_name == name]


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    return float(box_iou_3d(a[None], b[None])[0, 0])


@pytest.fixture(scope="module")
def kitchen() -> SceneMemory:
    """A worktop on cabinets along the wall, a table in the room, a cup on each."""
    boxes = [CABINETS, WORKTOP, CUP_ON_WORKTOP, TABLE_TOP, *LEGS, CUP_ON_TABLE]
    named = [("diningtable", TABLE_TOP), ("cup", CUP_ON_WORKTOP), ("cup", CUP_ON_TABLE)]
    return _map(_frames(boxes, np.array([0.0, 0.4, 0.6]), distance=2.3), named)


def test_a_worktop_along_a_wall_is_a_counter_on_a_cabinet_and_a_free_standing_table_is_not(kitchen) -> None:
    (counter,) = _of(kitchen, "counter")
    (cabinet,) = _of(kitchen, "cabinet")
    assert _iou(counter.box, WORKTOP) > 0.4, counter.box
    assert _iou(cabinet.box, CABINETS) > 0.6, cabinet.box
    assert counter.n_looks >= 2 and counter.confidence >= 0.7  # evidence in looks, as objects'
    table_area = np.array([TABLE_TOP[0], TABLE_TOP[1], 0.5, 1.4, 1.0, 1.0, 0.0, 0.0, 0.0])
    assert all(_iou(o.box, table_area) == 0.0 for o in kitchen.published_structure() if o.class_name != "floor")
    assert len(_of(kitchen, "wall")) == 1 and len(_of(kitchen, "floor")) == 1
    assert not _of(kitchen, "shelf")
    # Objects and structure share the id counter: no id names two things.
    ids = [o.id for o in kitchen.objects()] + [o.id for o in kitchen.structure_objects()]
    assert len(ids) == len(set(ids))


def test_a_free_standing_table_no_detector_names_is_no_counter() -> None:
    """The rule alone, without the named table's box: a surface at working height whose back edge is 1 m from
    the wall rising behind it is not structure."""
    shift = np.array([0.0, 0.9, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    memory = _map(_frames([TABLE_TOP + shift, *(leg + shift for leg in LEGS)], np.array([0.0, 0.3, 0.5]),
                          distance=2.3))
    assert _of(memory, "wall")  # the wall was seen
    assert not [o for o in memory.published_structure() if o.class_name not in ("floor", "wall")]


def test_the_structure_is_saved_with_the_map(kitchen, tmp_path) -> None:
    kitchen.save(tmp_path / "memory.json")
    again = SceneMemory.load(tmp_path / "memory.json")
    assert again.published_structure() == kitchen.published_structure()


def test_a_board_stack_on_a_wall_is_shelves_counted_from_the_top() -> None:
    memory = _map(_frames(BOARDS, np.array([0.0, WALL_Y - 0.3, 0.8]), height=1.8, distance=2.4))
    shelves = sorted(_of(memory, "shelf"), key=lambda o: o.box[2])
    assert [round(float(o.box[2] + 0.5 * o.box[5]), 2) for o in shelves] == pytest.approx([0.51, 0.91, 1.31],
                                                                                           abs=0.02)
    assert all(_iou(o.box, b) > 0.3 for o, b in zip(shelves, BOARDS, strict=True))
    assert not _of(memory, "counter") and not _of(memory, "cabinet")
    grounder = Grounder(load_encoder=False)
    view = published_snapshot(memory)
    assert grounder.ground("the second shelf", view).best.object.id == shelves[1].id
    assert grounder.ground("the top shelf", view).best.object.id == shelves[2].id
    assert not grounder.ground("the fourth shelf", view).success


def test_a_drawer_unit_against_a_wall_is_a_cabinet_and_its_top_no_counter() -> None:
    memory = _map(_frames([DRAWERS], np.array([0.0, 1.0, 0.4]), distance=2.4))
    (cabinet,) = _of(memory, "cabinet")
    assert _iou(cabinet.box, DRAWERS) > 0.6, cabinet.box
    assert not _of(memory, "counter") and not _of(memory, "shelf")  # 0.45 m deep: a dresser's top, not a worktop


def test_a_desk_on_legs_against_a_wall_is_a_worktop_and_no_cabinet() -> None:
    """A deep surface at working height along a wall is a counter (a worktop) whatever holds it up; its front
    does not reach the floor, so there is no cabinet under it."""
    top = np.array([0.0, WALL_Y - 0.3, 0.74, 1.2, 0.6, 0.03, 0.0, 0.0, 0.0])
    legs = [np.array([x, y, 0.3625, 0.05, 0.05, 0.725, 0.0, 0.0, 0.0]) for x in (-0.55, 0.55)
            for y in (WALL_Y - 0.55, WALL_Y - 0.05)]
    memory = _map(_frames([top, *legs], np.array([0.0, 1.0, 0.5]), distance=2.3))
    (counter,) = _of(memory, "counter")
    assert _iou(counter.box, top) > 0.3, counter.box
    assert not _of(memory, "cabinet")


def test_a_unit_hung_on_the_wall_is_no_cabinet() -> None:
    """A cabinet stands on the floor: a unit hung on the wall (0.5 to 0.9 m) has a front that does not reach
    down; its shallow top along the wall is a surface things can stand on, a shelf."""
    unit = np.array([0.0, WALL_Y - 0.175, 0.7, 1.0, 0.35, 0.4, 0.0, 0.0, 0.0])
    memory = _map(_frames([unit], np.array([0.0, 1.0, 0.5]), distance=2.3))
    assert not _of(memory, "cabinet")
    (shelf,) = _of(memory, "shelf")
    assert shelf.box[2] + 0.5 * shelf.box[5] == pytest.approx(0.9, abs=0.02)


def test_a_free_standing_block_is_no_cabinet() -> None:
    """Box-like furniture is a cabinet against a wall; the same block in the middle of the room is not."""
    block = DRAWERS.copy()
    block[1] = -0.5  # two metres in front of the wall
    memory = _map(_frames([block], np.array([0.0, -0.3, 0.4]), distance=2.4))
    assert not [o for o in memory.published_structure() if o.class_name not in ("floor", "wall")]


def test_the_cup_on_the_counter_is_the_one_on_the_worktop(kitchen) -> None:
    grounder = Grounder(load_encoder=False)
    view = published_snapshot(kitchen)
    on_counter = grounder.ground("the cup on the counter", view)
    assert on_counter.success and _iou(on_counter.best.object.box, CUP_ON_WORKTOP) > 0.2, on_counter.message
    assert "counter #" in on_counter.best.explanation
    on_table = grounder.ground("the cup on the table", view)
    assert on_table.success and _iou(on_table.best.object.box, CUP_ON_TABLE) > 0.2, on_table.message
    assert grounder.ground("the counter", view).best.object.class_name == "counter"  # not the table


def test_a_part_found_again_keeps_its_id() -> None:
    """The rules run again as more is seen: a worktop found 4 cm higher (its surface seen better) is the same
    counter, with the same id, not a second one beside a stale first."""
    ids = iter(range(100, 200))
    structure = RoomStructure(MemoryConfig(), lambda: next(ids))
    perception = FramePerception(0, 0, Detections3D.empty(("cup",), "map"))
    structure._take([StructurePiece("counter", WORKTOP), StructurePiece("cabinet", CABINETS, -np.pi / 2)], perception)
    higher = WORKTOP + np.array([0.0, 0.0, 0.04, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    structure._take([StructurePiece("counter", higher), StructurePiece("cabinet", CABINETS, -np.pi / 2)], perception)
    assert sorted((o.id, o.class_name) for o in structure.objects()) == [(100, "counter"), (101, "cabinet")]
    assert structure.objects()[0].box[2] == pytest.approx(higher[2])


def _object(i: int, name: str, box: list[float]) -> SceneObject:
    return SceneObject(i, name, 0.8, np.array(box + [0.0, 0.0]), ((name, 0.8),), 3, 0, 9, 0, 9, confidence=0.95)


def _snapshot(objects: list[SceneObject]) -> MemorySnapshot:
    return MemorySnapshot(tuple(objects), np.array([o.id for o in objects]), np.array([o.box for o in objects]),
                          np.array([o.score for o in objects]), tuple(o.class_name for o in objects), "map")


def test_the_cabinet_under_the_sink_and_the_chair_by_the_wall() -> None:
    """On a constructed map: two cabinet runs under one worktop, a sink set into the worktop above the right
    one, a wall behind them, a chair by the wall and one in the room."""
    objects = [_object(1, "cabinet", [-0.6, 1.2, 0.43, 1.2, 0.6, 0.86, 0.0]),
               _object(2, "cabinet", [0.6, 1.2, 0.43, 1.2, 0.6, 0.86, 0.0]),
               _object(3, "counter", [0.0, 1.19, 0.88, 2.4, 0.62, 0.04, 0.0]),
               _object(4, "sink", [0.7, 1.2, 0.8, 0.5, 0.4, 0.2, 0.0]),
               _object(5, "wall", [0.0, 1.55, 1.0, 4.0, 0.1, 2.0, 0.0]),
               _object(6, "chair", [1.6, 1.2, 0.45, 0.45, 0.45, 0.9, 0.0]),
               _object(7, "chair", [0.0, -1.5, 0.45, 0.45, 0.45, 0.9, 0.0])]
    grounder = Grounder(load_encoder=False)
    view = _snapshot(objects)
    assert grounder.ground("the cabinet under the sink", view).best.object.id == 2
    assert grounder.ground("the chair by the wall", view).best.object.id == 6
    without_walls = _snapshot([o for o in objects if o.class_name != "wall"])
    assert not grounder.ground("the chair by the wall", without_walls).success  # no wall in the map: not checked
    far = _snapshot([o for o in objects if o.id != 6])
    assert not grounder.ground("the chair by the wall", far).success  # 3 m from the wall's face is not by it
    # The room's parts are no "thing": the worktop lies on the cabinets, and is not the thing on them.
    assert not grounder.ground("the thing on the cabinet", _snapshot(objects[:3])).success


def test_a_shelf_seen_in_parts_between_the_things_standing_on_it_is_one_shelf() -> None:
    """A wall shelf's board is seen in two parts: a model standing across it hides the board between them, and a
    row of brochures at its back hides the back of the left part from every view (as on the kitchen's red
    shelf). The things standing on it join the parts: one shelf along the whole board."""
    wall_y, top, cell = 1.5, 0.9, 0.04
    x, z = np.meshgrid(np.arange(-1.5, 1.5, cell) + 0.5 * cell, np.arange(0.0, 2.0, cell) + 0.5 * cell)
    wall = np.column_stack([x.ravel(), np.full(x.size, wall_y - 0.5 * cell), z.ravel()])
    board = np.array([0.0, wall_y - 0.15, top - 0.01, 1.6, 0.3, 0.02, 0.0, 0.0, 0.0])

    def cells(x0: float, x1: float, y0: float, y1: float) -> np.ndarray:
        gx, gy = np.meshgrid(np.arange(x0, x1, cell) + 0.5 * cell, np.arange(y0, y1, cell) + 0.5 * cell)
        return np.column_stack([gx.ravel(), gy.ravel(), np.full(gx.size, top - 0.01)])

    floor = cells(-1.5, 1.5, -1.0, 1.4)
    floor[:, 2] = 0.01
    seen = np.vstack([floor, cells(0.16, 0.8, 1.2, wall_y), cells(-0.8, -0.16, 1.2, 1.32)])
    model = np.array([0.0, wall_y - 0.15, top + 0.15, 0.3, 0.28, 0.3, 0.0, 0.0, 0.0])
    brochures = np.array([-0.48, wall_y - 0.09, top + 0.14, 0.6, 0.14, 0.28, 0.0, 0.0, 0.0])
    room = RoomSurfaces(seen, wall, np.full(len(wall), -np.pi / 2), 0.0, np.zeros((0, 9)),
                        things=np.array([model, brochures]))
    (shelf,) = [q for q in find_structure(room, StructureParams()) if q.class_name == "shelf"]
    assert shelf.box[0] - 0.5 * shelf.box[3] == pytest.approx(-0.8, abs=0.05), shelf.box  # the whole board's length
    assert shelf.box[0] + 0.5 * shelf.box[3] == pytest.approx(0.8, abs=0.05), shelf.box
    assert shelf.box[2] + 0.5 * shelf.box[5] == pytest.approx(board[2] + 0.01, abs=0.02)
    alone = [q for q in find_structure(replace(room, things=np.zeros((0, 9))), StructureParams())
             if q.class_name == "shelf"]
    assert [round(float(q.box[0] - 0.5 * q.box[3]), 2) for q in alone] == [0.16]  # the right part only
