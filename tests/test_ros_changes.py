"""The node tells what changed: a saved kitchen map loaded at start, the same frames played later with a cup
erased from their depth and colour; ~/changes says the cup was removed, ~/change_markers draws its ghost,
~/what_changed answers since the map was loaded. Real rclpy in-process (as tests/test_ros_node.py), real
redkitchen frames and the default detector; skips with the reason when ROS 2, cmake or the data are missing.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from conftest import DETECTOR, KITCHEN
from erase_object import write_erased_kitchen
from ros_harness import FramePublisher, InProcessRos, prepare, wait_until

NUMBERS = list(range(0, 1000, 40))  # every 4th of the 100 redkitchen frames


@pytest.fixture(scope="module")
def changed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A node that loaded the kitchen map at start and then saw the kitchen without its cup."""
    reason = prepare()
    if reason:
        pytest.skip(reason)
    if not (KITCHEN.is_dir() and DETECTOR.is_dir()):
        pytest.skip(f"real data not found in {KITCHEN.parent} (set EMBODIED_ROS_DATA)")
    os.environ["EMBODIED_ROS_CACHE"] = str(tmp_path_factory.getbasetemp() / "cache")
    from embodied_ros.msg import SceneChange
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from visualization_msgs.msg import MarkerArray

    from embodied_ros.mapper import SceneMapper
    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.recordings import open_source

    perceptor = build_perceptor("yolox-nano", weights=DETECTOR, backend="onnxruntime")
    before = SceneMapper(perceptor=perceptor)
    for frame in open_source(KITCHEN).frames(stride=4):
        before.step(frame)
    cup = max((o for o in before.memory.published_objects() if o.class_name == "cup"), key=lambda o: o.n_looks)
    map_dir = tmp_path_factory.mktemp("maps")
    before.save(map_dir / "kitchen")
    later = tmp_path_factory.mktemp("later") / "kitchen"
    write_erased_kitchen(later, NUMBERS, np.asarray(cup.box), open_source(KITCHEN).T_align)

    ros = InProcessRos()
    got: dict[str, list[Any]] = {"changes": [], "markers": []}
    history = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    ros.client.create_subscription(SceneChange, "/embodied_perception/changes", got["changes"].append, history)
    ros.client.create_subscription(MarkerArray, "/embodied_perception/change_markers", got["markers"].append, 10)
    node = ros.node(perceptor, pose_topic="camera_pose", world_frame="world", keyframe_max_interval=0.0,
                    map_dir=str(map_dir), load_map_on_start=True, start_map="kitchen")
    publisher = FramePublisher(ros.client)
    assert publisher.wait_for_subscribers()
    try:
        for k, frame in enumerate(open_source(later).frames()):
            publisher.publish(frame, settle=0.2)
            assert wait_until(lambda n=k + 1: node.worker.stats.processed >= n, 120), node.last_problem
        assert node.worker.wait_idle(30)
        yield ros, node, cup, got
    finally:
        ros.close([node])


def test_the_erased_cup_is_told_removed_on_changes(changed: Any) -> None:
    ros, node, cup, got = changed
    assert wait_until(lambda: len(got["changes"]) >= 1, 10)
    (change,) = got["changes"]
    assert (change.kind, change.id, change.class_name) == (change.REMOVED, cup.id, "cup")
    np.testing.assert_allclose(change.old_box, cup.box, atol=1e-6)
    assert list(change.new_box) == [0.0] * 9 and change.seq == 1 and change.header.frame_id == "world"
    last_seen = change.last_seen.sec * 10**9 + change.last_seen.nanosec
    assert last_seen == cup.last_seen_ns
    assert node.mapper.memory.get(cup.id) is None  # the map let it go


def test_change_markers_draw_a_ghost_where_it_stood(changed: Any) -> None:
    _, _, cup, got = changed
    assert wait_until(lambda: len(got["markers"]) >= 1, 10)
    markers = got["markers"][-1].markers
    assert markers[0].action == 3  # DELETEALL first
    (ghost,) = [m for m in markers if m.ns == "change_ghosts"]
    assert ghost.type == 1 and ghost.color.a < 1.0  # a translucent cube
    np.testing.assert_allclose([ghost.pose.position.x, ghost.pose.position.y, ghost.pose.position.z], cup.box[:3],
                               atol=1e-6)
    assert [m.text for m in markers if m.ns == "change_labels"] == [f"removed cup #{cup.id}"]


def test_what_changed_answers_since_the_map_and_since_a_time(changed: Any) -> None:
    from builtin_interfaces.msg import Time
    from embodied_ros.srv import WhatChanged

    ros, node, cup, got = changed
    since_map = ros.call(WhatChanged, "/embodied_perception/what_changed", WhatChanged.Request(since_map_load=True))
    assert since_map.success and [c.id for c in since_map.changes] == [cup.id]
    assert since_map.message == "1 changes since the map was loaded: 0 moved, 1 removed, 0 new"
    stamp = got["changes"][0].header.stamp
    later = Time(sec=stamp.sec + 1, nanosec=stamp.nanosec)
    assert ros.call(WhatChanged, "/embodied_perception/what_changed", WhatChanged.Request(since=later)).changes == []
    everything = ros.call(WhatChanged, "/embodied_perception/what_changed", WhatChanged.Request())
    assert [c.seq for c in everything.changes] == [1]
