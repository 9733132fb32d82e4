"""TransformBuffer: chains, common ancestors, interpolation and its limits."""

from __future__ import annotations

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
