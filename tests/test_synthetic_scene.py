"""Synthetic world: seeded layouts, tight 9-DoF boxes, supports, rendering that agrees with the boxes,
noise, visibility, occupancy labels and grounding prompts."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("open3d", reason="rendering needs open3d (pip install open3d; apt libusb-1.0-0)")

from embodied_ros.geometry.boxes import box_corners, points_in_boxes  # noqa: E402
from embodied_ros.geometry.iou import box_intersection_volume  # noqa: E402
from embodied_ros.synthetic import (  # noqa: E402
    KINECT_720P,
    OBJECT_CLASSES,
    OCCUPANCY_CLASSES,
    SUPPORT_FLOOR,
    SUPPORT_WALL,
    SYNONYMS,
    RelationType,
    SceneConfig,
    TrajectoryConfig,
    TrajectoryKind,
    generate_scene,
)
from embodied_ros.synthetic.classes import class_index  # noqa: E402
from embodied_ros.synthetic.prompts import _holds  # noqa: E402

SMALL = SceneConfig(width=160, height=160, trajectory=TrajectoryConfig(n_frames=12))


@pytest.fixture(scope="module")
def scene():
    return generate_scene(3, SMALL)


@pytest.fixture(scope="module")
def scenes():
    return [generate_scene(s, SMALL) for s in range(6)]


def test_same_seed_gives_identical_scene_and_frames_other_seed_differs(scene):
    again = generate_scene(3, SMALL)
    assert np.array_equal(scene.boxes, again.boxes) and np.array_equal(scene.poses, again.poses)
    assert [p.text for p in scene.prompts] == [p.text for p in again.prompts]
    a, b = scene.render(5), again.render(5)
    assert np.array_equal(a.frame.color, b.frame.color) and np.array_equal(a.frame.depth, b.frame.depth)
    assert np.array_equal(a.visibility, b.visibility)
    assert np.array_equal(scene.occupancy(5).labels, again.occupancy(5).labels)
    other = generate_scene(4, SMALL)
    assert other.boxes.shape != scene.boxes.shape or not np.allclose(other.boxes, scene.boxes)


def test_frames_do_not_depend_on_render_order(scene):
    later = scene.render(7).frame
    fresh = generate_scene(3, SMALL)
    fresh.render(2)
    assert np.array_equal(fresh.render(7).frame.depth, later.depth)


def test_vocabulary_and_all_nine_degrees_of_freedom_occur(scenes):
    classes = Counter(o.class_name for s in scenes for o in s.objects)
    assert len(classes) >= 12 and set(classes) <= set(OBJECT_CLASSES)
    boxes = np.concatenate([s.boxes for s in scenes])
    assert np.ptp(boxes[:, 6]) > 3.0  # yaw spans most of the circle
    assert np.count_nonzero(np.abs(boxes[:, 7]) > 0.05) >= 3  # pitch (beta)
    assert np.count_nonzero(np.abs(boxes[:, 8]) > 0.05) >= 3  # roll (gamma)
    assert np.count_nonzero((np.abs(boxes[:, 7]) > 0.05) & (np.abs(boxes[:, 8]) > 0.05)) >= 1


def test_boxes_are_tight_around_the_parts(scenes):
    for s in scenes[:3]:
        for o in s.objects:
            v, _, _ = o.world_mesh()
            local = (v - o.box[:3]) @ o.rotation
            half = o.box[3:6] / 2
            assert np.all(np.abs(local) <= half + 1e-6), (o.class_name, o.instance_id)
            assert np.allclose(local.max(axis=0), half, atol=1e-6) and np.allclose(local.min(axis=0), -half, atol=1e-6)


def test_objects_stand_on_their_supports_inside_the_room(scenes):
    for s in scenes:
        for o in s.objects:
            c = box_corners(o.box)[0]
            assert s.room.contains_xy(c[:, :2], margin=-0.11).all(), o.class_name
            if o.support == SUPPORT_FLOOR:
                assert c[:, 2].min() == pytest.approx(0.0, abs=1e-6)
            elif o.support == SUPPORT_WALL:
                assert o.class_name in ("door", "window")
            else:
                parent = s.objects[o.support]
                heights = [surf[0][2] for surf in parent.world_surfaces()]
                assert min(abs(c[:, 2].min() - h) for h in heights) < 1e-6
                lo, hi = box_corners(parent.box)[0].min(axis=0), box_corners(parent.box)[0].max(axis=0)
                assert np.all(o.box[:2] >= lo[:2] - 1e-6) and np.all(o.box[:2] <= hi[:2] + 1e-6)
    monitors = [(s, o) for s in scenes for o in s.objects if o.class_name == "monitor"]
    assert monitors and all(s.objects[o.support].class_name == "table" for s, o in monitors)
    on_tables = {o.class_name for s in scenes for o in s.objects if o.support >= 0
                 and s.objects[o.support].class_name == "table"}
    assert {"cup", "book"} <= on_tables


def test_floor_furniture_does_not_interpenetrate(scenes):
    for s in scenes:
        furn = [o for o in s.objects if o.support == SUPPORT_FLOOR and o.class_name != "chair"]
        boxes = np.array([o.box for o in furn])
        inter = box_intersection_volume(boxes, boxes)
        np.fill_diagonal(inter, 0)
        assert inter.max() < 1e-6


def test_rendered_depth_lands_on_the_object_the_instance_image_names(scene):
    """Frames, poses, intrinsics and depth agree: back-projected pixels lie in their object's box."""
    for i in (0, 6, 11):
        f = scene.render(i)
        K, T = f.frame.K, f.frame.T_world_camera
        v, u = np.nonzero(f.instance > 0)
        z = f.depth_clean[v, u].astype(np.float64)
        cam = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=1)
        world = cam @ T[:3, :3].T + T[:3, 3]
        ids = f.instance[v, u] - 1
        for k in np.unique(ids):
            pts = world[ids == k]
            grown = scene.objects[k].box.copy()
            grown[3:6] += 0.01  # float32 rays
            assert points_in_boxes(pts, grown[None])[0].mean() > 0.995, scene.objects[k].class_name
        # Room pixels: floor at z = 0 where the class image says floor.
        floor = f.class_id == class_index("floor")
        fv, fu = np.nonzero(floor)
        zf = f.depth_clean[fv, fu].astype(np.float64)
        rays = np.stack([(fu - K[0, 2]) / K[0, 0], (fv - K[1, 2]) / K[1, 1], np.ones_like(zf)], axis=1) * zf[:, None]
        assert np.abs((rays @ T[:3, :3].T + T[:3, 3])[:, 2]).max() < 0.01


