"""The ground-truth scorer of object maps (metrics/object_map.py) on hand-made cases, and on the real file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import KITCHEN

from embodied_ros.errors import InputError
from embodied_ros.metrics.object_map import (
    GroundTruthObject,
    MatchMode,
    Outcome,
    load_ground_truth,
    reached_by_detections,
    score_object_map,
)


def _gt(i: int, names: tuple[str, ...], box: list[float], easy: bool = False, optional: bool = False):
    b = np.zeros(9)
    b[: len(box)] = box
    return GroundTruthObject(i, names[0], names, b, easy, optional)


TRUTH = (
    _gt(0, ("table", "dining table", "diningtable"), [0, 0, 0.4, 2.0, 1.0, 0.8], easy=True),
    _gt(1, ("chair", "seat"), [0, 1.0, 0.45, 0.5, 0.5, 0.9], easy=True),
    _gt(2, ("mug", "cup"), [0.3, 0.0, 0.85, 0.1, 0.1, 0.1]),
    _gt(3, ("cabinet", "cupboard"), [3.0, 0.0, 0.5, 1.0, 0.6, 1.0], optional=True),
)


def _score(preds: list[tuple[str, float, list[float]]], mode: MatchMode = MatchMode.IOU, **kw):
    boxes = np.zeros((len(preds), 9))
    for k, (_, _, box) in enumerate(preds):
        boxes[k, : len(box)] = box
    return score_object_map(boxes, [p[0] for p in preds], np.array([p[1] for p in preds]), TRUTH, mode, **kw)


def test_a_perfect_map_scores_one():
    s = _score([("Dining Table", 0.9, [0, 0, 0.4, 2.0, 1.0, 0.8]), ("chair", 0.8, [0, 1.0, 0.45, 0.5, 0.5, 0.9]),
                ("cup", 0.7, [0.3, 0.0, 0.85, 0.1, 0.1, 0.1])])
    assert s.precision == 1.0 and s.recall == 1.0 and s.recall_easy == 1.0
    assert s.matched == (0, 1, 2) and s.easy_matched == (0, 1) and s.n_required == 3 and s.n_easy == 2


def test_the_class_must_be_one_of_the_names():
    s = _score([("bench", 0.9, [0, 0, 0.4, 2.0, 1.0, 0.8])])  # a good box with a wrong name
    assert s.results[0].outcome is Outcome.FALSE and s.results[0].mislabelled and s.results[0].gt_id == 0
    assert s.precision == 0.0 and s.recall == 0.0


def test_iou_threshold_and_centre_distance_are_separate_modes():
    shifted = [0.35, 0.0, 0.4, 2.0, 1.0, 0.8]  # shifted 0.35 m along x: IoU 0.70, centre 0.35 m away
    assert _score([("table", 0.9, shifted)]).n_true == 1
    assert _score([("table", 0.9, shifted)], MatchMode.CENTRE).n_true == 0
    assert _score([("table", 0.9, shifted)], MatchMode.CENTRE, max_centre_distance=0.4).n_true == 1
    thin = [0.0, 0.0, 0.78, 2.0, 1.0, 0.05]  # the table top only: centre near, IoU 0.06
    assert _score([("table", 0.9, thin)]).n_true == 0
    assert _score([("table", 0.9, thin)], MatchMode.CENTRE).n_true == 0  # 0.38 m above the centre
    assert _score([("table", 0.9, thin)], MatchMode.CENTRE, max_centre_distance=0.4).n_true == 1


def test_greedy_by_score_a_second_hit_is_a_duplicate():
    s = _score([("chair", 0.3, [0, 1.0, 0.45, 0.5, 0.5, 0.9]), ("chair", 0.8, [0.05, 1.0, 0.45, 0.5, 0.5, 0.9])])
    assert [r.outcome for r in s.results] == [Outcome.DUPLICATE, Outcome.TRUE]  # input order kept
    assert s.n_duplicates == 1 and s.precision == 0.5 and s.recall == pytest.approx(1 / 3)


def test_a_prediction_takes_the_free_object_that_fits():
    cups = (_gt(0, ("cup",), [0, 0, 0, 0.1, 0.1, 0.1]), _gt(1, ("cup",), [0.06, 0, 0, 0.1, 0.1, 0.1]))
    boxes = np.array([[0.03, 0, 0, 0.1, 0.1, 0.1, 0, 0, 0], [0.0, 0, 0, 0.1, 0.1, 0.1, 0, 0, 0]])
    s = score_object_map(boxes, ["cup", "cup"], np.array([0.9, 0.5]), cups)
    assert [r.outcome for r in s.results] == [Outcome.TRUE, Outcome.TRUE] and s.recall == 1.0


def test_optional_objects_count_neither_way():
    s = _score([("cupboard", 0.9, [3.0, 0.0, 0.5, 1.0, 0.6, 1.0]), ("cupboard", 0.5, [3.0, 0.0, 0.5, 1.0, 0.6, 1.0])])
    assert s.n_ignored == 2 and np.isnan(s.precision) and s.n_required == 3
    wrong = _score([("oven", 0.9, [3.0, 0.0, 0.5, 1.0, 0.6, 1.0])])  # not one of its names: false
    assert wrong.n_false == 1 and wrong.results[0].mislabelled


def test_tilted_predictions_are_scored_with_their_tilt():
    book = (_gt(0, ("book", "magazine"), [0, 0, 0.75, 0.3, 0.2, 0.02]),)
    level = np.array([[0, 0, 0.75, 0.3, 0.2, 0.02, 0.0, 0.0, 0.0]])
    tilted = np.array([[0, 0, 0.75, 0.3, 0.2, 0.02, 0.0, 0.0, 0.3]])  # tipped 17 degrees about its y axis
    assert score_object_map(level, ["book"], np.ones(1), book).n_true == 1
    assert score_object_map(tilted, ["book"], np.ones(1), book).n_true == 0  # a yaw-only IoU would say 1.0


def test_load_ground_truth_reads_and_refuses(tmp_path: Path):
    (tmp_path / "gt.json").write_text(json.dumps({"objects": [
        {"id": 4, "class": "cup", "names": ["cup", "mug"], "box": [1, 2, 3, 0.1, 0.1, 0.1, 0.5],
         "difficulty": "easy", "optional": False}]}))
    (gt,) = load_ground_truth(tmp_path / "gt.json")
    assert gt.id == 4 and gt.easy and not gt.optional and gt.accepts("Mug") and not gt.accepts("bowl")
    np.testing.assert_allclose(gt.box, [1, 2, 3, 0.1, 0.1, 0.1, 0.5, 0, 0])
    (tmp_path / "bad.json").write_text(json.dumps({"objects": [{"id": 1, "class": "x", "names": [], "box": [1]}]}))
    with pytest.raises(InputError, match="box has 1 values"):
        load_ground_truth(tmp_path / "bad.json")
    with pytest.raises(InputError):
        load_ground_truth(tmp_path / "missing.json")


@pytest.mark.skipif(not (KITCHEN / "ground_truth.json").is_file(), reason=f"no ground truth in {KITCHEN}")
def test_the_redkitchen_ground_truth_scores_itself_perfectly():
    truth = load_ground_truth(KITCHEN / "ground_truth.json")
    required = [g for g in truth if not g.optional]
    assert len(truth) == 41 and len(required) == 25 and sum(g.easy for g in required) == 6
    s = score_object_map(np.array([g.box for g in required]), [g.class_name for g in required],
                         np.linspace(1, 0.5, len(required)), truth)
    assert s.precision == 1.0 and s.recall == 1.0 and len(s.easy_matched) == 6


def test_reached_by_detections_needs_one_fitting_detection_with_one_of_the_names():
    boxes = np.zeros((4, 9))
    boxes[0, :6] = [0, 0, 0.4, 2.0, 1.0, 0.8]  # the table, as "dining table"
    boxes[1, :6] = [0, 1.0, 0.45, 0.5, 0.5, 0.9]  # where the chair is, but called "sofa"
    boxes[2, :6] = [0.32, 0.0, 0.85, 0.1, 0.1, 0.1]  # the mug (IoU 0.67, centre 2 cm)
    boxes[3, :6] = [3.0, 0.0, 0.5, 1.0, 0.6, 1.0]  # the optional cabinet: not in the ceiling
    names = ["dining table", "sofa", "cup", "cabinet"]
    assert reached_by_detections(boxes, names, TRUTH) == (0, 2)
    far = boxes.copy()
    far[2, 0] = 0.5  # 20 cm off: IoU 0, yet within 0.3 m
    assert reached_by_detections(far, names, TRUTH) == (0,)
    assert reached_by_detections(far, names, TRUTH, MatchMode.CENTRE) == (0, 2)
    assert reached_by_detections(np.zeros((0, 9)), [], TRUTH) == ()
