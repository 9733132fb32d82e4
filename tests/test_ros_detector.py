"""The detector as a node of its own (issue 40), with real rclpy, in-process on its own domain id.

The embodied_detector node publishes vision_msgs/Detection2DArray; a map node with ``detections_topic``
pairs them with its frames by stamp and gives the same objects as the node that runs the detector
itself; a test publisher replaying a detector with a vocabulary the project never shipped ("pc tower",
"food box") fills the map and ``~/ground`` answers "the PC tower"; frames whose detections never come
are counted with the reason and their depth still goes into the occupancy map. vision_msgs has no
PyPI wheel: these run inside the ROS 2 tree of ../shared/ros2 (test_ros2_tree.py) and skip elsewhere,
saying so. The same nodes as separate processes over DDS: test_ros2_tree.py.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_harness import FramePublisher, InProcessRos, prepare, wait_until

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"
pytestmark = pytest.mark.skipif(importlib.util.find_spec("vision_msgs") is None,
                                reason="vision_msgs is not installed here (no PyPI wheel; runs in the ROS 2 tree)")


@pytest.fixture(scope="module")
def ros(tmp_path_factory: pytest.TempPathFactory) -> Any:
    reason = prepare()
    if reason:
        pytest.skip(reason)
    if not (KITCHEN.is_dir() and (DATA / "yolox_nano").is_dir()):
        pytest.skip(f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")
    os.environ["EMBODIED_ROS_CACHE"] = str(tmp_path_factory.getbasetemp() / "cache")
    from embodied_ros.recordings import open_source

    harness = InProcessRos()
    harness.frames = [f for f in open_source(KITCHEN).frames(stride=5, max_frames=12) if not isinstance(f, Exception)]
    harness.nodes = []
    yield harness
    harness.close(harness.nodes)


def _objects(ros: Any, topic: str) -> list[Any]:
    from embodied_ros.msg import SceneObjectArray

    got: list[Any] = []
    ros.client.create_subscription(SceneObjectArray, topic, got.append, 10)
    return got


def test_the_nodes_detection_bytes_are_those_rclpy_writes_and_reads() -> None:
    from rclpy.serialization import deserialize_message, serialize_message
    from vision_msgs.msg import Detection2DArray

    from embodied_ros.messages.detections2d import detection2d_array_cdr, detection2d_array_msg, detections_from_cdr
    from embodied_ros.ros.conversions import to_rclpy

    args = (["pc tower", "cup"], np.array([0.9, 0.25]), np.array([[10.5, 20.25, 110.0, 220.0], [1, 2, 3, 4]]),
            "rgb_camera_link", 1_700_000_000_123_456_789)
    data = detection2d_array_cdr(*args)
    assert isinstance(data, bytes) and data == serialize_message(to_rclpy(detection2d_array_msg(*args)))
    msg = deserialize_message(data, Detection2DArray)
    assert [d.results[0].hypothesis.class_id for d in msg.detections] == ["pc tower", "cup"]
    assert msg.detections[0].bbox.size_x == pytest.approx(99.5) and msg.header.stamp.nanosec == 123_456_789
    assert detections_from_cdr(serialize_message(msg)).names == ("pc tower", "cup")


def test_the_detector_node_and_a_map_node_give_the_objects_of_the_node_that_runs_the_detector(ros: Any) -> None:
    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.ros.detector_node import EmbodiedDetectorNode

    perceptor = build_perceptor("yolox-nano", weights=DATA / "yolox_nano", backend="onnxruntime")
    common = dict(pose_topic="camera_pose", world_frame="world", keyframe_max_interval=0.0,
                  memory__publish_confidence=0.0)
    inside = ros.node(perceptor, namespace="/inside", **common)
    # a loaded 2-core machine may take longer than the default 0.5 s to detect: the frames wait for it here
    split = ros.node(None, namespace="/split", detections_topic="embodied_detector/detections", detections_wait=10.0,
                     **common)
    detector = EmbodiedDetectorNode(perceptor.detector, namespace="/split", context=ros.context)
    ros.executor.add_node(detector)
    ros.nodes += [inside, split, detector]
    assert wait_until(detector.ready.is_set, 60)
    got = {"inside": _objects(ros, "/inside/embodied_perception/objects"),
           "split": _objects(ros, "/split/embodied_perception/objects")}
    publishers = [FramePublisher(ros.client, "/inside/"), FramePublisher(ros.client, "/split/")]
    assert all(p.wait_for_subscribers() for p in publishers)
    for i, frame in enumerate(ros.frames):
        stamp = ros.client.get_clock().now().nanoseconds
        for p in publishers:
            p.publish(frame, stamp, settle=0.1)
        assert wait_until(lambda n=i + 1: min(len(got["inside"]), len(got["split"])) >= n, 60), (
            f"frame {i}: {split.last_problem} {split.detections.diagnostics()}")
    a, b = got["inside"][-1], got["split"][-1]
    assert a.header.stamp == b.header.stamp and len(a.objects) >= 3
    assert [(o.id, o.class_name) for o in a.objects] == [(o.id, o.class_name) for o in b.objects]
    np.testing.assert_allclose([o.box for o in a.objects], [o.box for o in b.objects], atol=1e-3)  # 1 mm
    diagnostics = split.detections.diagnostics()
    assert diagnostics["frames_with_detections"] == len(ros.frames) and diagnostics["frames_without_detections"] == 0
    assert detector.counts["detected"] == len(ros.frames)
    assert set(split.mapper.memory.vocabulary) < set(inside.mapper.memory.vocabulary)  # what was received


def test_a_detector_with_a_vocabulary_never_shipped_fills_the_map_and_grounds_the_pc_tower(ros: Any) -> None:
    """A test publisher replays a detector's Detection2DArray ("pc tower", "food box"; ground_truth_detector.py)."""
    import ground_truth_detector
    from embodied_ros.srv import Ground
    from vision_msgs.msg import Detection2DArray

    from embodied_ros.messages.detections2d import detection2d_array_msg
    from embodied_ros.recordings import open_source
    from embodied_ros.ros.conversions import to_rclpy

    node = ros.node(None, namespace="/third", pose_topic="camera_pose", world_frame="world",
                    keyframe_max_interval=0.0, detections_topic="/third_party/detections", detections_wait=10.0)
    ros.nodes.append(node)
    boxes = ground_truth_detector.annotated_boxes(KITCHEN)
    frames = [f for f in open_source(KITCHEN).frames(stride=3) if not isinstance(f, Exception)]
    camera, detector = FramePublisher(ros.client, "/third/"), ros.client.create_publisher(
        Detection2DArray, "/third_party/detections", 10)
    assert camera.wait_for_subscribers()
    for frame in frames:
        stamp = camera.publish(frame, settle=0.05)
        names, scores, pixel_boxes = ground_truth_detector.detect(frame, boxes)
        detector.publish(to_rclpy(detection2d_array_msg(names, scores, pixel_boxes, "rgb_camera_link", stamp)))
        assert wait_until(lambda n=node, s=stamp: n.mapper.last_frame is not None
                          and n.mapper.last_frame.stamp_ns == s, 60), node.detections.diagnostics()
    assert node.worker.wait_idle(30)
    published = {o.class_name for o in node.mapper.memory.published_objects()}
    assert {"pc tower", "food box"} <= published, published
    answer = ros.call(Ground, "/third/embodied_perception/ground", Ground.Request(phrase="the PC tower"))
    assert answer.success and answer.best.object.class_name == "pc tower", answer.message
    tower = dict(boxes)["pc tower"]
    assert np.hypot(answer.best.object.box[0] - tower[0], answer.best.object.box[1] - tower[1]) < 0.3
    unknown = ros.call(Ground, "/third/embodied_perception/ground", Ground.Request(phrase="the cup"))
    assert not unknown.success and "pc tower" in unknown.message and "food box" in unknown.message, unknown.message


