"""The map's shortcuts give the answers of the long way: each is checked against it (issue 34).

The scene memory and the occupancy map skip work that cannot change their result (objects out of
view, geometry far apart) and use closed forms where numpy's small-array overhead dominated; these
tests compare each shortcut with the computation it replaces, on random cases.
"""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.frame import Frame
from embodied_ros.geometry.boxes import box_corners
from embodied_ros.memory.class_shapes import _upright_union
from embodied_ros.memory.object_geometry import ObjectGeometry, near_fraction, neighbourhoods, voxel_keys
from embodied_ros.memory.visibility import classify_points, may_be_in_view

K = np.array([[525.0, 0.0, 319.5], [0.0, 525.0, 239.5], [0.0, 0.0, 1.0]])


def _frame(rng: np.random.Generator) -> Frame:
    """A camera somewhere in a room, looking somewhere, with depth everywhere."""
    yaw, pitch = rng.uniform(-np.pi, np.pi), rng.uniform(-0.6, 0.6)
    forward = np.array([np.cos(yaw) * np.cos(pitch), np.sin(yaw) * np.cos(pitch), np.sin(pitch)])
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    T = np.eye(4)
    T[:3, :3] = np.stack([right, down, forward], axis=1)  # optical axes: x right, y down, z forward
    T[:3, 3] = rng.uniform(-2, 2, 3)
    depth = rng.uniform(0.5, 5.0, (480, 640)).astype(np.float32)
    return Frame(np.zeros((480, 640, 3), np.uint8), depth, K, T, 0, 0)


def test_the_frustum_test_never_drops_a_box_with_a_point_in_view() -> None:
    rng = np.random.default_rng(3)
    dropped = 0
    for _ in range(40):
        frame = _frame(rng)
        centres = frame.T_world_camera[:3, 3] + rng.uniform(-7, 7, (200, 3))
        half = rng.uniform(0.01, 1.0, (200, 3))
        keep = may_be_in_view(centres - half, centres + half, frame)
        for c, h, k in zip(centres, half, keep, strict=True):
            points = c + h * rng.uniform(-1, 1, (300, 3))
            inside = classify_points(points, 0.0, frame)
            in_image = (inside.seen | inside.hidden | inside.through).any()
            assert k or not in_image  # a dropped box holds no point the frame sees
            dropped += not k
    assert dropped > 1000  # and it does drop the boxes behind and beside the camera


def test_the_upright_union_is_the_union_of_the_corners() -> None:
    rng = np.random.default_rng(4)
    for _ in range(500):
        a = np.r_[rng.normal(size=3), rng.uniform(0.02, 2.0, 3), rng.uniform(-np.pi, np.pi), 0.0, 0.0]
        b = np.r_[a[:3] + rng.normal(size=3), rng.uniform(0.02, 2.0, 3), rng.uniform(-np.pi, np.pi), 0.0, 0.0]
        corners = box_corners(np.stack([a, b])).reshape(-1, 3)
        c, s = np.cos(a[6]), np.sin(a[6])
        along = corners[:, :2] @ np.array([[c, -s], [s, c]])
        long, height = _upright_union(a, b)
        assert long == pytest.approx(float(np.ptp(along, axis=0).max()), abs=1e-12)
        assert height == pytest.approx(float(np.ptp(corners[:, 2])), abs=1e-12)


def test_geometry_apart_by_its_bounds_shares_no_neighbourhood() -> None:
    """What lets association skip the geometry fit: bounds more than a voxel apart give a fit of 0."""
    rng = np.random.default_rng(5)
    voxel = 0.03
    for _ in range(200):
        geometry = ObjectGeometry(voxel, 6000)
        geometry.add(rng.normal(0, 0.1, (300, 3)))
        points = rng.normal(0, 0.1, (100, 3)) + rng.uniform(-0.6, 0.6, 3)
        keys = np.unique(voxel_keys(points, voxel))
        lo, hi = np.floor(points.min(axis=0) / voxel), np.floor(points.max(axis=0) / voxel)
        glo, ghi = (np.array(b) for b in geometry.index_bounds())
        apart = not (np.all(lo - 1 <= ghi) and np.all(glo <= hi + 1))
        if apart:
            assert near_fraction(neighbourhoods(keys), geometry.keys) == 0.0


def test_cached_samples_follow_the_geometry() -> None:
    geometry = ObjectGeometry(0.03, 6000)
    geometry.add(np.random.default_rng(6).normal(0, 0.2, (500, 3)))
    first = geometry.sample(64)
    assert geometry.sample(64) is first  # kept
    geometry.add(np.full((10, 3), 5.0))
    moved = geometry.sample(64)
    assert moved is not first and moved.max() > 4.0 and max(geometry.index_bounds()[1]) >= int(5.0 / 0.03)


def test_carving_every_other_ray_keeps_every_hit_and_most_free_space() -> None:
    """Occupancy's rays all give their hit; only every k-th carves (OccupancyConfig.carve_spacing)."""
    from embodied_ros.memory.occupancy import OccupancyMap

    frame = _frame(np.random.default_rng(7))
    dense, sparse = OccupancyMap(carve_spacing=0.0), OccupancyMap()
    a, b = dense.integrate_depth(frame), sparse.integrate_depth(frame)
    assert a.n_rays == b.n_rays and a.n_hit == b.n_hit  # the same surfaces
    assert 0.8 * a.n_free <= b.n_free < a.n_free  # fewer rays carve, nearly the same free space
    assert np.array_equal(dense.occupied_voxels().centers, sparse.occupied_voxels().centers)


def test_upright_box_pairs_overlap_as_the_general_clipping_says() -> None:
    """Gravity-aligned pairs take the footprint-times-height path (geometry/iou.py); the general
    twelve-face clipping is the reference, on random, aligned, identical and touching pairs."""
    from embodied_ros.geometry import iou

    rng = np.random.default_rng(8)
    n = 600
    a = np.c_[rng.normal(0, 0.5, (n, 3)), rng.uniform(0.05, 1.5, (n, 3)), rng.uniform(-3, 3, n), np.zeros((n, 2))]
    b = np.c_[a[:, :3] + rng.normal(0, 0.4, (n, 3)), rng.uniform(0.05, 1.5, (n, 3)), rng.uniform(-3, 3, n),
              np.zeros((n, 2))]
    b[:100, 6] = a[:100, 6]  # aligned
    b[100:150] = a[100:150]  # identical
    b[150:200, 2] = a[150:200, 2] + 0.5 * (a[150:200, 5] + b[150:200, 5])  # one on the other: touching
    Ra, Rb = iou.box_rotations(a), iou.box_rotations(b)
    general, scale = iou._normalised_pair_volumes(a[:, :3], a[:, 3:6], Ra, b[:, :3], b[:, 3:6], Rb)
    upright, scale_u = iou._upright_pair_volumes(a[:, :3], a[:, 3:6], Ra, b[:, :3], b[:, 3:6], Rb)
    np.testing.assert_allclose(upright, general, atol=1e-12)
    assert np.array_equal(scale, scale_u) and np.count_nonzero(general > 0) > 300
    assert np.allclose(iou.pairwise_box_iou_3d(a[100:150], b[100:150]), 1.0)
    assert np.all(iou.pairwise_box_iou_3d(a[150:200], b[150:200]) < 1e-9)
    swapped, _ = iou._upright_pair_volumes(b[:, :3], b[:, 3:6], Rb, a[:, :3], a[:, 3:6], Ra)
    assert np.array_equal(swapped, upright)  # the same number whichever box comes first
