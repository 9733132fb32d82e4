"""TransformBuffer: chains, common ancestors, interpolation and its limits."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from embodied_ros.geometry.transforms import invert_transform, make_transform
from embodied_ros.sources.tf_buffer import TransformBuffer


def _T(euler_xyz, t) -> np.ndarray:
    return make_transform(Rotation.from_euler("xyz", euler_xyz).as_matrix(), np.asarray(t, float))


def test_chain_through_static_and_dynamic_edges():
    buf = TransformBuffer()
    T_map_odom = _T([0, 0, 0.3], [1, 2, 0])
    T_odom_base = _T([0, 0, -0.7], [0.5, 0, 0])
    T_base_cam = _T([-np.pi / 2, 0, -np.pi / 2], [0.1, 0, 1.2])
    buf.add("map", "odom", 0, T_map_odom, static=True)
    buf.add("odom", "base", 100, T_odom_base)
    buf.add("/base", "cam", 0, T_base_cam, static=True)  # leading slash is ignored, as in tf2
    T = buf.lookup("map", "cam", 100)
    np.testing.assert_allclose(T, T_map_odom @ T_odom_base @ T_base_cam, atol=1e-12)
    # the reverse direction and a lookup between siblings' descendants
    np.testing.assert_allclose(buf.lookup("cam", "map", 100), invert_transform(T), atol=1e-12)
    np.testing.assert_allclose(buf.lookup("odom", "cam", 100), T_odom_base @ T_base_cam, atol=1e-12)


def test_dynamic_edge_interpolates_linear_and_slerp():
    buf = TransformBuffer()
    buf.add("w", "c", 1_000, _T([0, 0, 0], [0, 0, 0]))
    buf.add("w", "c", 3_000, _T([0, 0, np.pi / 2], [2, -4, 6]))
    T = buf.lookup("w", "c", 2_000)
    np.testing.assert_allclose(T[:3, 3], [1, -2, 3], atol=1e-12)
    np.testing.assert_allclose(T[:3, :3], Rotation.from_euler("z", np.pi / 4).as_matrix(), atol=1e-12)
    T = buf.lookup("w", "c", 1_500)  # a quarter of the way
    np.testing.assert_allclose(T[:3, :3], Rotation.from_euler("z", np.pi / 8).as_matrix(), atol=1e-12)


def test_samples_added_out_of_order_are_sorted():
    buf = TransformBuffer()
    buf.add("w", "c", 20, _T([0, 0, 0], [2, 0, 0]))
    buf.add("w", "c", 0, _T([0, 0, 0], [0, 0, 0]))
    np.testing.assert_allclose(buf.lookup("w", "c", 5)[:3, 3], [0.5, 0, 0])
    buf.add("w", "c", 10, _T([0, 0, 0], [10, 0, 0]))  # a later add re-sorts
    np.testing.assert_allclose(buf.lookup("w", "c", 5)[:3, 3], [5, 0, 0])


def test_extrapolation_only_within_tolerance():
    buf = TransformBuffer(extrapolation_ns=10)
    buf.add("w", "c", 100, _T([0, 0, 0], [1, 0, 0]))
    buf.add("w", "c", 200, _T([0, 0, 0], [2, 0, 0]))
    np.testing.assert_allclose(buf.lookup("w", "c", 205)[:3, 3], [2, 0, 0])
    np.testing.assert_allclose(buf.lookup("w", "c", 90)[:3, 3], [1, 0, 0])
    with pytest.raises(LookupError, match="no transform w -> c"):
        buf.lookup("w", "c", 211)
    with pytest.raises(LookupError, match="no transform"):
        buf.lookup("w", "c", 50)


def test_unknown_and_disconnected_frames_fail_clearly():
    buf = TransformBuffer()
    buf.add("a", "b", 0, np.eye(4), static=True)
    buf.add("x", "y", 0, np.eye(4), static=True)
    with pytest.raises(LookupError, match="'nope' is not in the transform tree"):
        buf.lookup("a", "nope", 0)
    with pytest.raises(LookupError, match="not connected"):
        buf.lookup("a", "y", 0)
    assert buf.frames == {"a", "b", "x", "y"}


def test_reparenting_replaces_the_edge():
    buf = TransformBuffer()
    buf.add("odom", "base", 0, _T([0, 0, 0], [1, 0, 0]), static=True)
    buf.add("map", "base", 0, _T([0, 0, 0], [5, 0, 0]))
    np.testing.assert_allclose(buf.lookup("map", "base", 0)[:3, 3], [5, 0, 0])
    with pytest.raises(LookupError):
        buf.lookup("odom", "base", 0)


def test_lookups_while_poses_arrive_on_another_thread():
    """The node adds poses on one executor thread while another looks up an image's pose (a 30 Hz stream froze its
    input when a lookup saw the samples half-updated: the exception left message_filters' lock held)."""
    buf = TransformBuffer(extrapolation_ns=10**9)
    buf.add("world", "cam", 0, _T([0, 0, 0], [0, 0, 0]))
    buf.add("world", "cam", 1000, _T([0, 0, 1e-4], [1e-3, 0, 0]))
    errors: list[BaseException] = []
    done = threading.Event()

    def add() -> None:
        for i in range(2, 4000):
            buf.add("world", "cam", i * 1000, _T([0, 0, 1e-4 * i], [1e-3 * i, 0, 0]))
        done.set()

    def look() -> None:
        try:
            while not done.is_set():
                T = buf.lookup("world", "cam", 500)
                np.testing.assert_allclose(T[:3, 3], [5e-4, 0, 0], atol=1e-9)
        except BaseException as err:  # noqa: BLE001 - reported by the test below
            errors.append(err)
            done.set()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: the race shows within a few thousand samples
    try:
        threads = [threading.Thread(target=add), threading.Thread(target=look)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    finally:
        sys.setswitchinterval(interval)
    assert not errors, f"a lookup failed while poses arrived: {errors[0]!r}"


def test_a_live_buffer_keeps_its_cache_time_of_samples():
    """A node's buffer keeps the last cache_ns of poses (tf2 keeps 10 s): an hour at 30 Hz would otherwise be kept,
    and sorted again on every lookup after a new sample. A recording's buffer keeps everything."""
    live, recording = TransformBuffer(cache_ns=10**9), TransformBuffer()
    for i in range(1000):  # 10 s at 100 Hz
        for buf in (live, recording):
            buf.add("world", "cam", i * 10**7, _T([0, 0, 0], [i, 0, 0]))
    assert len(live._dynamic["cam"].stamps) <= 100 + 64
    assert len(recording._dynamic["cam"].stamps) == 1000
    for i in (905, 950, 999):  # the last second
        np.testing.assert_allclose(live.lookup("world", "cam", i * 10**7)[0, 3], i)
    np.testing.assert_allclose(recording.lookup("world", "cam", 5 * 10**7)[0, 3], 5)
    with pytest.raises(LookupError, match="recorded from"):
        live.lookup("world", "cam", 5 * 10**7)
