"""The streaming score (metrics/streaming.py): every published map of a run, scored on hand-made cases."""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.metrics.object_map import GroundTruthObject
from embodied_ros.metrics.streaming import Snapshot, camera_looks, score_stream

S = 1_000_000_000


def _gt(i: int, names: tuple[str, ...], box: list[float]) -> GroundTruthObject:
    b = np.zeros(9)
    b[:6] = box
    return GroundTruthObject(i, names[0], names, b, False, False)


TRUTH = (_gt(0, ("table", "diningtable"), [0, 0, 0.4, 2.0, 1.0, 0.8]),
         _gt(1, ("cup", "mug"), [0.3, 0, 0.85, 0.1, 0.1, 0.1]))
TABLE = [0, 0, 0.4, 2.0, 1.0, 0.8, 0, 0, 0]
CUP = [0.3, 0, 0.85, 0.1, 0.1, 0.1, 0, 0, 0]
SINK = [3.0, 3.0, 0.8, 0.5, 0.4, 0.2, 0, 0, 0]  # nothing is there


def _snap(t: float, objects: list[tuple[int, str, list[float]]]) -> Snapshot:
    return Snapshot(int(t * S), np.array([o[0] for o in objects], dtype=np.int64), tuple(o[1] for o in objects),
                    np.array([o[2] for o in objects], dtype=np.float64).reshape(-1, 9), np.full(len(objects), 0.5))


def test_a_false_object_costs_while_it_stays_and_is_counted_in_seconds_and_looks() -> None:
    grown = list(CUP)
    grown[3] = 0.5  # the cup's box five times as long: badly boxed (IoU 0.2)
    run = [_snap(0.0, []), _snap(1.0, [(0, "table", TABLE)]), _snap(2.0, [(0, "table", TABLE), (5, "sink", SINK)]),
           _snap(3.0, [(0, "table", TABLE), (5, "sink", SINK), (1, "cup", grown)]),
           _snap(4.0, [(0, "table", TABLE), (1, "cup", CUP)]), _snap(5.0, [(0, "table", TABLE), (1, "cup", CUP),
                                                                         (7, "object", SINK)])]
    eyes = [np.array([0.0, 0, 1]), np.array([0.1, 0, 1]), np.array([1.0, 0, 1]), np.array([1.1, 0, 1]),
            np.array([2.0, 0, 1]), np.array([2.1, 0, 1])]
    s = score_stream(run, TRUTH, eyes)
    np.testing.assert_allclose(s.precision, [np.nan, 1.0, 0.5, 1 / 3, 1.0, 1.0])  # unknown objects do not count
    assert s.mean_precision == pytest.approx((1 + 0.5 + 1 / 3 + 1 + 1) / 5)
    assert s.has_false.tolist() == [False, False, True, True, False, False] and s.false_share == pytest.approx(2 / 6)
    sink, cup = s.false_objects  # longest-lived first
    assert (sink.id, sink.snapshots, sink.seconds, sink.looks, sink.best_iou) == (5, 2, pytest.approx(2.0), 1, 0.0)
    assert (cup.id, cup.snapshots, cup.best_gt) == (1, 1, 1) and 0 < cup.best_iou < 0.25  # badly boxed, not false
    assert s.longest_false_share == pytest.approx(2 / 6)
    assert s.n_looks == 3 and s.first_match_ns == {0: 1 * S, 1: 4 * S} and s.first_match_looks == {0: 0, 1: 2}
    table, mug = s.true_objects
    assert (table.id, table.gt_id, len(table.iou_truth)) == (0, 0, 5) and table.iou_final == pytest.approx([1.0] * 5)
    assert (mug.id, mug.gt_id) == (1, 1) and mug.iou_final[0] == pytest.approx(0.2) and mug.iou_truth[-1] == 1.0
    assert s.retracted == []
    gone = score_stream([_snap(0.0, [(0, "table", TABLE)]), _snap(1.0, [])], TRUTH)  # taken off the map
    assert [t.id for t in gone.retracted] == [0]


def test_looks_are_places_and_visits_as_the_memory_counts_them() -> None:
    stamps = [0, 1, 2, 3, 15, 16]
    eyes = [np.array([0.1, 0.1, 1.0]), np.array([0.2, 0.1, 1.0]), np.array([0.7, 0.1, 1.0]),
            np.array([0.2, 0.1, 1.0]), np.array([0.2, 0.1, 1.0]), np.array([0.2, 0.1, 1.0])]
    looks = camera_looks([t * S for t in stamps], eyes)
    # the same cell is one look, a new cell another, back within 10 s the first again, after 10 s a new one
    assert looks.tolist() == [0, 0, 1, 0, 2, 2]
    dense = camera_looks([int(t * S / 30) for t in range(300)], [np.array([0.01 * t / 30, 0, 1]) for t in range(300)])
    sparse = camera_looks([int(t * S / 3) for t in range(30)], [np.array([0.01 * t / 3, 0, 1]) for t in range(30)])
    assert dense.max() == sparse.max()  # the same walk at 30 Hz and at 3 Hz
    assert camera_looks([0, S], [None, None]).tolist() == [0, 0]
