"""The synthetic scene as a FrameSource, through the real scene memory and occupancy map."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("open3d", reason="rendering needs open3d (pip install open3d; apt libusb-1.0-0)")

from embodied_ros.detections import FramePerception  # noqa: E402
from embodied_ros.errors import InputError  # noqa: E402
from embodied_ros.frame import Frame  # noqa: E402
from embodied_ros.geometry.boxes import points_in_boxes  # noqa: E402
from embodied_ros.geometry.iou import box_iou_3d  # noqa: E402
from embodied_ros.memory.scene_memory import SceneMemory  # noqa: E402
from embodied_ros.metrics.detection import BoxSet, evaluate_detection  # noqa: E402
from embodied_ros.metrics.occupancy import occupancy_miou  # noqa: E402
from embodied_ros.occupancy.voxel_map import OccupancyMap  # noqa: E402
from embodied_ros.sources.base import FrameSource  # noqa: E402
from embodied_ros.synthetic import (  # noqa: E402
    OCCUPANCY_CLASSES,
    SceneConfig,
    SyntheticSource,
    TrajectoryConfig,
    generate_scene,
    parse_synthetic_spec,
)

CONFIG = SceneConfig(width=192, height=192, trajectory=TrajectoryConfig(n_frames=16))


@pytest.fixture(scope="module")
def source():
    return SyntheticSource(seed=11, config=CONFIG)


def test_source_follows_the_frame_source_contract(source):
    assert isinstance(source, FrameSource) and source.gravity_aligned and len(source) == 16
    frames = list(source.frames(stride=5, max_frames=3))
    assert [f.index for f in frames] == [0, 5, 10]
    assert all(isinstance(f, Frame) and f.color.shape == (192, 192, 3) for f in frames)
    assert frames[1].stamp_ns == 5 * CONFIG.frame_period_ns and frames[0].source_name == "synthetic:seed=11"
    with pytest.raises(IndexError):
        source.read(16)


def test_spec_parsing():
    seed, cfg = parse_synthetic_spec("synthetic:seed=7,frames=80,size=1280x720,trajectory=spin,noise=off")
    assert seed == 7 and cfg.trajectory.n_frames == 80 and (cfg.width, cfg.height, cfg.focal) == (1280, 720, 612.0)
    assert cfg.noise is None and cfg.trajectory.kind.value == "spin"
    assert parse_synthetic_spec("synthetic:5")[0] == 5 and parse_synthetic_spec("synthetic")[0] == 0
    for bad in ("synthetic:colour=red", "synthetic:seed=x", "synthetic:frames=0", "synthetic:noise=maybe", "other"):
        with pytest.raises(InputError):
            parse_synthetic_spec(bad)


def test_memory_accumulates_perfect_detections_into_exactly_the_scene_objects(source):
    scene = source.scene
    memory = SceneMemory(min_observations=1, max_per_class=100)
    seen: set[int] = set()
    for i in range(len(source)):
        sf = scene.render(i)
        ids = scene.visible_objects(sf, min_fraction=0.05, min_pixels=30)
        seen |= set(ids.tolist())
        memory.update(FramePerception(i, sf.frame.stamp_ns, scene.as_detections(ids, score=0.9)))
    objects = memory.objects()
    assert len(seen) >= 10 and len(objects) == len(seen)
    boxes = np.array([o.box for o in objects])
    iou = box_iou_3d(boxes, scene.boxes)
    match = iou.argmax(axis=1)
    assert np.all(iou.max(axis=1) > 0.999) and set(match.tolist()) == seen
    assert all(o.class_name == scene.objects[m].class_name for o, m in zip(objects, match, strict=True))
    # The detection metric agrees: mAP 1 on the seen objects.
    pred = BoxSet(boxes, tuple(o.class_name for o in objects), np.array([o.score for o in objects]))
    m = evaluate_detection([pred], [scene.ground_truth(np.array(sorted(seen)))])
    assert m.mean_ap[0.5] == pytest.approx(1.0)


def test_integrated_depth_is_occupied_where_the_scene_surfaces_are(source):
    scene = source.scene
    occ = OccupancyMap(max_range=5.0, pixel_stride=2)
    for frame in source.frames(stride=2):
        occ.integrate_depth(frame)
    vox = occ.occupied_voxels()
    assert len(vox) > 200
    # Precision: nearly every occupied voxel holds (or neighbours) a surface point of the scene.
    surf = np.floor(scene.surface.points / 0.16).astype(np.int64)
    near = {tuple(v) for v in np.unique(surf, axis=0)}
    keys = np.floor(vox.centers / 0.16).astype(np.int64)
    offsets = np.array([(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)])
    hit = [any(tuple(k + o) in near for o in offsets) for k in keys]
    exact = [tuple(k) in near for k in keys]
    # Depth noise moves surfaces lying on voxel boundaries (the floor at z = 0) into the next voxel.
    assert np.mean(hit) > 0.98 and np.mean(exact) > 0.75
    # Objects seen well are occupied inside their boxes.
    sf = scene.render(0)
    for k in np.flatnonzero((sf.visibility > 0.6) & (sf.visible_pixels > 800)):
        box = scene.objects[k].box.copy()
        box[3:6] += 0.16
        assert points_in_boxes(vox.centers, box[None])[0].any(), scene.objects[k].class_name
    # And the ground-truth occupancy grid agrees with the fused map where the map is sure.
    gt = scene.occupancy(len(scene) // 2)
    mapped = occ.labels_grid(gt.T_world_grid)
    occupied_pred = np.where(mapped.labels >= 0, 0, -1)
    occupied_gt = np.where(gt.labels >= 0, 0, -1)
    observed = occ.sample((np.indices(gt.labels.shape).reshape(3, -1).T + 0.5) @ (0.16 * gt.T_world_grid[:3, :3].T)
                          + gt.T_world_grid[:3, 3]).observed.reshape(gt.labels.shape)
    m = occupancy_miou([occupied_pred], [occupied_gt], ("occupied",), valid=[observed])
    assert m.miou > 0.4
    assert gt.class_names == OCCUPANCY_CLASSES


def test_clean_and_noisy_sources_share_geometry():
    noisy = SyntheticSource(seed=2, config=replace(CONFIG, trajectory=TrajectoryConfig(n_frames=2)))
    clean = SyntheticSource(generate_scene(2, replace(CONFIG, noise=None, trajectory=TrajectoryConfig(n_frames=2))))
    a, b = noisy.read(1), clean.read(1)
    assert np.array_equal(a.T_world_camera, b.T_world_camera)
    both = (a.depth > 0) & (b.depth > 0)
    assert np.median(np.abs(a.depth[both] - b.depth[both])) < 0.01


def test_the_real_pipeline_runs_on_a_generated_scene_with_the_oracle_perceptor(tmp_path):
    from embodied_ros.mapper import SceneMapper
    from embodied_ros.network.perceptor import Perceptor
    from embodied_ros.pipeline import run
    from embodied_ros.synthetic import GroundTruthPerceptor

    small = replace(CONFIG, width=128, height=128, trajectory=TrajectoryConfig(n_frames=6))
    src = SyntheticSource(seed=5, config=small)
    oracle = GroundTruthPerceptor(src.scene, min_pixels=20)
    assert isinstance(oracle, Perceptor)
    memory = SceneMemory(min_observations=1)
    summary = run(src, SceneMapper(perceptor=oracle, memory=memory), tmp_path, n_pictures=1, write_inputs=False)
    assert (tmp_path / "scene.mcap").is_file() and (tmp_path / "objects.json").is_file()
    assert len(memory) >= 3 and summary is not None
    # The run's seconds span every frame's stages (the frame rate it reports is not the last frame's).
    stages_s = summary.frames_processed * sum(summary.stage_ms.values()) / 1000.0
    assert summary.seconds >= stages_s > 0 and summary.fps <= summary.frames_processed / stages_s
    iou = box_iou_3d(np.array([o.box for o in memory.objects()]), src.scene.boxes)
    assert np.all(iou.max(axis=1) > 0.999)
