"""Detection mAP@0.25/0.50 with exact 9-DoF IoU on hand-made cases whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.detections import Detections3D
from embodied_ros.geometry.boxes import box_rotations
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.metrics.detection import BoxSet, average_precision, evaluate_detection


def _box(x=0.0, y=0.0, z=0.0, dx=1.0, dy=1.0, dz=1.0, a=0.0, b=0.0, c=0.0) -> list[float]:
    return [x, y, z, dx, dy, dz, a, b, c]


def _gt() -> BoxSet:
    boxes = [_box(0, 0, 0.5), _box(3, 0, 0.5, a=0.4), _box(0, 3, 0.5, b=0.3, c=-0.2), _box(5, 5, 1, 2, 1, 2)]
    return BoxSet(np.array(boxes), ("chair", "chair", "cup", "sofa"))


def test_perfect_predictions_give_map_one_at_both_thresholds():
    gt = _gt()
    pred = BoxSet(gt.boxes.copy(), gt.names, np.array([0.9, 0.8, 0.7, 0.6]))
    m = evaluate_detection([pred], [gt])
    assert m.mean_ap[0.25] == pytest.approx(1.0) and m.mean_ap[0.5] == pytest.approx(1.0)
    assert m.n_gt == {"chair": 2, "cup": 1, "sofa": 1}
    assert "mAP@0.25 1.000" in m.summary()


def test_false_positive_ranked_above_true_positives_gives_two_thirds():
    gt = BoxSet(np.array([_box(0, 0, 0), _box(3, 0, 0)]), ("chair", "chair"))
    pred = BoxSet(np.array([_box(9, 9, 9), _box(0, 0, 0), _box(3, 0, 0)]), ("chair",) * 3, np.array([0.9, 0.8, 0.7]))
    m = evaluate_detection([pred], [gt])
    # precision 0, 1/2, 2/3 at recall 0, 1/2, 1: the envelope is 2/3 everywhere.
    assert m.ap[0.25]["chair"] == pytest.approx(2 / 3)
    assert m.recall[0.5]["chair"] == pytest.approx(1.0)


def test_false_positive_below_the_true_positive_costs_nothing_above_it_halves_ap():
    gt = BoxSet(np.array([_box()]), ("cup",))
    below = BoxSet(np.array([_box(), _box(5, 0, 0)]), ("cup", "cup"), np.array([0.9, 0.8]))
    above = BoxSet(np.array([_box(), _box(5, 0, 0)]), ("cup", "cup"), np.array([0.8, 0.9]))
    assert evaluate_detection([below], [gt]).mean_ap[0.25] == pytest.approx(1.0)
    assert evaluate_detection([above], [gt]).mean_ap[0.25] == pytest.approx(0.5)


def test_duplicate_detection_of_one_object_is_a_false_positive():
    gt = BoxSet(np.array([_box(), _box(4, 0, 0)]), ("box", "box"))
    pred = BoxSet(np.array([_box(), _box(0.02, 0, 0), _box(4, 0, 0)]), ("box",) * 3, np.array([0.9, 0.8, 0.7]))
    # TP, FP, TP: precision 1, 1/2, 2/3 at recall 1/2, 1/2, 1 -> 0.5 * 1 + 0.5 * 2/3.
    assert evaluate_detection([pred], [gt]).ap[0.25]["box"] == pytest.approx(0.5 + 1 / 3)


@pytest.mark.parametrize("threshold, d_edge", [(0.25, 0.6), (0.5, 1 / 3)])
def test_iou_just_above_threshold_matches_just_below_does_not_for_tilted_boxes(threshold, d_edge):
    # Two unit cubes with one 9-DoF orientation, shifted by d along their own x axis: IoU = (1-d)/(1+d).
    angles = np.array([0.7, 0.35, -0.25])
    axis_x = box_rotations(np.array(_box(a=angles[0], b=angles[1], c=angles[2])))[0][:, 0]
    gt = BoxSet(np.array([_box(1, 2, 1, *[1, 1, 1], *angles)]), ("bottle",))
    for d, expect in ((d_edge - 0.01, 1.0), (d_edge + 0.01, 0.0)):
        c = np.array([1.0, 2.0, 1.0]) + d * axis_x
        pred = BoxSet(np.array([_box(*c, 1, 1, 1, *angles)]), ("bottle",), np.array([0.5]))
        iou = box_iou_3d(pred.boxes, gt.boxes)[0, 0]
        assert iou == pytest.approx((1 - d) / (1 + d), abs=1e-9)
        assert evaluate_detection([pred], [gt], iou_thresholds=(threshold,)).mean_ap[threshold] == expect


def test_rotation_matters_yaw_only_approximation_would_pass():
    # Same centre and extents, but beta tilted by 90 degrees: a yaw-only IoU would say 1.
    gt = BoxSet(np.array([_box(0, 0, 0, 2.0, 0.5, 0.5)]), ("lamp",))
    pred = BoxSet(np.array([_box(0, 0, 0, 2.0, 0.5, 0.5, b=np.pi / 2)]), ("lamp",), np.array([1.0]))
    # beta = 90 deg turns the box about its own 2 m x axis: the square 0.5 x 0.5 section maps onto itself.
    assert evaluate_detection([pred], [gt]).mean_ap[0.5] == pytest.approx(1.0)
    pred_g = BoxSet(np.array([_box(0, 0, 0, 2.0, 0.5, 0.5, c=np.pi / 2)]), ("lamp",), np.array([1.0]))
    # gamma = 90 deg turns the 2 m axis vertical: intersection 0.5^3, IoU 0.125/(0.5+0.5-0.125) < 0.25.
    assert evaluate_detection([pred_g], [gt]).mean_ap[0.25] == 0.0


def test_wrong_class_is_a_miss_and_classes_without_ground_truth_do_not_count():
    gt = BoxSet(np.array([_box(), _box(3, 0, 0)]), ("chair", "table"))
    pred = BoxSet(np.array([_box(), _box(3, 0, 0), _box(7, 0, 0)]), ("chair", "sofa", "plant"), np.array([1, 1, 1.0]))
    m = evaluate_detection([pred], [gt])
    assert m.ap[0.25]["chair"] == 1.0 and m.ap[0.25]["table"] == 0.0
    assert np.isnan(m.ap[0.25]["sofa"]) and np.isnan(m.ap[0.25]["plant"])
    assert m.mean_ap[0.25] == pytest.approx(0.5)
    assert m.n_pred == {"chair": 1, "plant": 1, "sofa": 1, "table": 0}


def test_scenes_are_matched_separately_and_detections_are_accepted():
    gt1 = BoxSet(np.array([_box()]), ("bed",))
    gt2 = BoxSet(np.zeros((0, 9)), ())
    det_wrong_scene = Detections3D.empty(("bed",), "world")
    det_other = Detections3D(np.array([_box()]), np.array([0]), np.array([0.9]), ("bed",), "world")
    m = evaluate_detection([det_wrong_scene, det_other], [gt1, gt2])
    assert m.mean_ap[0.25] == 0.0 and m.recall[0.25]["bed"] == 0.0
    m = evaluate_detection([det_other, det_wrong_scene], [gt1, gt2])
    assert m.mean_ap[0.25] == 1.0


def test_average_precision_known_curve_and_no_predictions():
    assert average_precision(np.array([0.5, 1.0]), np.array([1.0, 0.5])) == pytest.approx(0.75)
    assert average_precision(np.array([0.5, 0.5, 1.0]), np.array([1.0, 0.5, 2 / 3])) == pytest.approx(5 / 6)
    assert average_precision(np.zeros(0), np.zeros(0)) == 0.0
    gt = BoxSet(np.array([_box()]), ("bin",))
    assert evaluate_detection([BoxSet(np.zeros((0, 9)), ())], [gt]).mean_ap[0.5] == 0.0


def test_mismatched_inputs_raise():
    with pytest.raises(ValueError):
        evaluate_detection([], [_gt()])
    with pytest.raises(ValueError):
        BoxSet(np.zeros((2, 9)), ("a",))
