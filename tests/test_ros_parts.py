"""The node's helpers with real rclpy: message conversion, parameters from the config dataclasses and
config/params.yaml, the keyframe worker's depth-1 queue, and the launch files' syntax."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from embodied_ros.errors import ConfigError
from embodied_ros.frame import Frame
from embodied_ros.grounding.engine import GrounderConfig
from embodied_ros.keyframe_policy import KeyframePolicy
from embodied_ros.memory.changes import ChangeConfig
from embodied_ros.memory.config import MemoryConfig
from embodied_ros.memory.scene_object import SceneObject
from embodied_ros.network.lifting import LiftingParams
from embodied_ros.occupancy.config import OccupancyConfig
from embodied_ros.occupancy.results import OccupiedVoxels
from embodied_ros.outputs.scene_messages import marker_array, occupancy_cloud, scene_object_array
from embodied_ros.ros.config import GROUNDER_FROM_MEMORY, NodeConfig
from embodied_ros.ros.keyframes import KeyframeWorker
from embodied_ros.ros.params import field_comments

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ros() -> object:
    from ros_harness import prepare

    reason = prepare()
    if reason:
        pytest.skip(reason)
    import rclpy

    context = rclpy.Context()
    rclpy.init(context=context, args=["--ros-args", "--params-file", str(REPO / "config" / "params.yaml")])
    yield context
    rclpy.shutdown(context=context)


def _objects(n: int) -> list[SceneObject]:
    return [SceneObject(i, "cup" if i % 2 else "chair", 0.5 + 0.01 * i, np.array([i, 1, 0.5, 0.2, 0.3, 0.4, 0.3, 0, 0]),
                        (("cup", 1.0),), 3, 0, 4, 10, 10**9 + 7) for i in range(n)]


def test_scene_messages_convert_field_by_field(ros: object) -> None:
    from embodied_ros.ros.conversions import to_rclpy

    voxels = OccupiedVoxels(centers=np.array([[0.0, 0.0, 0.1], [0.16, 0.0, 0.1]]), labels=np.array([-1, 0], np.int16),
                            vocabulary=("cup",), log_odds=np.array([1.0, 2.0], np.float32), voxel_size=0.16)
    objects = _objects(3)

    markers = to_rclpy(marker_array(objects, voxels, "map", 5 * 10**9 + 3))
    assert markers.markers[0].action == 3 and markers.markers[0].header.stamp.nanosec == 3
    boxes = [m for m in markers.markers if m.ns == "boxes"]
    assert [m.id for m in boxes] == [0, 1, 2] and len(boxes[0].points) == 24
    cubes = next(m for m in markers.markers if m.ns == "occupancy")
    assert len(cubes.points) == len(cubes.colors) == 2 and cubes.points[1].x == pytest.approx(0.16)
    ros_msg = to_rclpy(scene_object_array(objects, "map", 7))
    assert type(ros_msg).__module__.startswith("embodied_ros.msg")
    assert [o.id for o in ros_msg.objects] == [0, 1, 2]
    np.testing.assert_allclose(ros_msg.objects[2].box, objects[2].box)
    assert ros_msg.objects[1].last_seen.sec == 1 and ros_msg.objects[1].last_seen.nanosec == 7
    cloud_src = occupancy_cloud(voxels, "map", 0)
    cloud = to_rclpy(cloud_src)
    assert cloud.width == 2 and bytes(cloud.data) == bytes(cloud_src.data) and [f.name for f in cloud.fields][:3] == [
        "x", "y", "z"]


def test_parameters_come_from_the_config_dataclasses_and_params_yaml(ros: object) -> None:
    import rclpy
    from rclpy.parameter import Parameter

    from embodied_ros.ros.params import declare_config

    node = rclpy.create_node("params_check", context=ros)
    try:
        assert declare_config(node, NodeConfig) == NodeConfig()  # params.yaml holds the defaults
        assert declare_config(node, MemoryConfig, "memory.") == MemoryConfig()
        assert declare_config(node, OccupancyConfig, "occupancy.") == OccupancyConfig()
        assert declare_config(node, LiftingParams, "lifting.") == LiftingParams()
        assert declare_config(node, GrounderConfig, "grounder.", skip=GROUNDER_FROM_MEMORY) == GrounderConfig()
        described = node.describe_parameter("memory.iou_threshold").description
        assert "IoU" in described
        assert "cosine" in node.describe_parameter("grounder.min_label_similarity").description  # a comment after it
    finally:
        node.destroy_node()
    bounds = [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    overridden = rclpy.create_node("params_override", context=ros, parameter_overrides=[
        Parameter("memory.iou_threshold", value=0.3), Parameter("occupancy.bounds", value=bounds),
        Parameter("lifting.surface_classes", value=["table", "counter"]),
        Parameter("lifting.min_horizontal_size", value=["chair:0.3", "dining table:0.6"]),
        Parameter("grounder.min_confidence", value=0.8)])
    try:
        assert declare_config(overridden, MemoryConfig, "memory.").iou_threshold == 0.3
        assert declare_config(overridden, OccupancyConfig, "occupancy.").bounds == (0, 0, 0, 1, 1, 1)
        lifting = declare_config(overridden, LiftingParams, "lifting.")
        assert lifting.surface_classes == ("table", "counter")
        assert lifting.min_horizontal_size == (("chair", 0.3), ("dining table", 0.6))
        assert declare_config(overridden, GrounderConfig, "grounder.").min_confidence == 0.8
    finally:
        overridden.destroy_node()
    pairs = rclpy.create_node("params_pairs", context=ros, parameter_overrides=[
        Parameter("lifting.min_largest_extent", value=["chair 0.3"])])
    try:
        with pytest.raises(ConfigError, match="lifting.min_largest_extent: 'chair 0.3' is not 'name:value'"):
            declare_config(pairs, LiftingParams, "lifting.")
    finally:
        pairs.destroy_node()
    for name, value, match in (("source", "usb", "source must be one of"),
                               ("tf_timeout", "soon", "parameter tf_timeout")):
        bad = rclpy.create_node("params_bad", context=ros, parameter_overrides=[Parameter(name, value=value)])
        try:
            with pytest.raises(ConfigError, match=match):
                declare_config(bad, NodeConfig)
        finally:
            bad.destroy_node()


def test_params_yaml_names_exactly_the_node_parameters() -> None:
    import yaml

    written = set(yaml.safe_load((REPO / "config" / "params.yaml").read_text())["/**"]["ros__parameters"])
    declared = {f"{prefix}{name}" for prefix, cls in (("", NodeConfig), ("memory.", MemoryConfig),
                                                      ("occupancy.", OccupancyConfig), ("lifting.", LiftingParams),
                                                      ("grounder.", GrounderConfig), ("changes.", ChangeConfig))
                for name in cls.__dataclass_fields__ if not (prefix == "grounder." and name in GROUNDER_FROM_MEMORY)}
    assert written - declared == set(), "params.yaml sets parameters the node does not have (silently ignored)"
    # unset = unbounded or none; YAML cannot say "unset" nor type an empty list
    assert declared - written == {"occupancy.bounds", "lifting.min_horizontal_size", "lifting.min_extent_along_view",
                                  "lifting.min_largest_extent", "lifting.region_classes", "lifting.floor_classes",
                                  "detections_class_names"}


def test_every_config_field_has_a_comment_for_its_parameter_description() -> None:
    for cls in (NodeConfig, MemoryConfig, OccupancyConfig, LiftingParams, GrounderConfig, ChangeConfig):
        missing = set(cls.__dataclass_fields__) - set(field_comments(cls))
        assert not missing, f"{cls.__name__}: no comment above {sorted(missing)}"


def _frame(stamp_s: float, x: float = 0.0) -> Frame:
    T = np.eye(4)
    T[0, 3] = x
    return Frame(color=np.zeros((4, 4, 3), np.uint8), depth=np.ones((4, 4), np.float32), K=np.eye(3),
                 T_world_camera=T, stamp_ns=int(stamp_s * 1e9), index=int(stamp_s * 10))


def test_image_age_is_said_past_5_s_behind_or_1_s_ahead_of_the_clock() -> None:
    """A loaded node gets to a pair a second or more after its stamp (its own queueing): not the images' fault;
    a bag played without --clock, a driver seconds late or a stamp from the future is."""
    from embodied_ros.ros.input_checks import InputChecks

    checks = InputChecks("camera_info", 10.0)
    frame = _frame(100.0)
    now = frame.stamp_ns
    assert checks.image_age(frame, now) == ""
    assert checks.image_age(frame, now + int(3.0e9)) == ""  # late by load (seen: 1.0 s on 2 loaded cores)
    assert "6.0 s behind this node's clock" in checks.image_age(frame, now + int(6.0e9))
    assert checks.image_age(frame, now - int(0.5e9)) == ""
    assert "1.5 s ahead of this node's clock" in checks.image_age(frame, now - int(1.5e9))


def test_keyframe_policy_by_motion_and_time() -> None:
    policy = KeyframePolicy(min_translation=0.05, min_rotation=0.1, max_interval=1.0)
    first = _frame(0.0)
    assert policy.is_keyframe(None, first)
    assert not policy.is_keyframe(first, _frame(0.5, x=0.01))  # still, within the interval
    assert policy.is_keyframe(first, _frame(0.5, x=0.06))  # moved
    assert policy.is_keyframe(first, _frame(1.0))  # time passed
    assert KeyframePolicy(max_interval=0.0).is_keyframe(first, _frame(0.1))  # every frame


def test_the_node_builds_its_keyframe_policy_from_the_keyframe_parameters() -> None:
    assert NodeConfig().keyframe_policy() == KeyframePolicy()  # one set of defaults: the policy's
    config = NodeConfig(keyframe_min_translation=0.2, keyframe_min_rotation=0.3, keyframe_max_interval=0.0,
                        keyframe_max_wait=0.1)
    assert config.keyframe_policy() == KeyframePolicy(min_translation=0.2, min_rotation=0.3, max_interval=0.0,
                                                      max_wait=0.1)


def test_worker_queue_holds_one_frame_and_counts_drops() -> None:
    started, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def process(frame: Frame) -> dict[str, float]:
        seen.append(frame.index)
        started.set()
        release.wait(10)
        return {"network": 0.0}

    errors: list[str] = []
    worker = KeyframeWorker(process, KeyframePolicy(max_interval=0.0, max_wait=0.0), on_error=errors.append)
    try:
        assert worker.submit(_frame(0.0))
        assert started.wait(10)  # the worker is busy with frame 0
        for t in (0.1, 0.2, 0.3):  # each replaces the one waiting: 2 dropped, 0.3 kept
            worker.submit(_frame(t))
        release.set()
        assert worker.wait_idle(10)
        assert seen == [0, 3] and worker.stats.dropped == 2 and worker.stats.processed == 2 and not errors
    finally:
        release.set()
        worker.stop()


def _soon(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_stale_keyframe_is_skipped_and_its_depth_fused() -> None:
    """A keyframe that waited for a busy network longer than max_wait gives way to the next frame;
    every frame is accounted for, and the skipped ones' depth is fused while the worker is idle."""
    started, release = threading.Event(), threading.Event()
    seen: list[int] = []
    fused: list[int] = []

    def process(frame: Frame) -> dict[str, float]:
        seen.append(frame.index)
        started.set()
        release.wait(10)
        return {}

    policy = KeyframePolicy(min_translation=0.05, min_rotation=0.1, max_interval=10.0, max_wait=0.05)
    worker = KeyframeWorker(process, policy, fuse_depth=lambda f: fused.append(f.index))
    try:
        assert worker.submit(_frame(0.0)) and started.wait(10)  # the first is a keyframe; the worker is busy with it
        assert not worker.submit(_frame(0.1, x=0.01))  # not a keyframe (it hardly moved): skipped
        assert worker.submit(_frame(0.2, x=0.1))  # a keyframe, waiting behind frame 0 ...
        time.sleep(0.2)  # ... longer than max_wait
        release.set()
        assert worker.wait_idle(10) and _soon(lambda: len(fused) == 1)
        stats = worker.stats
        assert seen == [0] and stats.processed == 1 and stats.dropped == stats.stale == 1
        assert stats.not_keyframes == 1 and stats.skipped == 2 and stats.received == stats.processed + stats.skipped
        assert fused == [2]  # the newest skipped frame's depth; the older one was superseded
        assert worker.submit(_frame(0.3, x=0.1))  # the stale one was never processed: the next is a keyframe
        assert worker.wait_idle(10) and seen == [0, 3]  # and, the worker idle, taken at once, however late
    finally:
        release.set()
        worker.stop()


