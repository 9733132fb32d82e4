"""The detector ensemble: weighted box fusion on known cases, and YOLOX-Nano + NanoDet-Plus fused on a
real frame through the registry, with vocabularies matched by name."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from embodied_ros.geometry.iou import box_iou_2d
from embodied_ros.network.ensemble import EnsembleDetector2D, weighted_box_fusion

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports go to a per-session cache, not the user's home."""
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def test_image_box_iou_known_values() -> None:
    a = np.array([[0.0, 0.0, 10.0, 10.0]])
    b = np.array([[0.0, 0.0, 10.0, 10.0], [5.0, 0.0, 15.0, 10.0], [20.0, 20.0, 30.0, 30.0]])
    np.testing.assert_allclose(box_iou_2d(a, b), [[1.0, 50 / 150, 0.0]])


def test_weighted_box_fusion_known_cases() -> None:
    boxes = np.array([
        [100.0, 100.0, 200.0, 200.0],  # model A, class 0
        [110.0, 100.0, 210.0, 200.0],  # model B, class 0: IoU 0.82 with the first -> fused
        [100.0, 100.0, 200.0, 200.0],  # model B, class 1: another class, never fused with class 0
        [400.0, 300.0, 500.0, 400.0],  # model A only, class 0
    ])
    scores = np.array([0.9, 0.3, 0.5, 0.6])
    labels = np.array([0, 0, 1, 0])
    fused, fused_scores, fused_labels = weighted_box_fusion(boxes, scores, labels, n_models=2)
    assert fused_labels.tolist() == [0, 0, 1] and len(fused) == 3
    # Both models saw it: the score-weighted mean box (x0 = (0.9 * 100 + 0.3 * 110) / 1.2), the mean score.
    np.testing.assert_allclose(fused[0], [102.5, 100.0, 202.5, 200.0])
    # Seen by one of two models: half its score.
    np.testing.assert_allclose(fused_scores, [0.6, 0.3, 0.25])
    np.testing.assert_allclose(fused[1], boxes[3])
    # Below the clustering IoU they stay apart.
    apart = weighted_box_fusion(boxes[:2], scores[:2], labels[:2], n_models=2, iou_threshold=0.9)
    assert len(apart[0]) == 2
    empty = weighted_box_fusion(np.zeros((0, 4)), np.zeros(0), np.zeros(0, np.int64), 2)
    assert empty[0].shape == (0, 4)


@pytest.mark.skipif(not ((DATA / "yolox_nano").is_dir() and (DATA / "nanodet_plus").is_dir() and KITCHEN.is_dir()),
                    reason=f"yolox_nano, nanodet_plus or redkitchen not in {DATA}")
def test_ensemble_on_a_real_frame_with_vocabularies_matched_by_name(tmp_path: Path) -> None:
    from embodied_ros.network.nanodet_detector import NanoDetDetector2D
    from embodied_ros.network.registry import build_perceptor

    perceptor = build_perceptor("ensemble-yolox-nanodet", weights=DATA, backend="onnxruntime")
    ensemble = perceptor.detector
    assert isinstance(ensemble, EnsembleDetector2D) and perceptor.name == "ensemble-yolox-nanodet+lifting"
    yolox, nanodet = ensemble.detectors
    assert ensemble.class_names == yolox.class_names == nanodet.class_names
    image = np.asarray(Image.open(KITCHEN / "frame-000000.color.jpg").convert("RGB"))
    dets = ensemble.detect(image)
    a, b = yolox.detect(image), nanodet.detect(image)
    assert 0 < len(dets) <= len(a) + len(b) and np.all(np.diff(dets.scores) <= 0)
    strong = {dets.class_names[k] for k in dets.labels[dets.scores > 0.5]}
    assert {"diningtable", "cup"} <= strong, strong  # both models see the table and the mug
    # A member whose names file spells the classes otherwise ("Dining Table") is matched by name.
    names = [n.title() if n != "diningtable" else "Dining Table" for n in nanodet.class_names]
    (tmp_path / "titled.names").write_text("\n".join(names))
    folder = DATA / "nanodet_plus"
    titled = NanoDetDetector2D(folder / "nanodet-plus-m_416.param", folder / "nanodet-plus-m_416.bin",
                               tmp_path / "titled.names", score_threshold=nanodet.score_threshold, cache=tmp_path)
    mixed = EnsembleDetector2D([yolox, titled], score_threshold=ensemble.score_threshold)
    assert mixed.class_names == yolox.class_names  # nothing new: every title-case name maps onto one
    fused = mixed.detect(image)
    np.testing.assert_array_equal(fused.labels, dets.labels)
    np.testing.assert_allclose(fused.boxes_xyxy, dets.boxes_xyxy)
    with pytest.raises(ValueError, match="two or more"):
        EnsembleDetector2D([yolox])
    # Fused by the memory instead: every member's box, with its own score, best first.
    by_map = build_perceptor("ensemble-yolox-nanodet-map", weights=DATA, backend="onnxruntime").detector
    assert by_map.method == "memory" and by_map.name == ensemble.name
    passed = by_map.detect(image)
    assert len(passed) == len(a) + len(b) and np.all(np.diff(passed.scores) <= 0)
    mine = sorted(zip(np.concatenate([a.scores, b.scores]).round(6), np.concatenate([a.labels, b.labels]), strict=True))
    assert sorted(zip(passed.scores.round(6), passed.labels, strict=True)) == mine
