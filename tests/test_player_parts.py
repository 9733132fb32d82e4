"""The player's ROS-free half: frames as the Azure Kinect driver's messages, and the replay's pace."""

from __future__ import annotations

import numpy as np

from embodied_ros.frame import Frame
from embodied_ros.geometry.transforms import matrix_from_quat_xyzw
from embodied_ros.outputs.driver_topics import Pacer, driver_fields
from embodied_ros.sources.images import depth_to_metres, image_to_rgb


def _frame() -> Frame:
    rng = np.random.default_rng(0)
    T = np.eye(4)
    T[:3, :3] = matrix_from_quat_xyzw(np.array([0.1, -0.2, 0.3, 0.9]))
    T[:3, 3] = [1.0, -2.0, 0.5]
    K = np.array([[500.0, 0, 320], [0, 510.0, 240], [0, 0, 1]])
    return Frame(color=rng.integers(0, 255, (48, 64, 3), dtype=np.uint8),
                 depth=rng.uniform(0.5, 4, (48, 64)).astype(np.float32), K=K, T_world_camera=T, stamp_ns=0, index=0)


def test_driver_messages_decode_back_to_the_frame() -> None:
    frame = _frame()
    f = driver_fields(frame, 5 * 10**9 + 7, "rgb_camera_link", "map")
    c, d = f["color"], f["depth"]
    assert c["encoding"] == "bgra8" and d["encoding"] == "16UC1"
    assert c["header"]["frame_id"] == d["header"]["frame_id"] == f["camera_info"]["header"]["frame_id"]
    assert c["header"]["stamp"] == {"sec": 5, "nanosec": 7} == f["transform"]["header"]["stamp"]
    np.testing.assert_array_equal(image_to_rgb(c["encoding"], c["height"], c["width"], c["step"], c["data"]),
                                  frame.color)
    depth = depth_to_metres(d["encoding"], d["height"], d["width"], d["step"], d["data"])
    np.testing.assert_allclose(depth, frame.depth, atol=5e-4)
    info = f["camera_info"]
    np.testing.assert_array_equal(np.reshape(info["k"], (3, 3)), frame.K)
    assert (info["width"], info["height"]) == (64, 48)
    t = f["transform"]
    assert t["header"]["frame_id"] == "map" and t["child_frame_id"] == "rgb_camera_link"
    r = t["transform"]["rotation"]
    np.testing.assert_allclose(matrix_from_quat_xyzw(np.array([r["x"], r["y"], r["z"], r["w"]])),
                               frame.T_world_camera[:3, :3], atol=1e-12)
    assert [t["transform"]["translation"][k] for k in "xyz"] == [1.0, -2.0, 0.5]
    assert f["pose"]["pose"]["position"] == t["transform"]["translation"]


def test_pacer_keeps_the_schedule_and_counts_late_items() -> None:
    now = [0.0]
    waits: list[float] = []

    def sleep(s: float) -> None:
        waits.append(round(s, 6))
        now[0] += s

    def slow(items: list[float]):
        for cost in items:  # reading each item takes this long
            now[0] += cost
            yield cost

    pacer = Pacer(4.0, clock=lambda: now[0], sleep=sleep)
    on_schedule = [pacer.on_schedule_s for _ in pacer(slow([0.05, 0.1, 0.1, 0.6, 0.0]))]
    assert waits == [0.15, 0.15] and pacer.late == 1  # item 3 came at 1.1 s, due at 0.75: late; 4 (due 1.0) not
    # the player stamps an item with its time on the schedule (from the first item), one late by over a period with now
    assert on_schedule == [0.0, 0.25, 0.5, None, 1.0]
    assert list(Pacer(0)(range(3))) == [0, 1, 2]
