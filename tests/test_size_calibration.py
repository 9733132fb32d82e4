"""Per-class box size calibration: the height/footprint convention, fitting, applying, files, and
fitting it for the shipped weights over real synthetic scenes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from embodied_ros.errors import ModelError
from embodied_ros.geometry.boxes import box_corners, box_volumes
from embodied_ros.network.perceptron_perceptor import PerceptronPerceptor, torch_runner
from embodied_ros.network.pixel_detections import PixelDecodeParams
from embodied_ros.network.size_calibration import (
    FACTOR_RANGE,
    SizeCalibration,
    calibration_path,
    fit_size_calibration,
    height_and_footprint,
    vertical_axes,
)
from embodied_ros.runtime.engine_cache import sha256_file
from embodied_ros.synthetic.scene import generate_scene
from embodied_ros.training.calibrate import calibrate_sizes, match_detections
from embodied_ros.training.samples import scene_config

SHIPPED = Path(__file__).resolve().parents[1] / "models" / "embodied_perceptron.pt"


def _box(x, y, z, dx, dy, dz, yaw=0.0, beta=0.0, gamma=0.0) -> np.ndarray:
    return np.array([x, y, z, dx, dy, dz, yaw, beta, gamma], dtype=np.float64)


def test_height_is_the_extent_along_the_axis_nearest_world_z() -> None:
    upright = _box(0, 0, 0, 0.4, 0.2, 1.0, yaw=0.7)
    lying = _box(0, 0, 0, 0.4, 1.0, 0.2, beta=np.pi / 2)  # local y turned up: its extent 1.0 is the height
    np.testing.assert_array_equal(vertical_axes(np.stack([upright, lying])), [2, 1])
    np.testing.assert_allclose(height_and_footprint(np.stack([upright, lying])), [[1.0, 0.08], [1.0, 0.08]])


def test_fit_recovers_known_factors_and_apply_undoes_the_bias() -> None:
    rng = np.random.default_rng(0)
    truth = np.stack([_box(*rng.uniform(-2, 2, 3), *rng.uniform(0.1, 1.0, 3), yaw=rng.uniform(-3, 3))
                      for _ in range(40)])
    predicted = truth.copy()
    predicted[:, 5] *= 0.5  # a detector that halves heights...
    predicted[:, 3:5] *= np.sqrt(2.0)  # ...and doubles footprints
    predicted[:, 6] += np.pi / 2  # axis labels do not matter (a quarter turn with swapped extents)
    predicted[:, 3:5] = predicted[:, [4, 3]]
    names = ["cup"] * 30 + ["bed"] * 10
    names[29] = "lamp"  # one sample: too few for factors
    sizes = fit_size_calibration(predicted, truth, names, min_samples=5)
    assert set(sizes.factors) == {"cup", "bed"} and sizes.samples == {"cup": 29, "bed": 10}
    for name in ("cup", "bed"):
        assert sizes.factors[name] == pytest.approx((2.0, 0.5), rel=1e-3)
    classes = ("cup", "bed", "lamp")
    labels = np.array([classes.index(x) for x in names])
    fixed = sizes.apply(predicted, labels, classes)
    same = labels != 2
    np.testing.assert_allclose(np.sort(box_corners(fixed[same]), axis=1), np.sort(box_corners(truth[same]), axis=1),
                               atol=1e-3)
    np.testing.assert_array_equal(fixed[~same], predicted[~same])  # a class without factors is left alone
    np.testing.assert_array_equal(fixed[:, [0, 1, 2, 6, 7, 8]], predicted[:, [0, 1, 2, 6, 7, 8]])
    # Factors are a correction, clipped: a wildly wrong class cannot blow boxes up.
    huge = fit_size_calibration(predicted[:10] * [1, 1, 1, 0.01, 0.01, 0.01, 1, 1, 1], predicted[:10], ["bin"] * 10,
                                min_samples=5)
    assert huge.factors["bin"] == (FACTOR_RANGE[1], FACTOR_RANGE[1])


def test_apply_scales_the_vertical_axis_of_a_tilted_box() -> None:
    sizes = SizeCalibration({"book": (0.5, 4.0)})
    lying = _box(1, 2, 0.3, 0.3, 0.04, 0.2, beta=np.pi / 2)  # local y is vertical
    out = sizes.apply(lying[None], np.array([0]), ("book",))[0]
    np.testing.assert_allclose(out[3:6], [0.6, 0.02, 0.4])
    assert box_volumes(out[None])[0] == pytest.approx(2.0 * box_volumes(lying[None])[0])
    assert sizes.apply(np.zeros((0, 9)), np.zeros(0, np.int64), ("book",)).shape == (0, 9)


def test_files_round_trip_and_bad_files_say_why(tmp_path: Path) -> None:
    assert calibration_path(tmp_path / "embodied_perceptron.pt") == tmp_path / "embodied_perceptron.sizes.json"
    sizes = SizeCalibration({"cup": (1.25, 0.8), "bed": (1.0, 0.5)}, {"cup": 12, "bed": 30}, "test", "ab" * 32)
    sizes.save(tmp_path / "s.json")
    assert SizeCalibration.load(tmp_path / "s.json") == sizes
    doc = json.loads((tmp_path / "s.json").read_text())
    doc["classes"]["cup"]["height"] = -1
    (tmp_path / "neg.json").write_text(json.dumps(doc))
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    for name, words in (("neg.json", "positive"), ("other.json", "not a size calibration"), ("missing.json", "cannot")):
        with pytest.raises(ModelError, match=words):
            SizeCalibration.load(tmp_path / name)


def test_detections_match_the_same_class_box_they_overlap_or_stand_next_to() -> None:
    truth = np.stack([_box(0, 0, 0.5, 1, 1, 1), _box(3, 0, 0.05, 0.08, 0.08, 0.1), _box(0.2, 0, 0.5, 1, 1, 1)])
    true_labels = np.array([0, 1, 2])
    dets = np.stack([_box(0.1, 0, 0.5, 1, 1, 1),  # overlaps truth 0 and truth 2; class 0 -> truth 0
                     _box(3.1, 0.1, 0.05, 0.05, 0.05, 0.05),  # a cup 14 cm off, no overlap -> truth 1
                     _box(3.5, 0, 0.05, 0.05, 0.05, 0.05),  # 50 cm off -> none
                     _box(0, 0, 0.5, 1, 1, 1)])  # class 3 is not in the scene -> none
    np.testing.assert_array_equal(match_detections(dets, np.array([0, 1, 1, 3]), truth, true_labels), [0, 1, -1, -1])


@pytest.fixture(scope="module")
def shipped():
    from embodied_ros.training.trainer import load_weights

    return load_weights(SHIPPED)


def test_calibration_of_the_shipped_weights_on_a_training_scene(shipped) -> None:
    model, config = shipped
    sizes = calibrate_sizes(torch_runner(model), config.model, config.data, range(3, 4), frames_per_scene=3,
                            min_samples=3, progress=False)
    assert sizes.factors, "no class had 3 matched detections in 3 keyframes"
    for name, (h, a) in sizes.factors.items():
        assert name in config.model.classes and sizes.samples[name] >= 3
        assert FACTOR_RANGE[0] <= h <= FACTOR_RANGE[1] and FACTOR_RANGE[0] <= a <= FACTOR_RANGE[1]
    # The perceptor applies it to the box head's boxes: same network output, boxes rescaled per class,
    # nothing else changed...
    frame = generate_scene(3, scene_config(config.data)).frame(0)
    run = torch_runner(model)
    box_head = PixelDecodeParams(classes=())
    raw = PerceptronPerceptor(run, config.model, floor_z=0.0, pixels=box_head).perceive(frame).detections
    fixed = PerceptronPerceptor(run, config.model, floor_z=0.0, sizes=sizes, pixels=box_head).perceive(frame).detections
    np.testing.assert_array_equal(fixed.labels, raw.labels)
    np.testing.assert_allclose(fixed.boxes, sizes.apply(raw.boxes, raw.labels, raw.class_names))
    assert len(raw) and not np.allclose(fixed.boxes[:, 3:6], raw.boxes[:, 3:6])
    # ...and never to boxes lifted from the pixel head (their sizes come from depth, not the regressor).
    raw = PerceptronPerceptor(run, config.model, floor_z=0.0).perceive(frame).detections
    fixed = PerceptronPerceptor(run, config.model, floor_z=0.0, sizes=sizes).perceive(frame).detections
    lifted = np.isin(raw.labels, [config.model.classes.index(c) for c in PixelDecodeParams().classes])
    assert lifted.any() and config.model.pixel_head
    np.testing.assert_array_equal(fixed.labels, raw.labels)
    np.testing.assert_allclose(fixed.boxes[lifted], raw.boxes[lifted])


def test_the_shipped_calibration_file_loads_and_covers_the_vocabulary(shipped) -> None:
    _, config = shipped
    sizes = SizeCalibration.load(calibration_path(SHIPPED))
    assert set(sizes.factors) <= set(config.model.classes) and len(sizes.factors) >= 12
    assert "seeds 0..23" in sizes.source  # training seeds, never the held-out 10000..
    assert sizes.weights_sha256 == sha256_file(SHIPPED)  # fitted for exactly these weights


def test_held_out_evaluation_with_the_shipped_weights(shipped) -> None:
    """evaluate() as the benchmark runs it, on one held-out scene: the calibration changes the boxes
    only, and the accumulated world map answers more of each keyframe's grid than the frame alone."""
    from embodied_ros.training.evaluate import evaluate

    model, config = shipped
    sizes = SizeCalibration.load(calibration_path(SHIPPED))
    runs = [evaluate(torch_runner(model), config.model, config.data, seeds=range(10_000, 10_001), frames_per_scene=4,
                     sizes=s, resamples=r) for s, r in ((None, 0), (sizes, 20))]
    raw, calibrated = runs
    assert raw.intervals == {}
    # One scene: every bootstrap draw is that scene, so each interval is the metric itself.
    for name, value in (("accumulated_map25", calibrated.accumulated.mean_ap[0.25]),
                        ("map_in_view", calibrated.occupancy_map.miou),
                        ("map_whole_grids", calibrated.occupancy_map_grid.miou)):
        interval = calibrated.intervals[name]
        assert interval.value == interval.low == interval.high == pytest.approx(value) and interval.n_scenes == 1
    assert raw.n_frames == calibrated.n_frames == 4
    assert raw.occupancy.miou == calibrated.occupancy.miou  # the grid is not touched by box sizes
    assert raw.accumulated.mean_ap[0.25] != calibrated.accumulated.mean_ap[0.25]
    for r in runs:
        # Every object the memory holds is scored, settled or not (a few keyframes settle few boxes).
        assert r.accumulated.mean_ap[0.25] > 0.5 * r.per_frame.mean_ap[0.25]
        assert r.occupancy_map_grid.miou > r.occupancy.miou  # accumulation fills the unseen part of the grid
        assert r.occupancy_map.miou > r.occupancy_map_grid.miou  # ...but in view is still where it is good
