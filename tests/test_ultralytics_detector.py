"""Detectors with your own vocabulary (issue 30): an Ultralytics-layout export runs through the registry,
lifting, the scene memory and grounding unchanged. The ONNX model is built here (a small torch module whose
head says where its classes are, exported to ONNX with the class names in its metadata, as Ultralytics
writes them); the real YOLOv8n TFLite export in ../shared/data runs on real frames when LiteRT is installed."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from rendered_scenes import H, W, look_at, project_box, render_frame

from embodied_ros.errors import ModelError
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.grounding import Grounder
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.network.image_decode import letterbox
from embodied_ros.network.registry import build_perceptor
from embodied_ros.network.ultralytics_detector import UltralyticsDetector2D, decode_ultralytics, names_from_metadata

NAMES = ("game controller", "pc tower", "food box")
NET = 96  # input side of the built model: anchors of strides 8, 16, 32
ANCHORS = (NET // 8) ** 2 + (NET // 16) ** 2 + (NET // 32) ** 2
# The scene: a 0.4 x 0.2 x 0.45 m tower on the floor, seen from 2 m.
TOWER = np.array([0.0, 0.0, 0.225, 0.2, 0.4, 0.45, 0.3, 0.0, 0.0])
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


class _Head(torch.nn.Module):
    """An Ultralytics-layout head that finds one thing: a box (input pixels) whose class score is the
    input's mean brightness in that box (so the preprocessing is on the path), every other anchor empty."""

    def __init__(self, box_xywh: np.ndarray, label: int) -> None:
        super().__init__()
        self.register_buffer("box", torch.tensor(box_xywh, dtype=torch.float32))
        x, y, w, h = (float(v) for v in box_xywh)
        self.rows = slice(max(int(y - h / 2), 0), int(math.ceil(y + h / 2)))
        self.cols = slice(max(int(x - w / 2), 0), int(math.ceil(x + w / 2)))
        self.label = label

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        score = images[0, :, self.rows, self.cols].mean().reshape(1)
        scores = torch.cat([torch.zeros(self.label), score, torch.zeros(len(NAMES) - 1 - self.label)])
        column = torch.cat([self.box, scores]).reshape(1, 4 + len(NAMES), 1)  # anchor 7 holds it, the rest empty
        return torch.cat([torch.zeros(1, 4 + len(NAMES), 7), column, torch.zeros(1, 4 + len(NAMES), ANCHORS - 8)], 2)


def _export(path: Path, box_xywh: np.ndarray, label: int, names: tuple[str, ...] | None = NAMES) -> Path:
    torch.onnx.export(_Head(box_xywh, label), (torch.zeros(1, 3, NET, NET),), str(path), input_names=["images"],
                      output_names=["output0"], opset_version=17, dynamo=False)
    model = onnx.load(str(path))
    if names is not None:  # as Ultralytics writes them: a Python dict literal
        model.metadata_props.add(key="names", value=str(dict(enumerate(names))))
    onnx.save(model, str(path))
    return path


def _input_box(image_box: np.ndarray) -> np.ndarray:
    """The (4,) xywh in the letterboxed NET x NET input of a (4,) xyxy image box."""
    g = letterbox((W, H), (NET, NET))
    x0, y0 = image_box[0] * g.scale[0] + g.offset[0], image_box[1] * g.scale[1] + g.offset[1]
    x1, y1 = image_box[2] * g.scale[0] + g.offset[0], image_box[3] * g.scale[1] + g.offset[1]
    return np.array([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0])


