"""World occupancy map: depth carving, clamping, memory bound, local grids, class votes, real data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from embodied_ros.detections import Detections3D, FramePerception, LocalOccupancy
from embodied_ros.errors import ConfigError, FrameError, InputError
from embodied_ros.frame import Frame
from embodied_ros.occupancy.config import OccupancyConfig
from embodied_ros.occupancy.results import UNLABELLED_CLASS
from embodied_ros.occupancy.voxel_map import OccupancyMap

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
REDKITCHEN = DATA / "redkitchen"
K = np.array([[585.0, 0.0, 320.0], [0.0, 585.0, 240.0], [0.0, 0.0, 1.0]])


def _pose(t=(0.0, 0.0, 0.0)) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = t
    return T


def _wall_frame(distance: float = 2.0, T: np.ndarray | None = None, index: int = 0) -> Frame:
    """A camera looking straight at a flat wall (depth constant, camera z = world z here)."""
    depth = np.full((480, 640), distance, dtype=np.float32)
    return Frame(np.zeros((480, 640, 3), np.uint8), depth, K, _pose() if T is None else T, index * 1000, index)


def _column(x: float, y: float, z: np.ndarray) -> np.ndarray:
    return np.stack([np.full_like(z, x), np.full_like(z, y), z], axis=1)


def test_wall_is_occupied_space_before_it_free_behind_it_unknown():
    occ = OccupancyMap()
    result = occ.integrate_depth(_wall_frame(2.0))
    assert result.n_rays == 160 * 120
    grid = np.linspace(-0.6, 0.6, 7)
    wall = np.array([[x, y, 2.0] for x in grid for y in grid])
    s = occ.sample(wall)
    assert s.observed.all() and np.all(s.log_odds == np.float32(0.85))
    free = occ.sample(np.concatenate([_column(x, y, np.linspace(0.6, 1.9, 11)) for x in (-0.2, 0.2) for y in (0, 0.2)]))
    assert free.observed.all() and np.all(free.log_odds == np.float32(-0.4))  # one miss each
    behind = occ.sample(_column(0.0, 0.0, np.array([2.1, 2.3, 3.0])))
    assert not behind.observed.any()
    out_of_view = occ.sample(np.array([[0.0, 3.0, 1.0]]))  # far outside the field of view
    assert not out_of_view.observed.any()
    voxels = occ.occupied_voxels()
    assert len(voxels) > 0
    assert np.all(np.abs(voxels.centers[:, 2] - 2.0) <= 0.08 + 1e-9)  # only the wall's voxel layer
    assert occ.stats().n_occupied == len(voxels) and occ.stats().n_free > len(voxels)


def test_repeated_integration_saturates_at_the_clamp():
    occ = OccupancyMap()
    for i in range(10):
        occ.integrate_depth(_wall_frame(2.0, index=i))
    assert occ.sample(np.array([[0.0, 0.0, 2.0]])).log_odds[0] == np.float32(3.5)
    assert occ.sample(np.array([[0.0, 0.0, 1.0]])).log_odds[0] == np.float32(-2.0)
    assert occ.occupied_voxels().probability.max() == pytest.approx(1.0 / (1.0 + np.exp(-3.5)))
    # The clamp lets the map change its mind: the wall moves back to 2.5 m.
    for i in range(3):
        occ.integrate_depth(_wall_frame(2.5, index=10 + i))
    assert occ.sample(np.array([[0.0, 0.0, 2.0]])).log_odds[0] == pytest.approx(3.5 - 3 * 0.4, abs=1e-6)
    for i in range(6):
        occ.integrate_depth(_wall_frame(2.5, index=13 + i))
    assert occ.sample(np.array([[0.0, 0.0, 2.0]])).log_odds[0] < 0.0  # 3.5 - 9 x 0.4


def test_pixels_beyond_max_range_carve_but_do_not_hit():
    occ = OccupancyMap()
    result = occ.integrate_depth(_wall_frame(5.0), max_range=4.0)
    assert result.n_hit == 0 and result.n_free > 0
    assert occ.sample(np.array([[0.0, 0.0, 3.5]])).log_odds[0] < 0.0
    assert not occ.sample(np.array([[0.0, 0.0, 4.5], [0.0, 0.0, 5.0]])).observed.any()


def test_max_voxels_bound_evicts_far_blocks():
    occ = OccupancyMap(max_voxels=512 * 40)
    for i in range(12):
        T = _pose((1.5 * i, 0.0, 0.0))
        occ.integrate_depth(_wall_frame(2.0, T, index=i))
        stats = occ.stats()
        assert stats.n_allocated <= 512 * 40
        s = occ.sample(np.array([[1.5 * i, 0.0, 2.0], [1.5 * i, 0.0, 1.0]]))
        assert s.log_odds[0] > 0 and s.log_odds[1] < 0  # the latest view is kept
    assert occ.stats().n_evicted_blocks > 0
    assert not occ.sample(np.array([[0.0, 0.0, 2.0]])).observed[0]  # the first wall, farthest, went


def test_local_grid_round_trip_through_labels_grid():
    labels = np.full((40, 40, 16), -1, dtype=np.int16)
    labels[10:14, 10:14, 2:6] = 0  # a chair
    labels[20:30, 5:10, 4] = 1  # a table top
    T = _pose((-3.2, -1.6, -0.8))  # on voxel boundaries of the map: grid voxels are map voxels
    grid = LocalOccupancy(labels, T, 0.16, ("chair", "table"))
    occ = OccupancyMap()
    result = occ.integrate_local_grid(grid)
    assert result.n_hit == int((labels >= 0).sum()) and result.n_free == int((labels < 0).sum())
    back = occ.labels_grid(T, (40, 40, 16))
    assert back.class_names == ("chair", "table", UNLABELLED_CLASS)
    np.testing.assert_array_equal(back.labels, labels)
    voxels = occ.occupied_voxels()
    assert sorted(set(voxels.class_names)) == ["chair", "table"]
    vocabulary = ("table", "sofa", "chair")  # another vocabulary, without the map's order
    np.testing.assert_array_equal(occ.class_grid(T, vocabulary), np.select([labels == 0, labels == 1], [2, 0], -1))
    np.testing.assert_array_equal(occ.class_grid(T, ("sofa",)), np.full(labels.shape, -1))  # unknown -> -1
    # A rotated, offset grid: every labelled voxel centre lands in an occupied voxel of its class.
    c, s = np.cos(0.5), np.sin(0.5)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    T2 = _pose((0.37, 0.11, -0.05))
    T2[:3, :3] = R
    occ2 = OccupancyMap()
    occ2.integrate_local_grid(LocalOccupancy(labels, T2, 0.16, ("chair", "table")))
    idx = np.argwhere(labels >= 0)
    sample = occ2.sample(((idx + 0.5) * 0.16) @ R.T + T2[:3, 3])
    assert np.all(sample.log_odds > 0)
    np.testing.assert_array_equal(sample.labels, labels[labels >= 0])
    with pytest.raises(FrameError):
        occ2.integrate_local_grid(LocalOccupancy(labels, T2, 0.16, ("chair",)))  # label 1 unknown


def test_a_coarse_grid_fills_every_finer_map_voxel_it_covers():
    labels = np.full((10, 10, 6), -1, dtype=np.int16)
    labels[2:4, 3:5, 1:3] = 0  # a chair: 2 x 2 x 2 voxels of 0.16 m
    valid = np.ones(labels.shape, dtype=bool)
    valid[:, :, 5] = False  # the top layer is not fused
    T = _pose((-0.8, -0.8, -0.48))  # on voxel boundaries of both maps
    fine = OccupancyMap(voxel_size=0.08)
    result = fine.integrate_local_grid(LocalOccupancy(labels, T, 0.16, ("chair",)), valid)
    assert result.n_hit == 8 * 8 and result.n_free == 8 * (int(valid.sum()) - 8)
    back = fine.labels_grid(T, (20, 20, 12), voxel_size=0.08)
    expected = np.repeat(np.repeat(np.repeat(labels, 2, axis=0), 2, axis=1), 2, axis=2)
    np.testing.assert_array_equal(back.labels, expected)
    with pytest.raises(FrameError):
        fine.integrate_local_grid(LocalOccupancy(labels, T, 0.16, ("chair",)), np.ones((2, 2, 2), bool))


def test_network_grid_counts_only_in_the_cameras_view():
    labels = np.zeros((40, 40, 16), dtype=np.int16)  # the network calls every voxel "chair"
    T = _pose((-3.2, -3.2, -1.28))  # centred on the camera at the origin, which looks along world +z
    frame = _wall_frame(1.2)
    perception = FramePerception(0, 0, Detections3D(np.zeros((0, 9)), [], [], ("chair",), "world"),
                                 occupancy=LocalOccupancy(labels, T, 0.16, ("chair",)))
    ahead, behind, beside = np.array([[0.0, 0.0, 0.6]]), np.array([[0.0, 0.0, -0.6]]), np.array([[2.5, 0.0, 0.6]])
    in_view = OccupancyMap()
    in_view.integrate_frame(frame, perception)
    assert in_view.class_names[in_view.sample(ahead).labels[0]] == "chair"
    for p in (behind, beside):  # outside the frustum: the network's guess is not evidence
        sample = in_view.sample(p)
        assert sample.labels[0] == -1 and not sample.observed[0]
    everywhere = OccupancyMap(grid_in_view_only=False)
    everywhere.integrate_frame(frame, perception)
    for p in (ahead, behind, beside):
        assert everywhere.class_names[everywhere.sample(p).labels[0]] == "chair"
    with pytest.raises(FrameError):
        in_view.integrate_local_grid(perception.occupancy, np.ones((4, 4, 4), bool))


def test_detections_vote_for_classes_only_without_a_network_grid():
    frame = _wall_frame(1.2)
    labels = np.zeros((40, 40, 16), dtype=np.int16)  # the network's grid: "chair" everywhere
    grid = LocalOccupancy(labels, _pose((-3.2, -3.2, -1.28)), 0.16, ("chair",))
    tv = Detections3D(np.array([[0.0, 0.0, 1.2, 0.6, 0.6, 0.4, 0.0, 0.0, 0.0]]), [0], [0.9], ("tv",), "world")
    wall = np.array([[0.0, 0.0, 1.2]])

    def label(perception: FramePerception, **config) -> str:
        occ = OccupancyMap(grid_class_weight=0.1, **config)  # one detection would outvote the grid
        occ.integrate_frame(frame, perception)
        return occ.class_names[occ.sample(wall).labels[0]]

    assert label(FramePerception(0, 0, tv, occupancy=grid)) == "chair"
    assert label(FramePerception(0, 0, tv, occupancy=grid), detection_votes_with_grid=True) == "tv"
    assert label(FramePerception(0, 0, tv)) == "tv"  # a lifted 2D detector: its boxes are the only class evidence


def test_pixel_classes_vote_where_their_depth_lands():
    """A pixel head's map (left half "cup") labels the wall voxels its pixels' depth reaches, and only those."""
    frame = _wall_frame(2.0)  # 640 x 480, principal point at the image centre
    pixel_labels = np.full((24, 32), -1, dtype=np.int16)  # 20 x 20 frame pixels per cell
    pixel_labels[:, :16] = 0
    none = Detections3D.empty(("cup", "book"), "world")
    occ = OccupancyMap()
    occ.integrate_frame(frame, FramePerception(0, 0, none, pixel_labels=pixel_labels))
    left, right = np.array([[-0.5, 0.1, 2.05]]), np.array([[0.5, 0.1, 2.05]])  # both on the wall
    assert occ.class_names[occ.sample(left).labels[0]] == "cup"
    assert occ.sample(right).labels[0] == -1 and occ.sample(right).log_odds[0] > 0  # occupied, no class
    assert occ.class_names == ("cup",)  # only classes that voted join the vocabulary
    off = OccupancyMap(pixel_class_weight=0.0)
    off.integrate_frame(frame, FramePerception(0, 0, none, pixel_labels=pixel_labels))
    assert off.sample(left).labels[0] == -1
    with pytest.raises(FrameError, match="pixel labels"):
        occ.add_pixel_votes(frame, np.full((4, 4), 2, np.int16), ("cup", "book"))  # label 2 of 2 classes
    with pytest.raises(ConfigError, match="pixel_class_weight"):
        OccupancyMap(pixel_class_weight=-1.0)


def test_detection_evidence_labels_voxels_inside_the_box():
    occ = OccupancyMap()
    occ.integrate_depth(_wall_frame(2.0))
    vocab = ("tv", "monitor")
    box = np.array([[0.0, 0.0, 2.0, 0.6, 0.6, 0.4, 0.3, 0.0, 0.0]])
    n = occ.add_detection_evidence(Detections3D(box, [0], [0.8], vocab, "world"))
    assert 4 <= n <= 30
    inside, outside = np.array([[0.0, 0.0, 2.0]]), np.array([[0.9, 0.0, 2.0]])
    assert occ.class_names[occ.sample(inside).labels[0]] == "tv"
    assert occ.sample(outside).labels[0] == -1
    voxels = occ.occupied_voxels()
    assert sum(name == "tv" for name in voxels.class_names) == n
    assert occ.stats().n_labelled == n
    # Weighted majority vote: 0.8 for tv, then 2 x 0.5 for monitor -> monitor.
    for _ in range(2):
        occ.add_detection_evidence(Detections3D(box, [1], [0.5], vocab, "world"))
    assert occ.class_names[occ.sample(inside).labels[0]] == "monitor"
    assert occ.add_detection_evidence(Detections3D(box + [5, 0, 0, 0, 0, 0, 0, 0, 0], [0], [0.8], vocab, "w")) == 0


def test_bounds_and_save_load(tmp_path):
    occ = OccupancyMap(bounds=(-0.5, -0.5, 0.0, 0.5, 0.5, 3.0))
    occ.integrate_depth(_wall_frame(2.0))
    occ.add_detection_evidence(Detections3D(np.array([[0, 0, 2.0, 0.5, 0.5, 0.5, 0, 0, 0]]), [0], [0.9], ("tv",), "w"))
    voxels = occ.occupied_voxels()
    assert len(voxels) > 0
    assert np.all(np.abs(voxels.centers[:, :2]) <= 0.5)
    assert not occ.sample(np.array([[0.9, 0.0, 2.0]])).observed[0]
    occ.save(tmp_path / "map.npz")
    loaded = OccupancyMap.load(tmp_path / "map.npz")
    assert loaded.config == occ.config and loaded.class_names == ("tv",)
    assert loaded.stats() == occ.stats()
    back = loaded.occupied_voxels()
    np.testing.assert_array_equal(back.centers, voxels.centers)
    np.testing.assert_array_equal(back.labels, voxels.labels)
    np.testing.assert_array_equal(back.log_odds, voxels.log_odds)
    with pytest.raises(InputError):
        OccupancyMap.load(tmp_path / "missing.npz")


def test_config_validation_and_reset():
    with pytest.raises(ConfigError):
        OccupancyMap(log_odds_miss=0.4)
    with pytest.raises(ConfigError):
        OccupancyMap(max_voxels=10)
    with pytest.raises(ConfigError):
        OccupancyMap(bounds=(0.0, 0.0, 0.0, -1.0, 1.0, 1.0))
    for bad in (0, 5):
        with pytest.raises(ConfigError, match="surface_subdivision"):
            OccupancyMap(surface_subdivision=bad)
    occ = OccupancyMap.from_config(OccupancyConfig(voxel_size=0.1))
    assert occ.voxel_size == 0.1
    occ.integrate_depth(_wall_frame(1.0))
    assert occ.stats().n_occupied > 0
    occ.reset()
    assert occ.stats().n_observed == 0 and len(occ.occupied_voxels()) == 0


def _tilted_grid(angle: float, shape: tuple[int, int, int]) -> np.ndarray:
    """A grid pose turned by ``angle`` about the world x axis, with the wall of _wall_frame(2.0) across it."""
    c, s = np.cos(angle), np.sin(angle)
    T = _pose((-0.57, -0.35, 1.53))
    T[:3, :3] = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    return T


def _dense_wall_voxels(frame: Frame, T: np.ndarray, shape: tuple[int, int, int], voxel_size: float) -> np.ndarray:
    """Ground truth made the way the synthetic world makes it: every pixel's surface point, voxelised."""
    v, u = np.indices(frame.depth.shape).reshape(2, -1)
    z = frame.depth.reshape(-1).astype(np.float64)
    points = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=1)
    idx = np.floor(((points - T[:3, 3]) @ T[:3, :3]) / voxel_size).astype(np.int64)
    idx = idx[np.all((idx >= 0) & (idx < shape), axis=1)]
    truth = np.zeros(shape, dtype=bool)
    truth[tuple(idx.T)] = True
    return truth


