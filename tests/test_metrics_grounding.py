"""Grounding metrics on hand-made queries with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from grounding_scenes import kitchen

from embodied_ros.grounding import Grounder
from embodied_ros.metrics import GroundingQuery, evaluate_grounding, query_from_result

UNIT = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0], dtype=float)


def _shifted(d: float) -> np.ndarray:
    b = UNIT.copy()
    b[0] = d
    return b


def test_known_ious_and_distances() -> None:
    # Unit cubes shifted along x by d: IoU = (1 - d) / (1 + d); centre distance = d.
    queries = [
        GroundingQuery(_shifted(0.0), UNIT, unique=True),  # IoU 1, dist 0
        GroundingQuery(_shifted(0.2), UNIT, unique=True),  # IoU 0.667, dist 0.2
        GroundingQuery(_shifted(0.5), UNIT, relation_types=("support",)),  # IoU 0.333, dist 0.5
        GroundingQuery(_shifted(0.7), UNIT, relation_types=("support", "horizontal")),  # IoU 0.176, dist 0.7
        GroundingQuery(None, UNIT, relation_types=("between",)),  # no answer: a miss everywhere
    ]
    r = evaluate_grounding(queries)
    assert r.overall.n == 5
    assert r.overall.acc_25 == pytest.approx(3 / 5) and r.overall.acc_50 == pytest.approx(2 / 5)
    assert r.overall.dist_10 == pytest.approx(1 / 5)
    assert r.overall.dist_30 == pytest.approx(2 / 5)
    assert r.overall.dist_50 == pytest.approx(2 / 5)  # 0.5 is not < 0.5
    assert r.overall.answered == pytest.approx(4 / 5)
    assert (r.unique.n, r.unique.acc_50) == (2, 1.0)
    assert r.multiple.n == 3 and r.multiple.acc_25 == pytest.approx(1 / 3)
    assert set(r.by_relation) == {"support", "horizontal", "between", "none"}
    assert r.by_relation["support"].n == 2 and r.by_relation["support"].acc_25 == pytest.approx(0.5)
    assert r.by_relation["between"].acc_25 == 0.0 and r.by_relation["none"].n == 2
    assert "Acc@0.25" in r.table() and len(r.table().splitlines()) == 7


def test_iou_threshold_and_rotation() -> None:
    # Shift 0.33 -> IoU 0.504 (a hit at 0.5), 0.34 -> 0.493 (a miss).
    assert evaluate_grounding([GroundingQuery(_shifted(0.33), UNIT)]).overall.acc_50 == 1.0
    assert evaluate_grounding([GroundingQuery(_shifted(0.34), UNIT)]).overall.acc_50 == 0.0
    rotated = UNIT.copy()
    rotated[6] = math.pi / 4
    r = evaluate_grounding([GroundingQuery(rotated, UNIT)])
    assert r.overall.dist_10 == 1.0 and r.overall.acc_50 == 1.0  # IoU = 0.707 / 1.293 = 0.547
    stretched = np.array([0, 0, 0, 1, 1, 2.5, 0, 0, 0.0])
    assert evaluate_grounding([GroundingQuery(stretched, UNIT)]).overall.acc_50 == 0.0  # IoU 0.4


def test_empty_and_splits_without_queries() -> None:
    r = evaluate_grounding([])
    assert r.overall.n == 0 and math.isnan(r.overall.acc_25) and r.by_relation == {}
    r = evaluate_grounding([GroundingQuery(UNIT, UNIT, unique=True)])
    assert r.multiple.n == 0 and math.isnan(r.multiple.acc_25) and r.unique.acc_50 == 1.0


def test_queries_from_grounder_results() -> None:
    snap = kitchen()
    g = Grounder(load_encoder=False)
    cases = [("the cup near the monitor", 1), ("the sofa", 7), ("the giraffe", 3), ("the cup on the table", 2)]
    queries = [query_from_result(g.ground(p, snap), snap.boxes[i], snap.class_names, snap.class_names[i])
               for p, i in cases]
    assert [q.unique for q in queries] == [False, True, False, False]
    assert queries[0].relation_types == ("horizontal",) and queries[2].prediction is None
    r = evaluate_grounding(queries)
    assert r.overall.acc_50 == pytest.approx(0.5)  # the cup near the monitor, the sofa; the giraffe and
    assert r.unique.acc_50 == 1.0  # "cup on the table" (2 such cups: #1 is picked, #2 was meant) miss