def test_the_head_decodes_to_image_boxes_and_the_names_come_from_the_metadata(tmp_path: Path) -> None:
    image_box = np.array([200.0, 120.0, 360.0, 300.0])
    path = _export(tmp_path / "head.onnx", _input_box(image_box), 2)
    detector = UltralyticsDetector2D(path, score_threshold=0.05)
    assert detector.class_names == NAMES and detector.input_size == (NET, NET)
    image = np.full((H, W, 3), 200, np.uint8)
    found = detector.detect(image)
    assert len(found) == 1 and found.class_names[found.labels[0]] == "food box"
    np.testing.assert_allclose(found.boxes_xyxy[0], image_box, atol=1.0)  # back through the letterbox
    assert found.scores[0] == pytest.approx(200 / 255, abs=0.01)  # RGB in [0, 1]
    assert len(detector.detect(np.zeros((H, W, 3), np.uint8))) == 0  # a dark box scores 0
    # Normalised coordinates (TFLite exports) decode to the same boxes.
    raw = np.zeros((1, 4 + 3, 5), np.float32)
    raw[0, :4, 1] = [0.5, 0.25, 0.2, 0.1]
    raw[0, 5, 1] = 0.9
    boxes, scores, labels = decode_ultralytics(raw, (640, 640), 0.1, 3)
    np.testing.assert_allclose(boxes[0], [256, 128, 384, 192], atol=1e-3)
    assert labels.tolist() == [1] and scores[0] == pytest.approx(0.9)


def test_names_files_and_layouts_that_do_not_fit_are_refused(tmp_path: Path) -> None:
    path = _export(tmp_path / "bare.onnx", np.array([48.0, 48.0, 10.0, 10.0]), 0, names=None)
    with pytest.raises(ModelError, match="no class names"):
        UltralyticsDetector2D(path)
    (tmp_path / "bare.names").write_text("a\nb\nc\n")
    assert build_perceptor("ultralytics-onnx", weights=path, backend="onnxruntime").class_names == ("a", "b", "c")
    (tmp_path / "two.names").write_text("a\nb\n")
    with pytest.raises(ModelError, match="2 class names"):
        UltralyticsDetector2D(path, tmp_path / "two.names")
    assert names_from_metadata("{0: 'person', 1: 'game controller'}") == ("person", "game controller")
    with pytest.raises(ModelError):
        names_from_metadata("{1: 'a'}")
    with pytest.raises(ModelError, match="needs --weights"):
        build_perceptor("ultralytics-onnx")


def test_your_own_classes_go_through_lifting_the_map_and_grounding(tmp_path: Path) -> None:
    """A 'pc tower' that no COCO detector names: the user's export names it, lifting puts it in 3D, the
    memory keeps it and grounding answers "the pc tower" with it."""
    memory = SceneMemory()
    for k, eye in enumerate(([1.6, -1.2, 1.3], [1.7, -1.0, 1.3], [1.5, -1.4, 1.35])):
        T = look_at(np.array(eye), TOWER[:3])
        head = _export(tmp_path / f"view{k}.onnx", _input_box(project_box(T, TOWER)), 1)  # the view's detector
        perceptor = build_perceptor("ultralytics-onnx", weights=head, backend="onnxruntime")
        perception = perceptor.perceive(render_frame(T, [TOWER], index=k))
        assert perception.detections.names == ["pc tower"]
        memory.update(perception)
    towers = [o for o in memory.published_objects() if o.class_name == "pc tower"]
    assert len(towers) == 1 and box_iou_3d(towers[0].box[None], TOWER[None])[0, 0] > 0.5
    answer = Grounder(load_encoder=False).ground("the pc tower", memory.snapshot(), vocabulary=memory.vocabulary)
    assert answer.success and answer.best.object.id == towers[0].id, answer.message


@pytest.mark.skipif(importlib.util.find_spec("ai_edge_litert") is None,
                    reason="LiteRT is not installed (optional: pip install ai-edge-litert)")
@pytest.mark.skipif(not (DATA / "yolov8n_int8" / "yolov8n_int8.tflite").is_file(),
                    reason="../shared/data/yolov8n_int8 (a real Ultralytics export) is not here")
def test_a_real_ultralytics_export_finds_the_kitchen_on_real_frames() -> None:
    """YOLOv8n (AGPL-3.0 weights: tests and benchmarks only) on redkitchen frames: the table, chairs and cups."""
    from embodied_ros.recordings import open_source

    perceptor = build_perceptor("ultralytics-onnx", weights=DATA / "yolov8n_int8")
    assert len(perceptor.class_names) == 80
    source = open_source(DATA / "redkitchen")
    found: set[str] = set()
    with source:
        for frame in source.frames(stride=30, max_frames=4):
            perception = perceptor.perceive(frame)
            found |= {n for n, s in zip(perception.detections.names, perception.detections.scores, strict=True)
                      if s > 0.3}
    assert {"diningtable", "chair", "cup"} <= found, found