def test_a_tilted_grid_gets_the_surface_where_it_is():
    """Depth hits' sub-cells, voxelised into a grid turned against the map's lattice, give the
    voxels the surface passes through; the map voxel under each grid voxel's centre does not."""
    shape = (8, 6, 8)
    T = _tilted_grid(0.45, shape)
    frame = _wall_frame(2.0)
    truth = _dense_wall_voxels(frame, T, shape, 0.16)
    assert 40 < truth.sum() < truth.size // 2

    def iou(occ: OccupancyMap) -> float:
        occ.integrate_depth(frame)
        got = occ.labels_grid(T, shape).labels >= 0
        return float((got & truth).sum() / (got | truth).sum())

    with_cells, centre_only = iou(OccupancyMap()), iou(OccupancyMap(surface_subdivision=1))
    assert with_cells > 0.95  # 1.0 here
    assert centre_only < with_cells - 0.05  # 0.89 here: one row of voxels off
    # Without class votes the wall is "occupied".
    grid = OccupancyMap()
    grid.integrate_depth(frame)
    back = grid.labels_grid(T, shape)
    assert set(np.unique(back.labels)) == {-1, back.class_names.index(UNLABELLED_CLASS)}


def test_surface_cells_land_where_they_are_on_a_lattice_anchored_off_the_world_origin():
    """The tilted grid of the test above, on a map whose lattice a first network grid anchored 13 cm off the
    world's 0.16 m layers: the sub-cells are placed from the lattice's origin, not the world's."""
    shape = (8, 6, 8)
    T = _tilted_grid(0.45, shape)
    frame = _wall_frame(2.0)
    truth = _dense_wall_voxels(frame, T, shape, 0.16)
    occ = OccupancyMap()
    far = _pose((10.05, 10.05, 10.05))  # an empty grid far from the wall: it only anchors the lattice
    occ.integrate_local_grid(LocalOccupancy(np.full((1, 1, 1), -1, np.int16), far, 0.16, ("chair",)))
    np.testing.assert_allclose(occ.origin, 0.13)  # 10.05 m is 62 layers of 0.16 m and 13 cm
    occ.integrate_depth(frame)
    got = occ.labels_grid(T, shape).labels >= 0
    assert float((got & truth).sum() / (got | truth).sum()) > 0.95


