"""Existence evidence per place: a new look from a place replaces its old one, so going round a room
again does not make a recurring detection surer; within one look evidence adds up."""

from __future__ import annotations

import numpy as np
import pytest
from rendered_scenes import look_at, project_box, render_frame

from embodied_ros.detections import Detections2D, FramePerception
from embodied_ros.memory.existence import ExistenceEvidence, place_of
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.network.lifting import LiftingParams, lift_detections

CRATE = np.array([0.0, 2.0, 0.2, 0.4, 0.4, 0.4, 0.0, 0.0, 0.0])
EYE = np.array([0.0, 0.0, 1.0])
S = 1_000_000_000  # one second in ns
BOUNDS = dict(lo=-4.0, hi=6.0)


def test_a_new_look_from_a_place_replaces_its_old_one_and_a_look_adds_up() -> None:
    ev = ExistenceEvidence(base=0.5)
    here, there = (0, 0, 0), (1, 0, 0)
    for t in (0, 1, 2):  # one look: 3 x 1.0
        ev.add(1.0, here, t * S, revisit_s=10.0, max_places=8, **BOUNDS)
    ev.add(-0.25, there, 3 * S, revisit_s=10.0, max_places=8, **BOUNDS)
    assert ev.log_odds(**BOUNDS) == pytest.approx(0.5 + 3.0 - 0.25)
    assert not ev.looks_again(here, 12 * S, 10.0) and ev.looks_again(here, 13 * S, 10.0)
    ev.add(-0.5, here, 13 * S, revisit_s=10.0, max_places=8, **BOUNDS)  # back after 11 s: a new look
    assert ev.log_odds(**BOUNDS) == pytest.approx(0.5 - 0.5 - 0.25)
    ev.add(-0.5, here, 14 * S, revisit_s=0.0, max_places=8, **BOUNDS)  # 0: never a new look
    assert ev.log_odds(**BOUNDS) == pytest.approx(0.5 - 1.0 - 0.25)
    ev.add(9.0, there, 15 * S, revisit_s=10.0, max_places=8, **BOUNDS)  # a look is clamped like the total
    assert ev.places[there][0] == 6.0 and ev.log_odds(**BOUNDS) == pytest.approx(0.5 - 1.0 + 6.0)
    ev.add(1.0, None, 16 * S, revisit_s=10.0, max_places=8, **BOUNDS)  # no viewpoint: the base
    assert ev.base == pytest.approx(1.5)
    assert ExistenceEvidence.from_dict(ev.to_dict()) == ev


def test_places_beyond_the_bound_join_the_base() -> None:
    ev = ExistenceEvidence()
    for k in range(5):
        ev.add(0.1 * (k + 1), (k, 0, 0), k * S, revisit_s=10.0, max_places=3, **BOUNDS)
    assert sorted(ev.places) == [(2, 0, 0), (3, 0, 0), (4, 0, 0)]  # the two looked from longest ago went
    assert ev.base == pytest.approx(0.1 + 0.2) and ev.log_odds(**BOUNDS) == pytest.approx(1.5)


def test_place_of_a_camera_position() -> None:
    assert place_of(np.array([0.49, -0.01, 1.2]), 0.5) == (0, -1, 2)
    assert place_of(None, 0.5) is None and place_of(np.zeros(3), 0.0) is None


def _crate_pass(memory: SceneMemory, start: int, eyes: list[np.ndarray], score: float, detect: bool = True) -> float:
    """One pass: from each eye two frames, in the first the crate is detected with ``score`` (if
    ``detect``), in the second it is in plain view and not detected. Returns the crate's confidence
    after the pass, 0 once it is forgotten."""
    index = start
    for eye in eyes:
        T = look_at(eye, CRATE[:3])
        for detected in (True, False):
            frame = render_frame(T, [CRATE], index=index)
            boxes = [project_box(T, CRATE)] if detected and detect else []
            dets = Detections2D(np.array(boxes).reshape(-1, 4), np.zeros(len(boxes), np.int64),
                                np.full(len(boxes), score), ("box",))
            memory.update(FramePerception(index, frame.stamp_ns, lift_detections(frame, dets, LiftingParams()), dets,
                                          viewpoint=eye, frame=frame))
            index += 1
    objects = memory.objects()
    return objects[0].confidence if objects else 0.0


def test_going_round_again_does_not_make_a_recurring_detection_surer(tmp_path) -> None:
    eyes = [EYE, EYE + [1.0, 0.0, 0.0], EYE + [-1.0, 0.0, 0.0]]
    places, one_sum = SceneMemory(), SceneMemory(existence_revisit_s=0.0)
    # Passes 100 s apart (render_frame stamps frames 0.1 s apart).
    by_place = [_crate_pass(places, 1000 * k, eyes, 0.4) for k in range(6)]
    summed = [_crate_pass(one_sum, 1000 * k, eyes, 0.4) for k in range(6)]
    assert by_place[0] == pytest.approx(summed[0]) and by_place[0] < 0.7  # one pass: the same, unconfirmed
    np.testing.assert_allclose(by_place, by_place[0])  # each pass says what the first said
    one_place = SceneMemory()  # a new look's first detection counts whole, though from where the last one was
    np.testing.assert_allclose([_crate_pass(one_place, 1000 * k, [EYE], 0.4) for k in range(3)],
                               _crate_pass(SceneMemory(), 0, [EYE], 0.4))
    assert summed[-1] > 0.7 > by_place[-1] and places.published_objects() == []
    # The places survive saving: both memories go on alike.
    places.save(tmp_path / "memory.json")
    loaded = SceneMemory.load(tmp_path / "memory.json")
    assert _crate_pass(loaded, 6000, eyes, 0.4) == pytest.approx(_crate_pass(places, 6000, eyes, 0.4))


def test_an_object_missed_on_every_later_pass_is_forgotten() -> None:
    memory = SceneMemory()
    first = _crate_pass(memory, 0, [EYE], 0.5)
    later = [_crate_pass(memory, 1000 * k, [EYE], 0.5, detect=False) for k in range(1, 11)]
    assert first > 0.5 > later[0]  # each later look says "not there" ...
    assert later[-1] == 0.0 and memory.objects() == []  # ... and all of them together let it go