def test_depth_fusion_waits_for_time_between_frames() -> None:
    """Skipped frames' depth is fused only when the next frame is not due before the fusion ends."""
    fused: list[int] = []
    policy = KeyframePolicy(min_translation=1.0, min_rotation=1.0, max_interval=100.0)  # only the first is key
    worker = KeyframeWorker(lambda f: {}, policy, fuse_depth=lambda f: (fused.append(f.index), time.sleep(0.05)))
    try:
        worker.submit(_frame(0.0))
        for i in range(1, 100):  # 200 Hz for half a second: no time for a 50 ms fusion between two frames
            worker.submit(_frame(i * 0.005))
            time.sleep(0.005)
        assert worker.wait_idle(10)
        time.sleep(0.2)
        # the first tries and learns its cost; then only gaps in the stream (and its end) leave time,
        # where fusing whenever idle would fuse about ten
        assert 1 <= len(fused) <= 5 and worker.fuse_cost_s >= 0.04
        assert worker.stats.depth_fused == len(fused) and worker.stats.not_keyframes == 99
    finally:
        worker.stop()


def test_a_frame_waiting_for_its_detections_is_prepared_while_the_worker_is_idle() -> None:
    """With another detector, a frame's discovery is done while its detections are on their way: when the worker is
    idle (never before a queued keyframe), the newest waiting frame only, and not once its keyframe came."""
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def process(frame: Frame) -> dict[str, float]:
        order.append(f"key {frame.index}")
        started.set()
        release.wait(10)
        return {}

    worker = KeyframeWorker(process, KeyframePolicy(max_interval=0.0, max_wait=0.0),
                            prepare=lambda f: order.append(f"ahead {f.index}"))
    try:
        worker.submit(_frame(0.0))
        assert started.wait(10)  # busy with frame 0
        worker.ahead(_frame(0.1))  # superseded by the next waiting frame
        worker.ahead(_frame(0.2))  # its keyframe comes before the worker is free: nothing ahead for it
        worker.submit(_frame(0.3))
        worker.ahead(_frame(0.4))  # waits behind the queued keyframe
        release.set()
        assert worker.wait_idle(10) and _soon(lambda: worker.stats.prepared == 1)
        assert order == ["key 0", "key 3", "ahead 4"]
        worker.submit(_frame(0.4))
        worker.ahead(_frame(0.5))  # the worker is idle: done at once, then its keyframe
        assert _soon(lambda: order[-1] == "ahead 5")
        worker.submit(_frame(0.5))
        assert worker.wait_idle(10) and order[3:] == ["key 4", "ahead 5", "key 5"] and worker.stats.prepared == 2
    finally:
        release.set()
        worker.stop()


