"""People are movers (issue 39): on rendered scenes with exact depth, a person detected in three looks is published
as a current person in its own layer, never in the static map; a jacket on boxes that the detector calls
"person" does not become one; a small thing called "person" that walks is one; a person's markers have a short
lifetime and their own namespace, and the bag's SceneObjectArray holds them in ``people``."""

from __future__ import annotations

import math

import numpy as np
from rendered_scenes import look_at, project_box, render_frame

from embodied_ros.detections import Detections2D, Detections3D, FramePerception
from embodied_ros.frame import Frame
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.network.lifting import LiftingParams, lift_detections
from embodied_ros.outputs.scene_messages import marker_array, scene_object_array

PERSON = np.array([0.0, 0.0, 0.85, 0.45, 0.3, 1.7, 0.3, 0.0, 0.0])  # standing on the floor
BOXES = np.array([0.0, 0.0, 0.225, 0.5, 0.4, 0.45, 0.0, 0.0, 0.0])  # a stack of boxes ...
JACKET = np.array([0.0, 0.0, 0.6, 0.45, 0.3, 0.3, 0.0, 0.0, 0.0])  # ... with a jacket on them
CHILD = np.array([0.0, 0.0, 0.45, 0.35, 0.25, 0.9, 0.0, 0.0, 0.0])  # too small for a person's shape


def _eye(k: int) -> np.ndarray:
    """Looks from different places (each 0.5 m place its own), 3 m from the middle, 1.5 m high."""
    a = math.radians(-120.0 + 30.0 * k)
    return np.array([3.0 * math.cos(a), 3.0 * math.sin(a), 1.5])


def _look(k: int, scene: list[np.ndarray], called_person: np.ndarray, at: np.ndarray | None = None) -> FramePerception:
    """Look ``k`` at the scene (``at``: where the camera aims), with a "person" detection over ``called_person``."""
    aim = (np.zeros(3) if at is None else at) + [0.0, 0.0, 0.6]
    frame: Frame = render_frame(look_at(_eye(k), aim), scene, index=k)
    frame = Frame(frame.color, frame.depth, frame.K, frame.T_world_camera, stamp_ns=k * 500_000_000, index=k,
                  source_name="rendered")
    found = Detections2D(project_box(frame.T_world_camera, called_person)[None], np.zeros(1, np.int64),
                         np.full(1, 0.8), ("person",))
    return FramePerception(frame.index, frame.stamp_ns, lift_detections(frame, found, LiftingParams()),
                           viewpoint=frame.T_world_camera[:3, 3].copy(), frame=frame)


def test_a_person_seen_in_three_looks_is_a_current_person_and_not_in_the_static_map() -> None:
    memory = SceneMemory()
    for k in range(3):
        memory.update(_look(k, [PERSON], PERSON))
    assert not [o for o in memory.objects() if o.class_name == "person"]  # nothing of it in the map
    (person,) = memory.current_movers()
    assert person.class_name == "person" and np.linalg.norm(person.box[:2] - PERSON[:2]) < 0.2
    assert person.n_looks == 3
    message = scene_object_array([*memory.published_objects(), *memory.current_movers()], "map", 0)
    assert [m.id for m in message.people] == [person.id] and not message.objects
    markers = [m for m in marker_array([person], None, "map", 0).markers if m.ns == "people"]
    assert len(markers) == 2 and all(0 < m.lifetime.sec + m.lifetime.nanosec * 1e-9 <= 2 for m in markers)


def test_a_person_who_left_is_no_longer_shown() -> None:
    memory = SceneMemory()
    for k in range(3):
        memory.update(_look(k, [PERSON], PERSON))
    empty = render_frame(look_at(_eye(3), np.array([0.0, 0.0, 0.6])), [], index=3)
    for k in range(3, 6):  # the room without them, for 1.5 s
        frame = Frame(empty.color, empty.depth, empty.K, empty.T_world_camera, stamp_ns=k * 500_000_000, index=k,
                      source_name="rendered")
        memory.update(FramePerception(k, frame.stamp_ns, Detections3D.empty(("person",), frame.world_frame),
                                      viewpoint=frame.T_world_camera[:3, 3].copy(), frame=frame))
    assert not memory.current_movers() and not [o for o in memory.objects() if o.class_name == "person"]


def test_a_jacket_on_boxes_called_person_does_not_become_one() -> None:
    memory = SceneMemory()
    for k in range(4):
        memory.update(_look(k, [BOXES, JACKET], JACKET))
    assert not [o for o in memory.objects() if o.class_name == "person"]
    assert not memory.current_movers()  # it does not move, and is not a person's shape


def test_a_small_thing_called_person_that_walks_is_a_mover() -> None:
    memory = SceneMemory()
    for k in range(3):
        child = CHILD + [0.6 * k, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        memory.update(_look(k, [child], child, at=child[:3] - [0, 0, 0.45]))
    (mover,) = memory.current_movers()
    assert np.linalg.norm(mover.box[:2] - (CHILD[:2] + [1.2, 0.0])) < 0.2
    assert not [o for o in memory.objects() if o.class_name == "person"]
