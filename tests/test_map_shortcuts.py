"""The map's shortcuts give the answers of the long way: each is checked against it (issue 34).

The scene memory and the occupancy map skip work that cannot change their result (objects out of
view, geometry far apart) and use closed forms where numpy's small-array overhead dominated; these
tests compare each shortcut with the computation it replaces, on random cases.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from embodied_ros.frame import Frame
from embodied_ros.geometry.boxes import box_corners
from embodied_ros.memory.class_shapes import _upright_union
from embodied_ros.memory.object_geometry import ObjectGeometry, near_fraction, neighbourhoods, voxel_keys
from embodied_ros.memory.visibility import classify_points, may_be_in_view

K = np.array([[525.0, 0.0, 319.5], [0.0, 525.0, 239.5], [0.0, 0.0, 1.0]])
DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


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
    from embodied_ros.occupancy.voxel_map import OccupancyMap

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


# ----------------------------------------------------------------------------- issue 41: the frame at once

def test_upright_unions_as_arrays_are_the_pairwise_check() -> None:
    from embodied_ros.memory.class_shapes import union_plausible, unions_plausible

    rng = np.random.default_rng(41)
    n = 400
    boxes = np.column_stack([rng.uniform(-2, 2, (n, 3)), rng.uniform(0.05, 2.5, (n, 3)), rng.uniform(-np.pi, np.pi, n),
                             np.zeros((n, 2))])
    others = boxes[rng.permutation(n)] + np.column_stack([rng.normal(0, 0.3, (n, 3)), np.zeros((n, 6))])
    others[::7, 7] = 0.2  # some tilted boxes: the general path
    names = [str(c) for c in rng.choice(["cup", "chair", "diningtable", "book", "tvmonitor", "thing"], n)]
    expected = [union_plausible(a, b, c) for a, b, c in zip(boxes, others, names, strict=True)]
    got = unions_plausible(boxes, others, names)
    assert got.tolist() == expected and 0 < sum(expected) < n


def test_growing_a_geometry_by_merging_keys_is_the_union_by_sorting() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        geometry = ObjectGeometry(0.03, 400)
        keys_ref = np.zeros(0, np.int64)
        sums_ref, counts_ref = {}, {}
        for _ in range(int(rng.integers(1, 6))):
            points = rng.normal(0, rng.uniform(0.05, 0.6), (int(rng.integers(1, 300)), 3)) + rng.uniform(-1, 1, 3)
            geometry.add(points)
            # np.unique over both, sums by bincount: what _combine did before it merged sorted keys
            new, inverse = np.unique(voxel_keys(points, 0.03), return_inverse=True)
            add = np.stack([np.bincount(inverse, weights=points[:, k], minlength=len(new)) for k in range(3)], axis=1)
            uniq, inv = np.unique(np.concatenate([keys_ref, new]), return_inverse=True)
            both = np.concatenate([np.array([sums_ref[k] for k in keys_ref]).reshape(-1, 3), add])
            summed = np.stack([np.bincount(inv, weights=both[:, k], minlength=len(uniq)) for k in range(3)], axis=1)
            counts = np.bincount(inv, weights=np.concatenate([[counts_ref[k] for k in keys_ref], np.ones(len(new))]))
            if len(uniq) > 400:  # the bound keeps the most covered voxels
                keep = np.sort(np.argsort(-counts.astype(np.int32), kind="stable")[:400])
                uniq, summed, counts = uniq[keep], summed[keep], counts[keep]
            keys_ref = uniq
            sums_ref = dict(zip(uniq.tolist(), summed, strict=True))
            counts_ref = dict(zip(uniq.tolist(), counts, strict=True))
            np.testing.assert_array_equal(geometry.keys, keys_ref)
            np.testing.assert_array_equal(geometry.sums, summed)
            np.testing.assert_array_equal(geometry.counts, counts.astype(np.int32))


def test_near_counts_from_the_dilated_grid_are_the_binary_searches() -> None:
    from embodied_ros.memory.object_geometry import unpack_voxels

    rng = np.random.default_rng(3)
    for trial in range(40):
        geometry = ObjectGeometry(0.03, 6000)
        geometry.add(rng.normal(0, rng.uniform(0.02, 0.8), (int(rng.integers(5, 2000)), 3)))
        query = np.unique(voxel_keys(rng.normal(0, 0.5, (int(rng.integers(1, 600)), 3)), 0.03))
        expected = near_fraction(neighbourhoods(query), geometry.keys) * len(query)
        if trial % 2:
            geometry._cache["near_grid"] = None  # too large for a grid: the binary searches themselves
        assert geometry.near_count(unpack_voxels(query)) == round(expected)


WALK = DATA / "redkitchen_walk"


@pytest.mark.skipif(not (WALK / "frame-000299.depth.png").is_file() or not (DATA / "yolox_nano").is_dir(),
                    reason=f"redkitchen_walk or yolox_nano not found in {DATA}")
def test_judging_a_frames_pairs_at_once_keeps_the_map_of_judging_them_one_by_one() -> None:
    """The whole memory on real walk frames, with the pairs judged as arrays and one by one (issue 41's
    reference, tests/association_reference.py): the same update results and the same memory.json."""
    import json
    from dataclasses import asdict

    from association_reference import ReferenceAssociation

    from embodied_ros.memory.scene_memory import SceneMemory
    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.recordings import open_source

    perceptor = build_perceptor("yolox-nano", weights=DATA, backend="onnxruntime")
    source = open_source(WALK)
    fast, slow = SceneMemory(), SceneMemory()
    slow._association = ReferenceAssociation(slow.config, slow._tracks, slow._index, slow._fusion.absorb)
    merges = 0
    for i in range(0, 300, 3):
        perception = perceptor.perceive(source.read(i))
        a, b = asdict(fast.update(perception)), asdict(slow.update(perception))
        for timing in ("discovery_s", "structure_s", "changes_s"):  # seconds, not what the update did
            a.pop(timing), b.pop(timing)
        assert a == b, f"frame {i}"
        merges += len(a["merged"])
    assert len(fast) > 20 and merges > 0
    assert json.dumps(fast.to_dict()) == json.dumps(slow.to_dict())


_SIZES = {"cup": (0.09, 0.09, 0.11), "book": (0.25, 0.18, 0.04), "chair": (0.5, 0.5, 0.9),
          "diningtable": (1.4, 0.8, 0.75), "object": (0.2, 0.15, 0.2)}


def _random_scene(rng: np.random.Generator) -> tuple[dict, object, list, list]:
    """A few things of the classes' sizes crowded into 1.5 m, each known to the memory as one to three
    objects made of parts of its points (duplicates to rank, class evidence sometimes mixed), in a
    spatial index; and each thing's points and class."""
    from embodied_ros.geometry.fitting import fit_upright_box
    from embodied_ros.memory.spatial_index import SpatialHashGrid
    from embodied_ros.memory.track import Track

    names = list(_SIZES)
    tracks, index, things = {}, SpatialHashGrid(1.0), []
    for _ in range(int(rng.integers(2, 7))):
        name = str(rng.choice(names))
        size = np.array(_SIZES[name]) * rng.uniform(0.8, 1.2, 3)
        points = rng.uniform(-0.5, 0.5, (int(rng.integers(60, 900)), 3)) * size + rng.uniform(-0.75, 0.75, 3)
        things.append((points, name))
        for _ in range(int(rng.integers(1, 4))):
            part = points[rng.random(len(points)) < rng.uniform(0.3, 1.0)]
            if len(part) < 8:
                continue
            obj_id = len(tracks)
            own = name if rng.random() < 0.6 else str(rng.choice(names))  # a part taken for another class
            evidence = {own: float(rng.uniform(0.5, 3))}
            if rng.random() < 0.5:
                evidence[str(rng.choice(names))] = float(rng.uniform(0.1, 2))  # also seen as another class
            box = fit_upright_box(part, pad=0.03)
            track = Track(obj_id, box, 1.0, 0.5, evidence, max(evidence, key=evidence.get), 3, 0, 0, 0, 0)
            if rng.random() < 0.85:  # most with geometry, some a network's box alone
                track.geometry = ObjectGeometry(0.03, 6000)
                track.geometry.add(part)
            tracks[obj_id] = track
            index.insert(obj_id, box)
    return tracks, index, things