def test_a_keyframe_that_waits_for_its_own_work_ahead_is_not_stale() -> None:
    """The detections of a frame whose discovery is being done ahead come before it ends: the keyframe waits for its
    own work, not for an older frame's, so it is processed however long that takes (max_wait is for older work)."""
    started, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def prepare(frame: Frame) -> None:
        started.set()
        release.wait(10)

    worker = KeyframeWorker(lambda f: (seen.append(f.index), {})[1], KeyframePolicy(max_interval=0.0, max_wait=0.02),
                            prepare=prepare)
    try:
        worker.ahead(_frame(0.1))
        assert started.wait(10)
        worker.submit(_frame(0.1))
        time.sleep(0.1)  # five times max_wait
        release.set()
        assert worker.wait_idle(10) and seen == [1] and worker.stats.stale == 0 and worker.stats.processed == 1
    finally:
        release.set()
        worker.stop()


def test_worker_survives_a_failing_keyframe() -> None:
    errors: list[str] = []

    def process(frame: Frame) -> dict[str, float]:
        if frame.index == 0:
            raise ValueError("broken frame")
        return {}

    worker = KeyframeWorker(process, KeyframePolicy(max_interval=0.0), on_error=errors.append)
    try:
        worker.submit(_frame(0.0))
        assert worker.wait_idle(10)
        worker.submit(_frame(0.1))
        assert worker.wait_idle(10)
        assert worker.stats.failed == 1 and worker.stats.processed == 1
        assert errors and "ValueError: broken frame" in errors[0]
    finally:
        worker.stop()