def test_the_lattice_starts_at_the_first_network_grid(tmp_path):
    labels = np.full((10, 10, 6), -1, dtype=np.int16)
    labels[2:5, 3:6, 0:3] = 0  # a chair
    T = _pose((-1.57, -0.61, -0.78))  # the perceptron's grids start 0.78 m below the floor
    chair = LocalOccupancy(labels, T, 0.16, ("chair",))
    grid_centres = (np.argwhere(labels >= 0) + 0.5) * 0.16 + T[:3, 3]
    aligned, world_lattice = OccupancyMap(), OccupancyMap(align_to_grid=False)
    for occ in (aligned, world_lattice):
        occ.integrate_local_grid(chair)
    np.testing.assert_allclose(aligned.origin, np.mod(T[:3, 3], 0.16))
    np.testing.assert_allclose(np.sort(aligned.occupied_voxels().centers, axis=0), np.sort(grid_centres, axis=0))
    assert np.all(world_lattice.origin == 0.0)
    shift = np.abs(np.sort(world_lattice.occupied_voxels().centers, axis=0) - np.sort(grid_centres, axis=0))
    assert shift[:, 2].min() == pytest.approx(0.02)  # -0.78 is 2 cm off the world's 0.16 m layers
    # Later grids do not move the lattice; it is saved with the map; a reset forgets it.
    aligned.integrate_local_grid(LocalOccupancy(labels, _pose((0.05, 0.05, 0.05)), 0.16, ("chair",)))
    np.testing.assert_allclose(aligned.origin, np.mod(T[:3, 3], 0.16))
    aligned.save(tmp_path / "map.npz")
    loaded = OccupancyMap.load(tmp_path / "map.npz")
    np.testing.assert_array_equal(loaded.origin, aligned.origin)
    np.testing.assert_array_equal(loaded.labels_grid(T, labels.shape).labels,
                                  aligned.labels_grid(T, labels.shape).labels)
    # A map written before maps kept sub-cells (no "surface" array, no origin) still loads.
    with np.load(tmp_path / "map.npz") as z:
        old = {k: z[k] for k in z.files if k != "surface"}
    meta = json.loads(str(old["meta"]))
    del meta["origin"]
    old["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(tmp_path / "old.npz", **old)
    before = OccupancyMap.load(tmp_path / "old.npz")
    assert np.all(before.origin == 0.0) and not before.sample(grid_centres).surface.any()
    assert before.stats().n_occupied == aligned.stats().n_occupied > 0
    aligned.reset()
    assert np.all(aligned.origin == 0.0)
    # A map that took depth first keeps the lattice it had.
    depth_first = OccupancyMap()
    depth_first.integrate_depth(_wall_frame(2.0))
    depth_first.integrate_local_grid(chair)
    assert np.all(depth_first.origin == 0.0)


def test_depth_lands_in_its_own_voxels_on_a_lattice_off_the_world_origin():
    """Once a network grid anchors the lattice away from the world origin (as on the Perceptron path),
    rays start at the camera in lattice units (t - origin): every depth point's voxel is the one hit."""
    occ = OccupancyMap()
    empty = np.full((4, 4, 4), -1, dtype=np.int16)
    occ.integrate_local_grid(LocalOccupancy(empty, _pose((-3.13, -3.15, -0.71)), 0.16, ("wall",)))
    assert np.abs(occ.origin).min() > 0.01  # 0.07, 0.05, 0.09 off the world's lattice
    T = _pose((0.31, -0.23, 0.12))  # the camera off the origin too
    frame = _wall_frame(2.03, T)
    occ.integrate_depth(frame, pixel_stride=4)
    v, u = np.mgrid[0:480:8, 0:640:8]
    z = frame.depth[v, u].astype(np.float64)
    points = np.stack([(u - K[0, 2]) * z / K[0, 0], (v - K[1, 2]) * z / K[1, 1], z], axis=-1).reshape(-1, 3)
    sample = occ.sample(points + T[:3, 3])
    assert np.mean(sample.log_odds > occ.config.occupied_threshold) > 0.95
    assert np.mean(sample.surface != 0) > 0.95  # and the sub-cells their points fell in


def test_a_voxel_that_turns_free_forgets_its_surface():
    occ = OccupancyMap()
    occ.integrate_depth(_wall_frame(2.0, index=0))
    wall = np.array([[0.0, 0.0, 2.0]])
    assert occ.sample(wall).surface[0] != 0
    occ.integrate_depth(_wall_frame(2.5, index=1))  # the wall moved back: one hit, one miss
    s = occ.sample(wall)
    assert s.log_odds[0] == pytest.approx(0.85 - 0.4) and s.log_odds[0] <= occ.config.occupied_threshold
    assert s.surface[0] == 0
    assert occ.sample(np.array([[0.0, 0.0, 2.5]])).surface[0] != 0


def _redkitchen_frame(index: int) -> Frame:
    stem = REDKITCHEN / f"frame-{index:06d}"
    depth = np.asarray(Image.open(f"{stem}.depth.png")).astype(np.float32) / 1000.0
    color = np.asarray(Image.open(f"{stem}.color.jpg").convert("RGB"))
    intrinsics = np.loadtxt(REDKITCHEN / "camera-intrinsics.txt")
    return Frame(color, depth, intrinsics, np.loadtxt(f"{stem}.pose.txt"), index * 33_333_333, index,
                 source_name=str(stem))


@pytest.mark.skipif(not REDKITCHEN.is_dir(), reason=f"real data not found at {REDKITCHEN} (set EMBODIED_ROS_DATA)")
def test_real_redkitchen_frames():
    occ = OccupancyMap()
    frame = _redkitchen_frame(0)
    result = occ.integrate_depth(frame)
    stats = occ.stats()
    assert result.n_rays > 10_000
    # A kitchen corner seen from ~1-3 m: a few hundred to a few thousand 16 cm surface voxels.
    assert 200 <= stats.n_occupied <= 5_000 and stats.n_free > stats.n_occupied
    # Every sampled depth point (within range) lies in an occupied voxel.
    v, u = np.mgrid[0:480:4, 0:640:4]
    z = frame.depth[v, u]
    ok = (z > 0) & (z <= 4.0)
    cam = np.stack([(u[ok] - 320.0) / 585.0 * z[ok], (v[ok] - 240.0) / 585.0 * z[ok], z[ok]], axis=1)
    world = cam @ frame.T_world_camera[:3, :3].T + frame.T_world_camera[:3, 3]
    assert np.all(occ.sample(world).log_odds > 0)
    centres = occ.occupied_voxels().centers
    assert np.linalg.norm(centres - frame.T_world_camera[:3, 3], axis=1).max() < 4.0 * 1.3 + 0.3
    for i in (10, 20, 30, 40):
        occ.integrate_depth(_redkitchen_frame(i))
    assert occ.stats().n_occupied > stats.n_occupied


def _evidence_one_box_at_a_time(occ: OccupancyMap, detections: Detections3D) -> int:
    """``add_detection_evidence`` as it was before it took the boxes together: box by box."""
    from embodied_ros.geometry.boxes import box_corners, points_in_boxes
    from embodied_ros.occupancy.class_votes import vote

    d = occ._blocks.data
    flats, classes, weights = [], [], []
    for box, name, score in zip(detections.boxes, detections.names, detections.scores, strict=True):
        if not (np.all(np.isfinite(box)) and score > 0):
            continue
        corners = box_corners(box)[0]
        lo = np.floor(occ._voxel_units(corners.min(axis=0))).astype(np.int64)
        hi = np.floor(occ._voxel_units(corners.max(axis=0))).astype(np.int64)
        flat = occ._blocks.voxels_in_range(lo, hi)
        flat = flat[d["observed"][flat] & (d["log_odds"][flat] > occ.config.occupied_threshold)]
        flat = flat[points_in_boxes(occ._centres(occ._blocks.voxel_coords(flat)), box[None])[0]]
        flats.append(flat)
        classes.append(np.full(flat.size, occ._class_index(name)))
        weights.append(np.full(flat.size, float(score)))
    vote(occ._blocks.data, len(occ._vocabulary), np.concatenate(flats), np.concatenate(classes),
         np.concatenate(weights))
    return sum(len(f) for f in flats)


def test_detection_evidence_of_many_boxes_at_once_is_box_by_box():
    rng = np.random.default_rng(3)
    maps = [OccupancyMap(voxel_size=0.08) for _ in range(2)]
    for occ in maps:
        for k in range(4):  # walls at several depths from several places: many blocks
            occ.integrate_depth(_wall_frame(1.5 + 0.7 * k, _pose((0.4 * k, -0.3 * k, 0.0))))
    for _ in range(3):  # overlapping boxes of several classes, voted on again and again
        boxes = np.column_stack([rng.uniform(-1, 1, (12, 2)), rng.uniform(1.4, 3.8, 12),
                                 rng.uniform(0.1, 1.5, (12, 3)), rng.uniform(-np.pi, np.pi, 12), np.zeros((12, 2))])
        boxes[3, 3:6] = 40.0  # wider than the whole map: its stored blocks are tested instead
        boxes[5, 0] = np.nan  # invalid: no votes
        dets = Detections3D(boxes, rng.integers(0, 3, 12), rng.uniform(0.1, 0.9, 12), ("a", "b", "c"), "world")
        n = maps[0].add_detection_evidence(dets)
        assert n == _evidence_one_box_at_a_time(maps[1], dets) and n > 100
    a, b = maps[0]._blocks.data, maps[1]._blocks.data
    assert len(np.unique(a["label"])) == 4  # none and three classes
    for key in ("label", "label_weight"):
        np.testing.assert_array_equal(a[key], b[key])


def _mark_surface_reference(occ: OccupancyMap, points: np.ndarray, flat: object = None) -> None:
    """``OccupancyMap._mark_surface`` as it was: every hit looked up, its bit ORed in one at a time."""
    from embodied_ros.occupancy.voxel_blocks import MAX_VOXEL_COORD

    n = occ.config.surface_subdivision
    vox = np.floor(points)
    ok = np.all((vox >= -MAX_VOXEL_COORD) & (vox < MAX_VOXEL_COORD), axis=1)
    vox, points = vox[ok].astype(np.int64), points[ok]
    sub = np.clip(np.floor((points - vox) * n).astype(np.int64), 0, n - 1)
    bit = (sub[:, 0] * n + sub[:, 1]) * n + sub[:, 2]
    flat = occ._blocks.lookup(vox, allocate=False)
    have = flat >= 0
    np.bitwise_or.at(occ._blocks.data["surface"], flat[have], np.left_shift(np.uint64(1), bit[have].astype(np.uint64)))


def test_surface_bits_from_the_hits_own_voxels_are_those_a_look_up_sets():
    tilt = np.eye(4)
    tilt[:3, :3] = [[np.cos(0.5), 0, np.sin(0.5)], [0, 1, 0], [-np.sin(0.5), 0, np.cos(0.5)]]  # a slanted wall
    frames = [_wall_frame(1.2 + 0.3 * k, tilt @ _pose((0.1 * k, 0.05 * k, 0.0)), k) for k in range(3)]
    fast, reference = OccupancyMap(voxel_size=0.08), OccupancyMap(voxel_size=0.08)
    reference._mark_surface = lambda points, flat=None: _mark_surface_reference(reference, points)
    for f in frames:
        fast.integrate_depth(f)
        reference.integrate_depth(f)
    a, b = fast._blocks.export(), reference._blocks.export()
    bits = np.unpackbits(a["surface"].view(np.uint8)).reshape(-1, 64).sum(axis=1)
    assert bits.max() > 4  # voxels with several sub-cells hit
    for key in ("block_coords", "surface", "log_odds"):
        np.testing.assert_array_equal(a[key], b[key])
