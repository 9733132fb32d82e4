"""Fronts of wall-standing objects read from the room: its axes, its interior, and the grounder's use of them."""

from __future__ import annotations

import numpy as np
import pytest
from grounding_scenes import snapshot

from embodied_ros.geometry.boxes import FRONT_AXIS, box_corners, box_rotations
from embodied_ros.grounding import Grounder
from embodied_ros.grounding.room_frame import face_the_room, room_yaw


def _front(box: np.ndarray) -> np.ndarray:
    return (box_rotations(box[None])[0] @ FRONT_AXIS)[:2]


def test_room_yaw_reads_axes_a_right_angle_apart_as_one() -> None:
    yaw = room_yaw(np.radians([10.0, 100.0, -170.0, 12.0]), np.ones(4))
    assert yaw is not None and np.degrees(yaw) == pytest.approx(10.5, abs=0.2)
    assert room_yaw(np.radians([0.0, 45.0]), np.ones(2)) is None  # no common axis
    assert room_yaw(np.zeros(3), np.zeros(3)) is None  # nothing to go by


def _room() -> tuple[list[str], np.ndarray, np.ndarray]:
    """A cabinet against the west wall (x = -2), its front wrongly along -y (along the wall) and
    turned 10 degrees; a door in the north wall facing south; a table and chairs in the middle."""
    names = ["cabinet", "door", "table", "chair", "chair"]
    boxes = np.array([
        [-1.8, 0.0, 0.5, 0.5, 1.2, 1.0, np.radians(10.0), 0, 0],  # front (local -y) ~ -y: wrong
        [0.0, 2.0, 1.0, 0.9, 0.05, 2.0, 0.0, 0, 0],  # front -y: into the room
        [0.0, 0.0, 0.4, 1.2, 0.8, 0.8, 0.0, 0, 0],
        [-1.0, 0.1, 0.45, 0.5, 0.5, 0.9, 0.0, 0, 0],  # in front of the cabinet (+x of it)
        [-1.8, -1.2, 0.45, 0.5, 0.5, 0.9, 0.0, 0, 0],  # beside it (-y): where the wrong front points
    ])
    return names, boxes, np.full(5, 0.8)


def _room_axes(names: list[str], boxes: np.ndarray, scores: np.ndarray) -> tuple[float, np.ndarray]:
    """The room's yaw as the module estimates it, and its east and south directions."""
    fronts = np.array([_front(b) for b in boxes])
    weights = np.where(np.isin(names, ["cabinet", "door"]), scores, 0.0)
    yaw = room_yaw(np.arctan2(fronts[:, 1], fronts[:, 0]), weights)
    assert yaw is not None and 0.0 < np.degrees(yaw) < 10.0  # between the door's 0 and the cabinet's 10
    return yaw, np.array([[np.cos(yaw), np.sin(yaw)], [np.sin(yaw), -np.cos(yaw)]])


def test_a_cabinet_against_a_wall_faces_the_room_and_stays_the_same_box() -> None:
    names, boxes, scores = _room()
    yaw, (east, south) = _room_axes(names, boxes, scores)
    out = face_the_room(boxes, names, scores)
    assert _front(out[0]) == pytest.approx(east, abs=1e-6)  # into the room, on the room's axis
    assert _front(out[1]) == pytest.approx(south, abs=1e-6)  # the door faced the room already
    assert np.array_equal(out[2:], boxes[2:])  # tables and chairs keep their boxes
    # The cabinet is the same box (centre, sizes), squared with the room by a small turn.
    assert sorted(out[0, 3:6]) == pytest.approx(sorted(boxes[0, 3:6]))
    assert out[0, :3] == pytest.approx(boxes[0, :3])
    corners = box_corners(out[0][None])[0][:, :2] @ np.array([east, -south]).T  # in the room's frame
    assert np.ptp(corners, axis=0) == pytest.approx([0.5, 1.2])  # axis-aligned there: 0.5 deep, 1.2 wide
    # Nothing to go by: a lone object, or no class of the list.
    assert np.array_equal(face_the_room(boxes[:1], names[:1], scores[:1]), boxes[:1])
    assert np.array_equal(face_the_room(boxes[2:], names[2:], scores[2:]), boxes[2:])


def test_detector_labels_count_by_their_meaning() -> None:
    names, boxes, scores = _room()
    east = _room_axes(names, boxes, scores)[1][0]
    out = face_the_room(boxes, ["couch", *names[1:]], scores)  # COCO's name for a sofa
    assert _front(out[0]) == pytest.approx(east, abs=1e-6)


def test_the_grounder_reads_in_front_of_a_cabinet_from_the_room() -> None:
    names, boxes, scores = _room()
    scene = snapshot([(n, list(b)) for n, b in zip(names, boxes, strict=True)], scores=list(scores))
    assert Grounder(load_encoder=False).ground("the chair in front of the cabinet", scene).best.object.id == 3
    views_only = Grounder(load_encoder=False, room_facing_classes=())
    assert views_only.ground("the chair in front of the cabinet", scene).best.object.id == 4


@pytest.mark.parametrize(("front_yaw_deg", "expected"), [(90.0, (0.0, 1.0)), (0.0, (1.0, 0.0)), (-90.0, (1.0, 0.0))])
def test_in_a_corner_a_front_facing_the_room_stays(front_yaw_deg: float, expected: tuple[float, float]) -> None:
    """A bed in the south-west corner faces the room along either wall; facing a wall, it is turned
    to face the room along the axis it stands farthest from the middle on (here x)."""
    names = ["bed", "door", "window", "table", "chair"]
    boxes = np.array([
        [-2.4, -1.5, 0.3, 1.0, 1.0, 0.6, np.radians(front_yaw_deg + 90.0), 0, 0],  # front = yaw - 90 degrees
        [0.0, 2.0, 1.0, 0.9, 0.05, 2.0, 0.0, 0, 0],
        [2.0, 0.0, 1.4, 0.05, 1.0, 1.0, np.pi / 2, 0, 0],
        [0.0, 0.0, 0.4, 1.2, 0.8, 0.8, 0.0, 0, 0],
        [0.5, 0.5, 0.45, 0.5, 0.5, 0.9, 0.0, 0, 0],
    ])
    out = face_the_room(boxes, names, np.full(5, 0.8))
    assert _front(out[0]) == pytest.approx(expected, abs=1e-6)
