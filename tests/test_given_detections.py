"""Another detector's image detections (issue 40), without ROS: Detection2DArray <-> detections, the perceptor
that lifts given detections, the same map as the detector run in-process, and the pairing of frames with
detections by stamp (what goes unpaired, and why)."""

from __future__ import annotations

import copy
import os
from pathlib import Path

import numpy as np
import pytest

from embodied_ros.detections import Detections2D
from embodied_ros.errors import FrameError
from embodied_ros.frame_detections import given_detections, named_detections, with_detections
from embodied_ros.mapper import PipelineConfig, SceneMapper
from embodied_ros.messages.detections2d import (
    DETECTION2D_ARRAY,
    detection2d_array_cdr,
    detection2d_array_msg,
    detections_from_cdr,
    detections_from_msg,
)
from embodied_ros.messages.types import msg_class, typestore
from embodied_ros.network.given_detections import GivenDetectionsPerceptor
from embodied_ros.ros.detections_input import SILENT, SLOWER, DetectionPairing

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"


def _wire(msg: object) -> object:
    """Through CDR bytes and back, as a bag or a middleware carries it."""
    store = typestore()
    return store.deserialize_cdr(store.serialize_cdr(msg, DETECTION2D_ARRAY), DETECTION2D_ARRAY)


def test_a_detection2d_array_carries_names_scores_and_pixel_boxes() -> None:
    boxes = np.array([[10.25, 20.5, 110.75, 220.125], [0.0, 0.0, 640.0, 480.0], [300.1, 50.2, 320.3, 70.4]])
    msg = _wire(detection2d_array_msg(["pc tower", "cup", "pc tower"], np.array([0.9, 0.4, 0.2]), boxes,
                                      "rgb_camera_link", 1_700_000_000_123_456_789))
    got = detections_from_msg(msg)
    assert got.stamp_ns == 1_700_000_000_123_456_789 and got.frame_id == "rgb_camera_link"
    assert got.names == ("pc tower", "cup", "pc tower") and got.skipped == 0
    np.testing.assert_allclose(got.scores, [0.9, 0.4, 0.2])
    np.testing.assert_allclose(got.boxes_xyxy, boxes, atol=1e-9)
    assert msg.detections[0].results[0].hypothesis.class_id == "pc tower"
    assert msg.detections[0].bbox.center.position.x == pytest.approx(60.5)  # centre + size, in pixels


def test_the_nodes_bytes_read_back_and_bytes_of_another_message_are_refused() -> None:
    boxes = np.array([[10.25, 20.5, 110.75, 220.125], [300.1, 50.2, 320.3, 70.4]])
    data = detection2d_array_cdr(["food box", "cup"], np.array([0.9, 0.4]), boxes, "rgb_camera_link", 7_000_000_123)
    got = detections_from_cdr(data)
    assert got.stamp_ns == 7_000_000_123 and got.frame_id == "rgb_camera_link" and got.names == ("food box", "cup")
    np.testing.assert_allclose(got.boxes_xyxy, boxes, atol=1e-9)
    header = typestore().serialize_cdr(msg_class("std_msgs/msg/Header")(
        stamp=msg_class("builtin_interfaces/msg/Time")(sec=7, nanosec=0), frame_id="rgb_camera_link"),
        "std_msgs/msg/Header")
    with pytest.raises(FrameError, match="Detection2DArray"):
        detections_from_cdr(bytes(header) + b"\x05\x00\x00\x00")  # a header, then 5 detections that are not there


def test_numeric_ids_rotated_boxes_and_unusable_detections() -> None:
    msg = _wire(detection2d_array_msg(["41", "0", "99", "7"], np.array([0.8, 0.7, 0.6, 0.5]),
                                      np.array([[0, 0, 10, 10], [5, 5, 15, 25], [1, 1, 2, 2], [3, 3, 3, 9]]), "", 0))
    msg.detections[1].bbox.center.theta = np.pi / 2  # a box turned by 90 degrees: its bounds swap width and height
    weaker = copy.deepcopy(msg.detections[0].results[0])  # a second, weaker hypothesis: the best one names it
    weaker.hypothesis.class_id, weaker.hypothesis.score = "0", 0.1
    msg.detections[0].results.insert(0, weaker)
    names = ["person"] + ["thing"] * 40 + ["cup"]
    got = detections_from_msg(msg, names)
    assert got.names == ("cup", "person") and got.skipped == 2  # id 99 has no name; a box 0 px wide is no box
    np.testing.assert_allclose(got.boxes_xyxy[1], [0, 10, 20, 20], atol=1e-9)
    assert detections_from_msg(msg).names == ("41", "0", "99")  # no names given: the id is the name


