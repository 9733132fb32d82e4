"""The node's own faults, with real rclpy in-process: it stays up, says each fault once, and keeps its map.

Runs here on the venv's ROS 2 wheels (Fast DDS) and from test_ros2_tree.py on the ROS 2 tree of
../shared/ros2 (Cyclone DDS, with tf2_ros: the TF cases run there). Each case feeds a node real
redkitchen frames first (its map holds objects), then the fault, then a good frame again, and checks:
the frames of the fault never reach the scene memory (its objects are as they were), the fault is
named in /diagnostics while it lasts and said once on /rosout (not once a frame), services still
answer, and the node goes on (the good frame after the fault is processed). Skips with the reason
when ROS 2, the interface build or the real data are missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ros_harness import FramePublisher, InProcessRos, prepare, wait_until

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN, YOLO = DATA / "redkitchen", DATA / "yolo_fastest"
N_BAD = 6  # faulty frames sent per case: the fault must be said once, not six times
INFO_LEAD_S = 0.2  # seconds a faulty camera_info is sent ahead of its images (_send_info_first)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


@pytest.fixture(scope="module")
def ros(tmp_path_factory: pytest.TempPathFactory) -> Any:
    reason = prepare()
    if reason:
        pytest.skip(reason)
    if not (KITCHEN.is_dir() and YOLO.is_dir()):
        pytest.skip(f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")
    os.environ["EMBODIED_ROS_CACHE"] = str(tmp_path_factory.getbasetemp() / "cache")
    from diagnostic_msgs.msg import DiagnosticArray
    from rcl_interfaces.msg import Log

    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.recordings import open_source

    harness = InProcessRos()
    harness.perceptor = build_perceptor("yolo-fastest-1.1-xl", weights=YOLO)
    harness.map_dir = str(tmp_path_factory.mktemp("maps"))
    harness.frames = [f for f in open_source(KITCHEN).frames(stride=20, max_frames=4) if not isinstance(f, Exception)]
    harness.nodes = []
    harness.rosout, harness.diagnostics = [], []
    harness.client.create_subscription(Log, "/rosout", harness.rosout.append, 1000)
    harness.client.create_subscription(DiagnosticArray, "/diagnostics", harness.diagnostics.append, 100)
    yield harness
    harness.close(harness.nodes)


def _node(ros: Any, name: str, perceptor: Any = None, **params: Any) -> tuple[Any, FramePublisher]:
    """A node in namespace ``name`` (poses on camera_pose unless given), and a publisher of its inputs."""
    params = {"pose_topic": "camera_pose", "world_frame": "world", "keyframe_max_interval": 0.0,
              "diagnostics_period": 0.2, "map_dir": ros.map_dir, "memory__publish_confidence": 0.0, **params}
    node = ros.node(perceptor or ros.perceptor, namespace=name, **params)
    ros.nodes.append(node)
    publisher = FramePublisher(ros.client, prefix=f"/{name}/")
    assert publisher.wait_for_subscribers()
    return node, publisher


def _feed(node: Any, publisher: FramePublisher, frame: Any, **kwargs: Any) -> int:
    """Publish one good frame and wait until the node processed it; returns its stamp."""
    done = node.worker.stats.processed
    stamp = publisher.publish(frame, settle=0.1, **kwargs)
    assert wait_until(lambda: node.worker.stats.processed > done, 60), node.last_problem
    assert node.worker.wait_idle(10)
    return stamp


def _said(ros: Any, node: Any, text: str) -> int:
    """How many /rosout lines of ``node`` hold ``text``."""
    name = node.get_logger().name
    return sum(text in m.msg for m in list(ros.rosout) if m.name == name)


def _diagnosed(ros: Any, node: Any, text: str, timeout: float = 10.0) -> str:
    """The first /diagnostics message of ``node`` naming ``text`` (fails the test when none comes)."""
    name = f"{node.get_fully_qualified_name()}: perception"
    start = len(ros.diagnostics)

    def found() -> str:
        for array in list(ros.diagnostics)[start:]:
            for status in array.status:
                if status.name == name and text in status.message:
                    return status.message
        return ""

    assert wait_until(lambda: bool(found()), timeout), f"/diagnostics never named {text!r}"
    return found()


def _alive(ros: Any, node: Any, publisher: FramePublisher, frame: Any) -> None:
    """The node is up: not failed, ~/ground answers at once, and a good frame is processed."""
    from embodied_ros.srv import Ground

    assert node.ready.is_set() and not node.failed.done()
    start = time.monotonic()
    answer = ros.call(Ground, f"{node.get_namespace()}/embodied_perception/ground", Ground.Request(phrase="the cup"),
                      timeout=30)
    assert answer.message and time.monotonic() - start < 30
    _feed(node, publisher, frame)


def _case(ros: Any, name: str, send_bad: Any, expect: str, perceptor: Any = None, **params: Any) -> Any:
    """The common shape: good frames, the fault ``N_BAD`` times (``send_bad(publisher, stamp)``, stamps 33 ms
    apart after the last good frame's, as a 30 Hz camera's), then checks."""
    node, publisher = _node(ros, name, perceptor, **params)
    for frame in ros.frames[:2]:
        last = _feed(node, publisher, frame)
    before = node.mapper.memory.objects()
    assert before, "the good frames mapped nothing"
    processed = node.worker.stats.processed
    for i in range(N_BAD):
        send_bad(publisher, last + (i + 1) * 33_000_000)
        time.sleep(0.15)
    assert wait_until(lambda: expect in node.last_problem, 20), node.last_problem
    assert node.worker.wait_idle(10)
    assert node.worker.stats.processed == processed, "a bad frame reached the network"
    assert node.mapper.memory.objects() == before, "a bad frame changed the map"
    message = _diagnosed(ros, node, expect)
    assert message.count(expect) == 1, message
    assert _said(ros, node, expect) == 1, [m.msg for m in ros.rosout if expect in m.msg]
    _alive(ros, node, publisher, ros.frames[2])
    return node


def _send_info_first(publisher: FramePublisher, msgs: dict[str, Any]) -> None:
    """Pose and camera_info, then the images a moment later: the node decodes a pair with the latest camera_info
    it holds (a driver sends the same one with every image), and messages on different topics are not ordered, so
    on a loaded machine the images could overtake the faulty camera_info and be decoded with the good one before
    it."""
    publisher.pose.publish(msgs["pose"])
    publisher.info.publish(msgs["info"])
    time.sleep(INFO_LEAD_S)
    publisher.depth.publish(msgs["depth"])
    publisher.color.publish(msgs["color"])


def test_a_camera_info_with_k_all_zeros_is_ignored_and_its_images_skipped(ros: Any) -> None:
    def send(publisher: FramePublisher, stamp: int) -> None:
        frame = ros.frames[2]
        msgs = publisher.messages(frame, stamp)
        msgs["info"].k = [0.0] * 9
        _send_info_first(publisher, msgs)

    _case(ros, "k_zeros", send, "cannot be a camera's: fx 0, fy 0")


def test_a_camera_info_whose_size_disagrees_with_the_image(ros: Any) -> None:
    def send(publisher: FramePublisher, stamp: int) -> None:
        frame = ros.frames[2]
        msgs = publisher.messages(frame, stamp)
        msgs["info"].width, msgs["info"].height = 1280, 960
        msgs["info"].k = list(np.diag([1170.0, 1170.0, 1.0]).reshape(9) + [0, 0, 640, 0, 0, 480, 0, 0, 0])
        _send_info_first(publisher, msgs)

    _case(ros, "info_size", send, "camera_info is 1280x960 but the colour image is 640x480")


@pytest.mark.parametrize("encoding", ["mono8", "rgb8"])
def test_depth_in_an_encoding_the_node_cannot_read(ros: Any, encoding: str) -> None:
    def send(publisher: FramePublisher, stamp: int) -> None:
        frame = ros.frames[2]
        msgs = publisher.messages(frame, stamp)
        msgs["depth"].encoding = encoding
        for key in ("pose", "info", "depth", "color"):
            getattr(publisher, key).publish(msgs[key])

    _case(ros, f"depth_{encoding}", send, f"unsupported depth encoding '{encoding}'")


def test_a_camera_pose_that_jumps_10_m_is_not_mapped(ros: Any) -> None:
    from dataclasses import replace

    def send(publisher: FramePublisher, stamp: int) -> None:
        T = ros.frames[1].T_world_camera.copy()  # where the camera was 33 ms before, 10 m away
        T[:3, 3] += (10.0, 0.0, 0.0)
        publisher.publish(replace(ros.frames[1], T_world_camera=T), stamp_ns=stamp)

    _case(ros, "jump", send, "the camera pose jumped 10")


def test_poses_that_stop_coming(ros: Any) -> None:
    def send(publisher: FramePublisher, _stamp: int) -> None:
        publisher.publish(ros.frames[2], with_pose=False)

    _case(ros, "no_pose", send, "no camera pose")


@pytest.mark.skipif(not _importable("tf2_ros"), reason="tf2_ros is not installed (no PyPI wheel; runs on the ROS 2 "
                                                       "tree through test_ros2_tree.py)")
@pytest.mark.parametrize("fault", ["TF stops", "TF jumps 10 m"])
def test_tf_that_stops_or_jumps(ros: Any, fault: str) -> None:
    import tf2_ros

    from embodied_ros.messages.convert import transform_stamped_msg
    from embodied_ros.ros.conversions import to_rclpy

    name = "tf_stops" if fault == "TF stops" else "tf_jumps"
    node = ros.node(ros.perceptor, namespace=name, world_frame="world", keyframe_max_interval=0.0,
                    diagnostics_period=0.2, memory__publish_confidence=0.0)
    ros.nodes.append(node)
    broadcaster = tf2_ros.TransformBroadcaster(ros.client)
    publisher = FramePublisher(ros.client, prefix=f"/{name}/")
    assert publisher.wait_for_subscribers()

    def send(frame: Any, shift: float = 0.0, with_tf: bool = True, stamp: int | None = None) -> int:
        stamp = ros.client.get_clock().now().nanoseconds if stamp is None else stamp
        T = frame.T_world_camera.copy()
        T[:3, 3] += (shift, 0.0, 0.0)
        if with_tf:
            broadcaster.sendTransform(to_rclpy(transform_stamped_msg(T, "world", "rgb_camera_link", stamp)))
        publisher.publish(frame, stamp_ns=stamp, with_pose=False, settle=0.1)
        return stamp

    for frame in ros.frames[:2]:
        done = node.worker.stats.processed
        last = send(frame)
        assert wait_until(lambda d=done: node.worker.stats.processed > d, 60), node.last_problem
    assert node.worker.wait_idle(10)
    before, processed = node.mapper.memory.objects(), node.worker.stats.processed
    expect = "no camera pose" if fault == "TF stops" else "the camera pose jumped 10"
    for i in range(N_BAD):  # a 30 Hz camera's stamps after the last good frame (TF stopping: stamps of now)
        if fault == "TF stops":
            send(ros.frames[2], with_tf=False)
        else:
            send(ros.frames[1], shift=10.0, stamp=last + (i + 1) * 33_000_000)
        time.sleep(0.15)
    assert wait_until(lambda: expect in node.last_problem, 20), node.last_problem
    assert node.worker.wait_idle(10)
    assert node.worker.stats.processed == processed and node.mapper.memory.objects() == before
    assert _diagnosed(ros, node, expect).count(expect) == 1
    assert _said(ros, node, expect) == 1
    done = node.worker.stats.processed
    send(ros.frames[3])  # TF as it was: the node goes on
    assert wait_until(lambda: node.worker.stats.processed > done, 60), node.last_problem
    assert not node.failed.done()


def test_images_10_s_old_are_said_once_and_still_mapped_at_their_stamps(ros: Any) -> None:
    node, publisher = _node(ros, "old")
    _feed(node, publisher, ros.frames[0])
    old = publisher.node.get_clock().now().nanoseconds - 10 * 10**9
    for i, frame in enumerate(ros.frames[1:4]):  # a second apart: the camera moves as a camera does
        _feed(node, publisher, frame, stamp_ns=old + i * 10**9)
    expect = "s behind this node's clock"
    message = _diagnosed(ros, node, expect)
    assert re.search(r"images on rgb/image_raw are \d+\.\d s behind", message) and message.count(expect) == 1, message
    assert _said(ros, node, expect) == 1
    assert node.worker.stats.processed == 4 and not node.failed.done()


@pytest.mark.parametrize("share", [0.3, 0.02], ids=["default share", "small share"])
def test_a_flood_of_ground_calls_is_answered_in_bounded_time_and_perception_goes_on(ros: Any, share: float) -> None:
    """100 calls a second for 3 s from another process (tests/ros_flood.py), empty and 10 kB phrases among them:
    every call answered, none waiting behind the flood, perception going on; past ``max_ground_share`` the
    calls are answered busy at once, and that is said once."""
    name = f"flood{len(ros.nodes)}"
    node, publisher = _node(ros, name, max_ground_share=share)
    _feed(node, publisher, ros.frames[0])
    frames_before = node.worker.stats.processed
    flood = subprocess.Popen([sys.executable, str(Path(__file__).with_name("ros_flood.py")),
                              f"/{name}/embodied_perception/ground", "100", "3"], stdout=subprocess.PIPE, text=True,
                             env=os.environ.copy())
    time.sleep(1.0)
    publisher.publish(ros.frames[1], settle=0.05)  # perception goes on during the flood
    out, _ = flood.communicate(timeout=180)
    assert flood.returncode == 0, out[-2000:]  # rclpy shut down cleanly in the flood's process too
    report = json.loads(out.strip().splitlines()[-1])
    calls = report["calls"]
    latencies = np.array([c["seconds"] for c in calls if c["seconds"] is not None])
    busy = sum(c["message"].startswith("busy:") for c in calls)
    print(f"max_ground_share {share}: {report['sent']} calls in 3 s, {len(latencies)} answered in median "
          f"{1000 * np.median(latencies):.0f} ms, p90 {1000 * np.percentile(latencies, 90):.0f} ms, max "
          f"{1000 * latencies.max():.0f} ms; {busy} busy")
    assert report["sent"] >= 250 and len(latencies) == report["sent"], "calls never answered"
    assert latencies.max() < 10.0  # bounded: a call does not wait behind the flood
    for c in calls:
        if c["length"] == 0 and not c["message"].startswith("busy:"):
            assert not c["success"] and "empty phrase" in c["message"]
        if c["length"] == 10_000 and not c["message"].startswith("busy:"):
            assert not c["success"] and "too long (10000 characters" in c["message"]
    assert wait_until(lambda: node.worker.stats.processed > frames_before, 60), "perception stalled"
    if share < 0.1:  # the flood is more than the share: the calls beyond it are busy, said once
        assert 0 < busy < len(calls)
        expect = "are called faster than they answer"
        assert expect in _diagnosed(ros, node, expect) and _said(ros, node, expect) == 1


def test_the_services_time_share_refills() -> None:
    """max_ground_share's bucket: a call that took longer than the share makes the next ones busy for at most
    about a second, then calls are answered again."""
    pytest.importorskip("rclpy", reason="the node's services module needs ROS 2 (rclpy)")
    from embodied_ros.ros.services import TimeShare

    share = TimeShare(0.3)
    assert share.take()
    share.spent(5.0)  # one slow call: a debt of at most one second's share
    assert not share.take()
    time.sleep(1.1)
    assert share.take()
    assert TimeShare(0.0).take()  # 0: no limit


def test_load_map_of_a_corrupt_file_keeps_the_map(ros: Any) -> None:
    from embodied_ros.srv import LoadMap, SaveMap

    node, publisher = _node(ros, "corrupt")
    _feed(node, publisher, ros.frames[0])
    prefix = "/corrupt/embodied_perception"
    assert ros.call(SaveMap, f"{prefix}/save_map", SaveMap.Request(name="good")).success
    _feed(node, publisher, ros.frames[1])
    before = node.mapper.memory.objects()
    good = Path(ros.map_dir) / "good"
    cases = {"cut": ("memory.json", (good / "memory.json").read_bytes()[:300], "cut short"),
             "wrong": ("memory.json", json.dumps({"objects": 5}).encode(), "map not loaded"),
             "npz": ("occupancy.npz", b"PK\x03\x04 not a zip at all", "occupancy.npz")}
    for name, (file, data, expect) in cases.items():
        shutil.copytree(good, Path(ros.map_dir) / name)
        (Path(ros.map_dir) / name / file).write_bytes(data)
        start = time.monotonic()
        answer = ros.call(LoadMap, f"{prefix}/load_map", LoadMap.Request(name=name), timeout=30)
        assert time.monotonic() - start < 30
        assert not answer.success and expect in answer.message and "\n" not in answer.message, answer.message
        assert node.mapper.memory.objects() == before
    _alive(ros, node, publisher, ros.frames[2])


class _FailsOnce:
    """The real detector, whose second frame fails as a driver or GPU fault would (the one fault injected here)."""

    def __init__(self, perceptor: Any) -> None:
        self.inner, self.calls = perceptor, 0
        self.name = perceptor.name

    def perceive(self, frame: Any) -> Any:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return self.inner.perceive(frame)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_detector_failing_on_one_frame(ros: Any) -> None:
    flaky = _FailsOnce(ros.perceptor)
    node, publisher = _node(ros, "flaky", flaky)
    _feed(node, publisher, ros.frames[0])
    before = node.mapper.memory.objects()
    publisher.publish(ros.frames[1], settle=0.1)
    assert wait_until(lambda: node.worker.stats.failed == 1, 60), node.worker.stats
    assert node.worker.wait_idle(10) and node.mapper.memory.objects() == before
    expect = "failed: RuntimeError: CUDA error"
    assert _diagnosed(ros, node, expect).count(expect) == 1 and _said(ros, node, expect) == 1
    _alive(ros, node, publisher, ros.frames[2])
    assert node.worker.stats.processed == 2


def test_a_pair_that_fails_inside_the_node_is_a_fault_and_later_pairs_go_on(ros: Any) -> None:
    """An error while a colour/depth pair is taken in (here the pose lookup, which once raced with arriving poses)
    is said and counted; it neither ends the node's spinning nor, with message_filters, leaves its lock held."""
    node, publisher = _node(ros, "pairfault")
    _feed(node, publisher, ros.frames[0])
    lookup, calls = node.poses.lookup, []

    def fails_once(*args: Any) -> Any:  # the one fault injected here
        calls.append(args)
        if len(calls) == 1:
            raise AssertionError("a lookup saw the samples half-updated")
        return lookup(*args)

    node.poses.lookup = fails_once
    publisher.publish(ros.frames[1], settle=0.1)
    expect = "a colour/depth pair failed: AssertionError"
    assert wait_until(lambda: expect in node.last_problem, 20), node.last_problem
    assert _diagnosed(ros, node, expect).count(expect) == 1
    _alive(ros, node, publisher, ros.frames[2])
    assert node.worker.stats.processed == 2