def test_frames_whose_detections_never_come_are_counted_and_their_depth_still_maps(ros: Any) -> None:
    from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

    from embodied_ros.ros.detections_input import SILENT

    node = ros.node(None, namespace="/dead", pose_topic="camera_pose", world_frame="world",
                    keyframe_max_interval=0.0, detections_topic="/nobody/detections", diagnostics_period=0.2)
    ros.nodes.append(node)
    status: list[Any] = []
    mine = ("detections_topic", "/nobody/detections")
    ros.client.create_subscription(DiagnosticArray, "/diagnostics", lambda m: status.extend(
        s for s in m.status if mine in {(v.key, v.value) for v in s.values}), 10)
    camera = FramePublisher(ros.client, "/dead/")
    assert camera.wait_for_subscribers()
    for frame in ros.frames[:5]:
        camera.publish(frame, settle=0.05)
        wait_until(lambda: False, 0.3)
    assert wait_until(lambda: node.detections.pairing.without.get(SILENT, 0) == 5, 30), node.detections.diagnostics()
    assert wait_until(lambda: node.worker.stats.depth_fused >= 1, 30)
    assert len(node.mapper.occupancy.occupied_voxels()) > 0 and len(node.mapper.memory) == 0
    assert node.worker.stats.processed == 0
    assert wait_until(lambda: any(any(v.key == "frames_without_detections" and v.value == "5" for v in s.values)
                                  for s in status[-3:]), 10)
    assert "detector silent" in status[-1].message and status[-1].level == DiagnosticStatus.WARN  # with the reason


def test_the_player_publishes_a_recordings_detections_stamped_like_its_images(ros: Any) -> None:
    """``play --detections-topic``: each frame's recorded detections go out with the images' stamp."""
    import argparse

    from sensor_msgs.msg import Image
    from vision_msgs.msg import Detection2DArray

    from embodied_ros.frame_detections import named_detections, with_detections
    from embodied_ros.ros.player import Player, add_play_arguments

    parser = argparse.ArgumentParser()
    add_play_arguments(parser)
    args = parser.parse_args(["unused", "--namespace", "/played", "--detections-topic", "/played/detections",
                              "--pose-topic", "camera_pose", "--no-tf"])
    player = Player(ros.client, args)
    got: dict[str, list[Any]] = {"detections": [], "image": []}
    ros.client.create_subscription(Detection2DArray, "/played/detections", got["detections"].append, 10)
    ros.client.create_subscription(Image, "/played/rgb/image_raw", got["image"].append, 10)
    assert wait_until(lambda: player.detections.get_subscription_count() and player.color.get_subscription_count(), 10)
    found = named_detections(["food box", "pc tower"], np.array([0.8, 0.6]), np.array([[1, 2, 30, 40], [5, 6, 70, 80]]))
    stamp = player.publish(with_detections(ros.frames[0], found), 1_700_000_000_000_000_123)
    assert wait_until(lambda: got["detections"] and got["image"], 10)
    msg, image = got["detections"][0], got["image"][0]
    assert msg.header.stamp == image.header.stamp and stamp == 1_700_000_000_000_000_123
    assert msg.header.frame_id == image.header.frame_id
    assert [d.results[0].hypothesis.class_id for d in msg.detections] == ["food box", "pc tower"]
    assert msg.detections[1].bbox.center.position.x == pytest.approx(37.5)