@pytest.mark.parametrize("seed", range(24))
def test_pairs_judged_at_once_rank_as_one_by_one(seed: int) -> None:
    """Association.matches against the per-pair reference on crowded random scenes: detections (voxels,
    2D boxes, objects seen in the image) and objects against objects (the merge pass)."""
    from association_reference import ReferenceAssociation

    from embodied_ros.geometry.fitting import fit_upright_box
    from embodied_ros.memory.association import Association, Queries, point_keys
    from embodied_ros.memory.config import MemoryConfig
    from embodied_ros.memory.visibility import Visibility

    rng = np.random.default_rng(seed)
    tracks, index, things = _random_scene(rng)
    config = MemoryConfig()
    fast = Association(config, tracks, index, lambda a, b: None)
    slow = ReferenceAssociation(config, tracks, index, lambda a, b: None)
    n = int(rng.integers(2, 9))
    picks = rng.integers(0, len(things), n)
    points = [things[k][0][rng.random(len(things[k][0])) < 0.6] + rng.normal(0, 0.01, 3) for k in picks]
    points = [p if len(p) >= 8 else things[k][0] for p, k in zip(points, picks, strict=True)]
    boxes = np.array([fit_upright_box(p, pad=0.02) for p in points])
    names = [things[k][1] if rng.random() < 0.7 else str(rng.choice(list(_SIZES))) for k in picks]
    keys = [point_keys(p, 0.03) if rng.random() < 0.85 else None for p in points]
    boxes_2d = np.sort(rng.uniform(0, 640, (n, 4)).reshape(n, 2, 2), axis=1).transpose(0, 2, 1).reshape(n, 4)
    views = {i: Visibility(64, 40, 0, 0, boxes_2d[rng.integers(n)] + rng.normal(0, 15, 4) if rng.random() < 0.7
                           else None) for i in tracks}
    for with_queries in (True, False):
        a = fast.matches(Queries(boxes, names, keys, boxes_2d), views, with_queries=with_queries)
        b = slow.matches(Queries(boxes, names, keys, boxes_2d), views, with_queries=with_queries)
        assert a[0] == b[0]
        np.testing.assert_array_equal(a[1], b[1])
    ids = sorted(tracks)[: int(rng.integers(1, len(tracks) + 1))]
    own = [tracks[i] for i in ids]

    def objects() -> Queries:
        return Queries(np.array([t.box for t in own]), [t.class_name for t in own],
                       [t.geometry.keys if t.geometry is not None else None for t in own], exclude=ids, tracks=own)

    assert fast.matches(objects(), {})[0] == slow.matches(objects(), {})[0]
