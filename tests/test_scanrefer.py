"""ScanRefer submission export: the format, corners that match the box, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from embodied_ros.errors import InputError
from embodied_ros.geometry.boxes import box_corners
from embodied_ros.outputs.scanrefer import (
    ScanReferPrediction,
    read_scanrefer_predictions,
    write_scanrefer_predictions,
)


def test_pred_json_has_the_scanrefer_form(tmp_path: Path) -> None:
    box = np.array([1.0, 2.0, 0.5, 0.4, 0.6, 1.0, 0.0, 0.0, 0.0])
    preds = [ScanReferPrediction("scene0011_00", 7, 0, box, unique_multiple=1, others=0),
             ScanReferPrediction("scene0011_00", "7", "1", box)]
    path = tmp_path / "pred.json"
    assert write_scanrefer_predictions(path, preds) == 2
    data = json.loads(path.read_text())
    assert isinstance(data, list) and len(data) == 2
    assert set(data[0]) == {"scene_id", "object_id", "ann_id", "bbox", "unique_multiple", "others"}
    assert set(data[1]) == {"scene_id", "object_id", "ann_id", "bbox"}
    assert (data[0]["scene_id"], data[0]["object_id"], data[0]["ann_id"]) == ("scene0011_00", "7", "0")
    corners = np.array(data[0]["bbox"])
    assert corners.shape == (8, 3)
    # The axis-aligned extent of the corners is the box (what ScanRefer's evaluator uses).
    np.testing.assert_allclose(corners.min(axis=0), [0.8, 1.7, 0.0])
    np.testing.assert_allclose(corners.max(axis=0), [1.2, 2.3, 1.0])
    assert read_scanrefer_predictions(path) == data


def test_rotated_box_corners_are_the_box_corners(tmp_path: Path) -> None:
    box = np.array([0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.3, 0.1, -0.2])
    path = tmp_path / "pred.json"
    write_scanrefer_predictions(path, [ScanReferPrediction("scene0000_00", 1, 2, box)])
    np.testing.assert_allclose(np.array(json.loads(path.read_text())[0]["bbox"]), box_corners(box)[0])


def test_duplicates_non_finite_and_bad_files_are_refused(tmp_path: Path) -> None:
    box = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0.0])
    with pytest.raises(InputError, match="duplicate"):
        write_scanrefer_predictions(tmp_path / "p.json", [ScanReferPrediction("s", 1, 0, box)] * 2)
    with pytest.raises(InputError, match="non-finite"):
        ScanReferPrediction("s", 1, 0, np.full(9, np.nan))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"scene_id": "s", "object_id": 1, "ann_id": "0", "bbox": [[0, 0, 0]] * 8}]))
    with pytest.raises(InputError, match="string"):
        read_scanrefer_predictions(bad)
    bad.write_text(json.dumps([{"scene_id": "s", "object_id": "1", "ann_id": "0", "bbox": [[0, 0, 0]] * 7}]))
    with pytest.raises(InputError, match="8x3"):
        read_scanrefer_predictions(bad)