def test_depth_noise_is_kinect_like(scene):
    f = scene.render(4)
    clean, noisy = f.depth_clean, f.frame.depth
    both = (clean > 0) & (noisy > 0)
    sigma = 0.0012 + 0.0019 * (clean[both] - 0.4) ** 2
    err = noisy[both] - clean[both]
    assert np.abs(err).max() < 6 * sigma.max() + 0.001
    assert 0.3 < np.std(err / sigma) < 2.0  # noise of about the modelled size
    assert np.allclose(noisy[both] * 1000, np.round(noisy[both] * 1000), atol=1e-3)  # millimetre steps
    holes = (clean > 0) & (noisy == 0)
    assert 0.005 < holes.mean() < 0.3
    clean_scene = generate_scene(3, replace(SMALL, noise=None))
    assert np.array_equal(clean_scene.render(4).frame.depth, clean)


def test_visibility_counts_the_instance_image(scene):
    f = scene.render(3)
    assert f.visibility.shape == (len(scene.objects),)
    assert np.all((f.visibility >= 0) & (f.visibility <= 1))
    seen = np.unique(f.instance[f.instance > 0]) - 1
    assert np.all(f.visibility[np.setdiff1d(np.arange(len(scene.objects)), seen)] == 0)
    big = [k for k in seen if np.count_nonzero(f.instance == k + 1) > 400]
    assert big and np.all(f.visibility[big] > 0)
    vis = scene.visible_objects(f, min_fraction=0.05, min_pixels=50)
    assert set(vis) <= set(seen)