@pytest.mark.parametrize("name", ["perception.launch.py", "kinect.launch.py"])
def test_launch_files_parse_and_define_generate_launch_description(name: str) -> None:
    tree = ast.parse((REPO / "launch" / name).read_text())
    assert any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body)


def test_launch_arguments_name_real_parameters() -> None:
    tree = ast.parse((REPO / "launch" / "perception.launch.py").read_text())
    table = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "DECLARED")
    names = {k.value for k in table.keys}
    assert names and names <= set(NodeConfig.__dataclass_fields__), names - set(NodeConfig.__dataclass_fields__)
    assert {"load_map_on_start", "input_qos", "source", "weights"} <= names


def _scene() -> tuple[list[SceneObject], OccupiedVoxels]:
    rng = np.random.default_rng(3)
    objects = _objects(4) + [  # an unknown object and a person seen now: their own namespaces and fields
        SceneObject(7, "object", 0.5, np.array([1, 2, 0.5, 0.2, 0.2, 0.1, 0, 0, 0]), (("object", 0.5),), 2, 0, 4, 10,
                    20),
        SceneObject(9, "person", 0.8, np.array([2, 0, 0.9, 0.5, 0.3, 1.7, 0.2, 0, 0]), (("person", 0.8),), 3, 1, 5, 30,
                    10**9 + 40)]
    voxels = OccupiedVoxels(centers=rng.uniform(-2, 2, (500, 3)), labels=rng.integers(-1, 2, 500).astype(np.int16),
                            vocabulary=("cup", "chair"), log_odds=rng.uniform(1, 3, 500).astype(np.float32),
                            voxel_size=0.16)
    return objects, voxels


