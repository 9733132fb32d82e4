"""YOLOX-Nano and NanoDet-Plus on real redkitchen frames: known objects found, backends agree, graphs
TensorRT-friendly, and both built through the registry with their own class vocabulary."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from PIL import Image

from embodied_ros.errors import ModelError
from embodied_ros.network.detector2d import NetworkDetector2D
from embodied_ros.network.nanodet_detector import NanoDetDetector2D
from embodied_ros.network.onnx_export import check_tensorrt_compatible
from embodied_ros.network.registry import build_detector, build_perceptor, runtime_config
from embodied_ros.network.weights import resolve_known_model
from embodied_ros.network.yolox_detector import YoloxDetector2D
from embodied_ros.runtime.config import RuntimeConfig
from embodied_ros.runtime.contract import Backend
from embodied_ros.runtime.tensorrt_backend import tensorrt_status

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"
FOLDERS = {"yolox-nano": DATA / "yolox_nano", "nanodet-plus-m-416": DATA / "nanodet_plus"}
MODELS = pytest.mark.parametrize("name", sorted(FOLDERS))
# The data README: on frames 0/300/600/900 at score 0.3 both find the table, chairs, both cups, a
# monitor and the magazines ("book"); nobody is in the room.
FRAMES = (0, 300, 600, 900)
EXPECTED = {"diningtable", "chair", "cup", "tvmonitor", "book"}
# The white mug on the table in frame 0 (colour pixels, checked on the frame by eye).
MUG_FRAME_0 = (366.0, 163.0, 402.0, 201.0)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports go to a per-session cache, not the user's home."""
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _frame(index: int) -> np.ndarray:
    return np.asarray(Image.open(KITCHEN / f"frame-{index:06d}.color.jpg").convert("RGB"))


def _needs(name: str) -> None:
    if not (FOLDERS[name].is_dir() and KITCHEN.is_dir()):
        pytest.skip(f"{name}'s files or the redkitchen frames are not in {DATA}")


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _detector(name: str, cache: Path, backend: str = "onnxruntime", allow_fallback: bool = False) -> NetworkDetector2D:
    _needs(name)
    files = resolve_known_model(name, search_dirs=[FOLDERS[name]])
    runtime = replace(runtime_config(backend, allow_fallback), intra_op_threads=2)  # the registry's conversion
    return build_detector(files, runtime, cache=cache, score_threshold=0.3)


def _iou(a, b) -> float:
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union


@MODELS
def test_finds_the_kitchen_objects_on_the_readme_frames(name: str, cache: Path) -> None:
    detector = _detector(name, cache)
    found, total = set(), 0
    for index in FRAMES:
        dets = detector.detect(_frame(index))
        assert np.all(dets.scores >= 0.3) and np.all(np.diff(dets.scores) <= 0)
        assert np.all(dets.boxes_xyxy[:, 2:] > dets.boxes_xyxy[:, :2])
        assert np.all(dets.boxes_xyxy[:, [0, 2]] <= 640) and np.all(dets.boxes_xyxy[:, [1, 3]] <= 480)
        names = {dets.class_names[i] for i in dets.labels}
        assert names & {"chair", "diningtable"}, f"frame {index}: {names}"
        found |= names
        total += len(dets)
        if index == 0:  # the white mug, where it is
            cups = dets.boxes_xyxy[dets.labels == dets.class_names.index("cup")]
            assert max(_iou(c, MUG_FRAME_0) for c in cups) > 0.7
    assert EXPECTED <= found, f"{name} found {found}"
    assert "person" not in found
    assert 18 <= total <= 45, total  # README: about 22 right over the four frames


@MODELS
def test_onnxruntime_and_torch_agree(name: str, cache: Path) -> None:
    ort, torch_ = _detector(name, cache), _detector(name, cache, backend="torch")
    assert ort.backend is Backend.ONNXRUNTIME and torch_.backend is Backend.TORCH
    image = _frame(300)
    batch, _ = ort.preprocess(image)
    (a,), (b,) = ort.infer(batch), torch_.infer(batch)
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=5e-4)
    d_ort, d_torch = ort.detect(image), torch_.detect(image)
    assert len(d_ort) > 3
    np.testing.assert_array_equal(d_ort.labels, d_torch.labels)
    np.testing.assert_allclose(d_ort.boxes_xyxy, d_torch.boxes_xyxy, atol=0.05)


@MODELS
def test_graphs_pass_the_tensorrt_check(name: str, cache: Path, tmp_path: Path) -> None:
    detector = _detector(name, cache)
    assert detector.onnx_path is not None and check_tensorrt_compatible(detector.onnx_path) == []
    model = onnx.load(str(detector.onnx_path))
    (image,) = model.graph.input
    assert [d.dim_value for d in image.type.tensor_type.shape.dim] == [1, 3, 416, 416]
    if name == "yolox-nano":  # used as published
        assert detector.onnx_path == FOLDERS[name] / "yolox_nano.onnx"
    else:  # our export: the IR version ONNX Runtime and TensorRT 10 accept
        assert detector.onnx_path.parent == cache / "onnx" and model.ir_version == 10
    exported = detector.export(tmp_path / "again.onnx")  # through the torch reading, as `export` does
    assert check_tensorrt_compatible(exported) == []


@MODELS
def test_registry_builds_a_lifted_perceptor_with_the_models_vocabulary(name: str, tmp_path: Path) -> None:
    _needs(name)
    perceptor = build_perceptor(name, weights=FOLDERS[name], backend="onnxruntime")
    names = tuple(s.strip() for s in (FOLDERS[name] / "coco.names").read_text().splitlines() if s.strip())
    assert perceptor.name == f"{name}+lifting" and perceptor.class_names == names
    assert isinstance(perceptor.detector, YoloxDetector2D if name == "yolox-nano" else NanoDetDetector2D)
    # A names file that does not fit the network's outputs is refused.
    for f in FOLDERS[name].iterdir():
        (tmp_path / f.name).symlink_to(f)
    few = tmp_path / "few.names"
    few.write_text("\n".join(names[:79]))
    files = resolve_known_model(name, search_dirs=[FOLDERS[name]])
    with pytest.raises(ModelError, match="79"):
        build_detector(files.__class__(files.graph, files.weights, few, files.family),
                       RuntimeConfig(backend="onnxruntime"), cache=tmp_path / "cache")


@MODELS
def test_backend_choice(name: str, cache: Path) -> None:
    if tensorrt_status() is None:
        pytest.skip("TensorRT is usable here; the CPU fallbacks are what this test checks")
    assert _detector(name, cache, backend="auto").backend is Backend.ONNXRUNTIME
    with pytest.raises(ModelError, match="tensorrt"):
        _detector(name, cache, backend="tensorrt")
    assert _detector(name, cache, backend="tensorrt", allow_fallback=True).backend is Backend.ONNXRUNTIME
    with pytest.raises(ModelError, match="unknown"):
        _detector(name, cache, backend="cuda")