def test_occupancy_labels_sit_on_the_objects(scene):
    occ = scene.occupancy(0)
    assert occ.labels.shape == (40, 40, 16) and occ.voxel_size == 0.16 and occ.class_names == OCCUPANCY_CLASSES
    T = occ.T_world_grid
    assert np.allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3)) and abs(T[2, 3] - (-0.78)) < 1e-9
    idx = np.argwhere(occ.labels >= 0)
    centres = (idx + 0.5) * 0.16 @ T[:3, :3].T + T[:3, 3]
    labels = occ.labels[tuple(idx.T)]
    floor = labels == OCCUPANCY_CLASSES.index("floor")
    assert floor.any() and np.all(np.abs(centres[floor, 2]) < 0.16)
    for cls in set(labels.tolist()) - {OCCUPANCY_CLASSES.index("floor"), OCCUPANCY_CLASSES.index("wall")}:
        boxes = np.array([o.box for o in scene.objects if o.class_name == OCCUPANCY_CLASSES[cls]])
        boxes[:, 3:6] += 0.16 * np.sqrt(3)  # a voxel holding a surface point has its centre this close
        assert points_in_boxes(centres[labels == cls], boxes).any(axis=0).all()
    assert len(set(labels.tolist())) >= 4


def test_prompts_follow_the_uniqueness_rules(scenes):
    relations, synonyms = Counter(), 0
    for s in scenes:
        counts = Counter(o.class_name for o in s.objects)
        for p in s.prompts:
            relations[p.relation] += 1
            target = s.objects[p.target_id]
            assert p.target_class == target.class_name and 2 <= counts[target.class_name] <= 6
            assert not p.unique and len(p.distractor_ids) == counts[target.class_name] - 1
            anchors = [s.objects[a] for a in p.anchor_ids]
            assert all(counts[a.class_name] == 1 and a.class_name != target.class_name for a in anchors)
            assert len(anchors) == (2 if p.relation is RelationType.BETWEEN else 1)
            if p.predicate not in ("closest", "farthest"):
                assert _holds(p.predicate, target, anchors)
                assert not any(_holds(p.predicate, s.objects[d], anchors) for d in p.distractor_ids)
            else:
                d = {o: np.linalg.norm(s.objects[o].box[:2] - anchors[0].box[:2])
                     for o in (p.target_id, *p.distractor_ids)}
                pick = min(d, key=d.get) if p.predicate == "closest" else max(d, key=d.get)
                assert pick == p.target_id
            words = SYNONYMS[target.class_name]
            assert any(w in p.text for w in words)
            synonyms += not p.text.split(" ", 2)[1].startswith(target.class_name)
    assert set(relations) == set(RelationType), relations
    assert synonyms > 0


def test_kinect_720p_and_spin_trajectory():
    cfg = replace(KINECT_720P, trajectory=TrajectoryConfig(n_frames=4, kind=TrajectoryKind.SPIN))
    s = generate_scene(1, cfg)
    f = s.frame(2)
    assert f.color.shape == (720, 1280, 3) and f.depth.shape == (720, 1280) and f.K[0, 0] == 612.0
    assert np.allclose(s.poses[:, :2, 3], s.poses[0, :2, 3])  # turning on the spot (the mast may bob)
    R = s.poses[:, :3, :3]
    assert np.allclose(np.einsum("nij,nkj->nik", R, R), np.eye(3), atol=1e-9)
    assert np.all(R[:, 2, 2] < 0)  # looking down a little (optical z has negative world z)