@pytest.mark.parametrize("kind", ["markers", "objects", "occupancy", "detections"])
def test_numpy_built_messages_equal_the_bags_messages_on_the_wire(ros: object, kind: str) -> None:
    from rclpy.serialization import deserialize_message, serialize_message

    from embodied_ros.outputs import scene_messages as bag
    from embodied_ros.ros import scene_publisher as node
    from embodied_ros.ros.cdr import serialize
    from embodied_ros.ros.conversions import rclpy_class, to_rclpy

    objects, voxels = _scene()
    stamp = 7 * 10**9 + 11
    built = {"markers": (bag.marker_array(objects, voxels, "map", stamp), node.marker_array(objects, voxels, "map",
                                                                                            stamp)),
             "objects": (bag.scene_object_array(objects, "map", stamp), node.scene_object_array(objects, "map", stamp)),
             "occupancy": (bag.occupancy_cloud(voxels, "map", stamp), node.occupancy_cloud(voxels, "map", stamp)),
             "detections": (bag.detection3d_array(objects, "map", stamp), node.detection3d_array(objects, "map",
                                                                                                 stamp))}[kind]
    try:
        cls = rclpy_class(built[0].__msgtype__)
    except ImportError:
        pytest.skip(f"{built[0].__msgtype__} is not installed here")
    reference = deserialize_message(serialize_message(to_rclpy(built[0], cls)), cls)  # float32 fields rounded alike
    assert deserialize_message(serialize(cls, built[1]), cls) == reference


def test_cdr_bytes_are_rclpys_own_for_strings_sequences_and_alignment(ros: object) -> None:
    from rclpy.serialization import deserialize_message, serialize_message
    from sensor_msgs.msg import CameraInfo
    from visualization_msgs.msg import Marker

    from embodied_ros.ros.cdr import serialize

    for text in ("", "a", "ab", "abc", "héllo"):  # every string length modulo 4 before the next double
        msg = Marker(ns=text, text=text, id=-3, frame_locked=True)
        msg.points = [type(msg.pose.position)(x=1.5, y=-2.0, z=3.25)]
        assert deserialize_message(serialize(Marker, msg), Marker) == msg
        assert len(serialize(Marker, msg)) == len(serialize_message(msg))
    info = CameraInfo(width=640, height=480, distortion_model="plumb_bob", d=[0.1, -0.2, 0.0, 0.0, 0.01])
    info.k = [500.0, 0.0, 320.0, 0.0, 500.0, 240.0, 0.0, 0.0, 1.0]
    assert deserialize_message(serialize(CameraInfo, {"width": 640, "height": 480, "distortion_model": "plumb_bob",
                                                      "d": np.array([0.1, -0.2, 0, 0, 0.01]),
                                                      "k": np.array(info.k)}), CameraInfo) == info