def test_the_given_perceptor_grows_its_vocabulary_and_refuses_frames_without_detections() -> None:
    from rendered_scenes import look_at, render_frame

    T = look_at(np.array([1.6, -1.2, 1.3]), np.array([0.0, 0.0, 0.2]))
    frame = render_frame(T, [np.array([0.0, 0.0, 0.225, 0.2, 0.4, 0.45, 0.3, 0.0, 0.0])])
    perceptor = GivenDetectionsPerceptor()
    with pytest.raises(FrameError, match="carries no image detections"):
        perceptor.perceive(frame)
    first = perceptor.perceive(with_detections(frame, named_detections(["food box"], [0.5], [[0, 0, 5, 5]])))
    second = perceptor.perceive(with_detections(frame, named_detections(["pc tower", "food box"], [0.9, 0.3],
                                                                        [[0, 0, 9, 9], [1, 1, 5, 5]])))
    assert perceptor.class_names == ("food box", "pc tower") and first.detections.class_names == ("food box",)
    assert second.detections_2d.class_names == ("food box", "pc tower")
    assert [second.detections_2d.class_names[k] for k in second.detections_2d.labels] == ["pc tower", "food box"]
    assert given_detections(frame) is None


@pytest.mark.skipif(not (KITCHEN.is_dir() and (DATA / "yolox_nano").is_dir()),
                    reason=f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")
def test_detections_through_the_message_give_the_same_map_as_the_detector_run_in_process() -> None:
    """The split pipeline's only difference is transport: the same frames, the same objects, ids and boxes."""
    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.recordings import open_source

    config = PipelineConfig()
    inside = SceneMapper(config, build_perceptor("yolox-nano", weights=DATA / "yolox_nano", backend="onnxruntime"))
    split = SceneMapper(config, GivenDetectionsPerceptor(config.lifting))
    detector = inside.perceptor.detector
    n = 0
    with open_source(KITCHEN) as source:
        for frame in source.frames(stride=4, max_frames=25):
            inside.step(frame)
            found = detector.detect(frame.color)
            msg = _wire(detection2d_array_msg([found.class_names[k] for k in found.labels], found.scores,
                                              found.boxes_xyxy, frame.camera_frame, frame.stamp_ns))
            got = detections_from_msg(msg)
            assert got.stamp_ns == frame.stamp_ns
            split.step(with_detections(frame, named_detections(got.names, got.scores, got.boxes_xyxy)))
            n += 1
    a, b = inside.memory.published_objects(), split.memory.published_objects()
    assert n == 25 and len(a) >= 5
    assert [(o.id, o.class_name) for o in a] == [(o.id, o.class_name) for o in b]
    np.testing.assert_allclose(np.stack([o.box for o in a]), np.stack([o.box for o in b]), atol=1e-3)
    assert set(split.memory.vocabulary) <= set(inside.memory.vocabulary)  # the names received, not all 80


def _frame(stamp: int) -> object:
    from rendered_scenes import look_at, render_frame

    frame = render_frame(look_at(np.array([1.6, -1.2, 1.3]), np.zeros(3)), [])
    import dataclasses

    return dataclasses.replace(frame, stamp_ns=stamp)


def test_frames_and_detections_pair_by_stamp_and_what_never_pairs_is_counted_with_its_reason() -> None:
    now = [0.0]
    paired: list[tuple[int, int]] = []
    unpaired: list[tuple[int, str]] = []
    pairing = DetectionPairing(0.5, lambda f, d: paired.append((f.stamp_ns, len(d))),
                               lambda f, r: unpaired.append((f.stamp_ns, r)), silent_frames=2, clock=lambda: now[0])
    dets = named_detections(["cup"], [0.5], [[0, 0, 5, 5]])
    empty = Detections2D(np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0), ())
    pairing.add_frame(_frame(1))  # the frame first ...
    pairing.add_detections(1, dets)  # ... then its detections
    pairing.add_detections(2, empty)  # detections first, then the frame (nothing detected is detections too)
    pairing.add_frame(_frame(2))
    assert paired == [(1, 1), (2, 0)] and not unpaired
    pairing.add_frame(_frame(3))  # the detector skipped this one (slower than the camera) ...
    pairing.add_frame(_frame(4))
    now[0] = 0.3
    pairing.add_detections(4, dets)  # ... and did the next
    now[0] = 0.6
    pairing.expire()
    assert unpaired == [(3, SLOWER)] and paired[-1] == (4, 1)
    pairing.add_detections(3, dets)  # too late: counted, not paired
    pairing.add_detections(99, dets)  # its frame never comes
    now[0] = 1.2
    pairing.expire()
    assert pairing.late == 1 and pairing.orphans == 1
    for stamp in (5, 6, 7):  # the detector died: two frames wait in vain, then frames no longer wait
        pairing.add_frame(_frame(stamp))
        now[0] += 0.6
        pairing.expire()
    assert unpaired[1:] == [(5, SILENT), (6, SILENT), (7, SILENT)] and pairing.silent
    pairing.add_frame(_frame(8))
    assert unpaired[-1] == (8, SILENT)  # at once
    pairing.add_detections(9, dets)  # it is back: frames wait again
    pairing.add_frame(_frame(9))
    assert paired[-1] == (9, 1) and not pairing.silent
    assert pairing.diagnostics()["frames_without_detections"] == 5 and pairing.without == {SLOWER: 1, SILENT: 4}