def test_trajectories_are_smooth_and_stay_in_free_floor(scenes):
    for s in scenes:
        xy = s.poses[:, :2, 3]
        assert s.room.contains_xy(xy, margin=0.25).all()
        steps = np.linalg.norm(np.diff(xy, axis=0), axis=1)
        assert steps.max() <= 2.0 * steps.mean() + 0.02  # constant speed, no jumps
        for h in (0.1, 0.5, 1.0):  # the robot's body, below the camera, never enters furniture
            assert not points_in_boxes(np.c_[xy, np.full(len(xy), h)], s.boxes).any()
    for seed in (0, 1, 2):
        poses = generate_scene(seed, replace(SMALL, trajectory=TrajectoryConfig(n_frames=60))).poses
        yaw = np.arctan2(poses[:, 1, 2], poses[:, 0, 2])  # heading of the optical axis
        assert np.abs(np.angle(np.exp(1j * np.diff(yaw)))).max() < np.deg2rad(30)


def _two_box_scene():
    """A hand-made scene: box A at 1.25 m hides exactly the left half (image) of box B at 2.5 m."""
    from embodied_ros.synthetic import GridSpec, RoomShell, SyntheticObject, SyntheticScene
    from embodied_ros.synthetic.meshes import Part, Shape, box_part
    from embodied_ros.synthetic.trajectory import look_pose

    room = RoomShell(20.0, 20.0, 3.0, (Part(Shape.BOX, (0.0, 0.0, -0.05), (20.0, 20.0, 0.1)),), ("floor",), ())

    def obj(i, centre, size):
        box = np.array([*centre, *size, 0.0, 0.0, 0.0])
        return SyntheticObject(i, "box", box, (box_part((0, 0, 0), size),), np.full(3, 0.5), SUPPORT_FLOOR)

    a = obj(0, (1.25, 0.15, 1.0), (0.1, 0.3, 0.6))  # covers y in [0, 0.3]: the camera's left half of B
    b = obj(1, (2.5, 0.0, 1.0), (0.2, 0.6, 0.6))
    cfg = SceneConfig(width=201, height=201, noise=None, visibility_stride=1, grid=GridSpec())
    pose = look_pose(np.array([0.0, 0.0, 1.0]), 0.0, 0.0)
    return SyntheticScene(0, cfg, room, [a, b], pose[None])


def test_visibility_known_answer_half_occluded_box():
    s = _two_box_scene()
    f = s.render(0)
    assert f.visibility[0] == pytest.approx(1.0)
    assert f.visibility[1] == pytest.approx(0.5, abs=0.03)
    assert np.count_nonzero(f.instance == 2) == f.visible_pixels[1]
    # Camera x (image right) is world -y: the visible half of B is on the image's right.
    cols = np.nonzero(f.instance == 2)[1]
    assert cols.min() >= 100
    assert np.allclose(f.depth_clean[f.instance == 2], 2.4, atol=1e-4)  # B's front face, optical depth


def test_occupancy_known_answer_voxels():
    s = _two_box_scene()
    occ = s.occupancy(0)
    # The grid is centred on the camera (0, 0), aligned with its heading (+x), z from -0.78 m.
    assert np.allclose(occ.T_world_grid[:3, 3], [-3.2, -3.2, -0.78])
    box, floor = OCCUPANCY_CLASSES.index("box"), OCCUPANCY_CLASSES.index("floor")

    def label(x, y, z):
        i, j, k = (int(np.floor((v - o) / 0.16)) for v, o in zip((x, y, z), (-3.2, -3.2, -0.78), strict=True))
        return occ.labels[i, j, k]

    assert label(2.45, -0.2, 1.0) == box and label(1.25, 0.15, 1.25) == box
    assert label(0.5, 2.0, 1.0) == -1 and label(0.5, 2.0, -0.05) == floor
    assert np.count_nonzero(occ.labels == box) >= 8
