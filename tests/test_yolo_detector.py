"""YoloDetector2D on real data: ONNX export, ORT vs PyTorch parity, plausible COCO classes on redkitchen."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from PIL import Image

from embodied_ros.errors import InputError, ModelError
from embodied_ros.network.export_command import max_differences
from embodied_ros.network.onnx_export import check_tensorrt_compatible
from embodied_ros.network.registry import runtime_config
from embodied_ros.network.weights import KNOWN_MODELS
from embodied_ros.network.yolo_detector import Backend, YoloDetector2D, darknet_resize, preprocess
from embodied_ros.runtime import InferenceBackend
from embodied_ros.runtime.config import RuntimeConfig
from embodied_ros.runtime.onnxruntime_backend import OnnxRuntimeBackend
from embodied_ros.runtime.tensorrt_backend import fp16_onnx, tensorrt_status

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
YOLO = DATA / "yolo_fastest"
KITCHEN = DATA / "redkitchen"
needs_data = pytest.mark.skipif(
    not (YOLO.is_dir() and KITCHEN.is_dir()), reason=f"Yolo-Fastest files or redkitchen frames not found in {DATA}"
)
XL = KNOWN_MODELS["yolo-fastest-1.1-xl"]
# What the scene holds (DATA/README.md), spelled as in coco.names.
KITCHEN_CLASSES = {"chair", "cup", "tvmonitor", "keyboard", "book", "diningtable"}
# Parity tolerances on the raw head logits (magnitudes up to ~20), as max |a - b| and that over max |b|:
# ONNX Runtime vs PyTorch, both float32 on CPU, differ in summation order only.
ORT_TORCH_ABS, ORT_TORCH_REL = 1e-4, 1e-5
# The fp16 graph (what TensorRT 11 builds for --fp16) vs float32: half precision through ~80 layers.
FP16_REL = 2e-2


def _frame(index: int) -> np.ndarray:
    return np.asarray(Image.open(KITCHEN / f"frame-{index:06d}.color.jpg").convert("RGB"))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def ort_detector(cache: Path) -> YoloDetector2D:
    return YoloDetector2D.from_known(search_dirs=[YOLO], cache=cache,
                                     runtime=RuntimeConfig(backend="onnxruntime", intra_op_threads=2))


@pytest.fixture(scope="module")
def torch_detector(cache: Path) -> YoloDetector2D:
    return YoloDetector2D.from_known(search_dirs=[YOLO], cache=cache, runtime=RuntimeConfig(backend="torch"))


@needs_data
def test_exported_graph_is_valid_and_tensorrt_friendly(ort_detector: YoloDetector2D, cache: Path) -> None:
    path = ort_detector.onnx_path
    assert path is not None and path.parent == cache / "onnx" and XL.weights.sha256[:16] in path.name
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 10
    (image,) = model.graph.input
    assert image.name == "image" and image.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    assert [d.dim_value for d in image.type.tensor_type.shape.dim] == [1, 3, 320, 320]
    shapes = {o.name: [d.dim_value for d in o.type.tensor_type.shape.dim] for o in model.graph.output}
    assert shapes == {"head_0": [1, 255, 10, 10], "head_1": [1, 255, 20, 20]}
    assert check_tensorrt_compatible(path) == []
    # A second detector reuses the cached export rather than writing it again.
    stamp = path.stat().st_mtime_ns
    again = YoloDetector2D.from_known(search_dirs=[YOLO], cache=cache)
    assert again.onnx_path == path and path.stat().st_mtime_ns == stamp


@needs_data
@pytest.mark.parametrize("index", [0, 540])
def test_onnxruntime_matches_torch(ort_detector: YoloDetector2D, torch_detector: YoloDetector2D, index: int) -> None:
    image = _frame(index)
    batch = preprocess(image, ort_detector.input_size)
    heads_ort, heads_torch = ort_detector.infer(batch), torch_detector.infer(batch)
    for a, b in zip(heads_ort, heads_torch, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=ORT_TORCH_ABS)
    abs_diff, rel_diff = max_differences(dict(enumerate(heads_ort)), dict(enumerate(heads_torch)))
    assert abs_diff <= ORT_TORCH_ABS and rel_diff <= ORT_TORCH_REL
    d_ort, d_torch = ort_detector.detect(image), torch_detector.detect(image)
    assert len(d_ort) > 0
    np.testing.assert_array_equal(d_ort.labels, d_torch.labels)
    np.testing.assert_allclose(d_ort.boxes_xyxy, d_torch.boxes_xyxy, atol=1e-2)  # pixels
    np.testing.assert_allclose(d_ort.scores, d_torch.scores, atol=1e-4)


@needs_data
def test_xl_finds_kitchen_objects(ort_detector: YoloDetector2D) -> None:
    found: list[set[str]] = []
    for index in (0, 270, 450, 540, 810, 990):
        dets = ort_detector.detect(_frame(index))
        assert np.all(dets.scores >= 0.25) and np.all(np.diff(dets.scores) <= 0)
        assert np.all(dets.boxes_xyxy[:, 2:] > dets.boxes_xyxy[:, :2])
        assert np.all(dets.boxes_xyxy[:, 2] <= 640) and np.all(dets.boxes_xyxy[:, 3] <= 480)
        found.append({dets.class_names[i] for i in dets.labels})
    seen = set().union(*found) & KITCHEN_CLASSES
    assert len(seen) >= 4, f"only {seen} of {KITCHEN_CLASSES} seen across frames: {found}"
    assert sum(bool(f & KITCHEN_CLASSES) for f in found) >= 5
    assert "person" not in set().union(*found)  # nobody is in the recording


def _darknet_resize_loops(im: np.ndarray, w: int, h: int) -> np.ndarray:
    """Darknet's resize_image, loop for loop in float32; im (H, W, C) float32."""
    f32 = np.float32
    src_h, src_w, c = im.shape
    w_scale, h_scale = f32(src_w - 1) / f32(w - 1), f32(src_h - 1) / f32(h - 1)
    part = np.zeros((src_h, w, c), f32)
    for r in range(src_h):
        for col in range(w):
            if col == w - 1 or src_w == 1:
                part[r, col] = im[r, src_w - 1]
            else:
                sx = f32(col) * w_scale
                ix = int(sx)
                dx = sx - f32(ix)
                part[r, col] = (f32(1) - dx) * im[r, ix] + dx * im[r, ix + 1]
    out = np.zeros((h, w, c), f32)
    for r in range(h):
        sy = f32(r) * h_scale
        iy = int(sy)
        dy = sy - f32(iy)
        out[r] = (f32(1) - dy) * part[iy]
        if r == h - 1 or src_h == 1:
            continue
        out[r] += dy * part[iy + 1]
    return out


@pytest.mark.parametrize(("src", "dst"), [((9, 7), (5, 4)), ((3, 4), (8, 6)), ((1280, 720), (32, 32))])
def test_darknet_resize_matches_the_c_loops(src: tuple[int, int], dst: tuple[int, int]) -> None:
    image = np.random.default_rng(2).integers(0, 256, size=(src[1], src[0], 3), dtype=np.uint8)
    expected = _darknet_resize_loops(image.astype(np.float32) / np.float32(255), *dst)
    np.testing.assert_allclose(darknet_resize(image, *dst), expected, rtol=1e-6, atol=1e-7)


def test_preprocess_plain_and_letterbox() -> None:
    image = np.full((480, 640, 3), 255, np.uint8)
    image[..., 0] = 0  # a cyan image: R = 0, G = B = 1
    plain = preprocess(image, (320, 320))
    assert plain.shape == (1, 3, 320, 320) and plain.dtype == np.float32
    np.testing.assert_array_equal(plain[0, :, 100, 100], [0.0, 1.0, 1.0])  # RGB order, / 255
    boxed = preprocess(image, (320, 320), letterbox=True)
    np.testing.assert_array_equal(boxed[0, :, :40], 0.5)  # 640x480 -> 320x240, 40-row grey bands
    np.testing.assert_array_equal(boxed[0, :, 280:], 0.5)
    np.testing.assert_array_equal(boxed[0, :, 40:279, 5], np.repeat([[0.0], [1.0], [1.0]], 239, axis=1))
    with pytest.raises(InputError, match="uint8 RGB"):
        preprocess(image[..., 0], (320, 320))


@needs_data
def test_detector_file_errors(tmp_path: Path) -> None:
    cfg, wts, names = (YOLO / f.filename for f in XL.files)
    with pytest.raises(ModelError, match="ONNX model not found"):
        YoloDetector2D(cfg, wts, names, onnx_path=tmp_path / "absent.onnx")
    (tmp_path / "corrupt.onnx").write_bytes(b"\x08\x07garbage" * 10)
    with pytest.raises(ModelError, match="cannot load"):
        YoloDetector2D(cfg, wts, names, onnx_path=tmp_path / "corrupt.onnx")
    (tmp_path / "few.names").write_text("cup\nchair\n")
    with pytest.raises(ModelError, match="2 names, but the cfg's heads have \\[80\\] classes"):
        YoloDetector2D(cfg, wts, tmp_path / "few.names", runtime=RuntimeConfig(backend=Backend.TORCH))
    with pytest.raises(ModelError, match="download=True"):
        YoloDetector2D.from_known(search_dirs=[tmp_path], cache=tmp_path)


@needs_data
def test_fp16_graph_matches_float32_on_real_frames(ort_detector: YoloDetector2D, tmp_path: Path) -> None:
    """The graph a strongly typed TensorRT (11) builds for fp16, run here by ONNX Runtime on real frames."""
    half_path = tmp_path / "yolo.fp16.onnx"
    onnx.save(fp16_onnx(onnx.load(str(ort_detector.onnx_path))), str(half_path))
    half = OnnxRuntimeBackend(half_path, contract=ort_detector.contract, intra_op_threads=2)
    for index in (0, 540):
        batch = preprocess(_frame(index), ort_detector.input_size)
        ref = ort_detector.runtime.run({"image": batch})
        abs_diff, rel_diff = max_differences(half.run({"image": batch}), ref)
        assert 0 < rel_diff <= FP16_REL, (abs_diff, rel_diff)


@needs_data
def test_detector_runs_on_the_runtime_backends(ort_detector: YoloDetector2D, torch_detector: YoloDetector2D,
                                               cache: Path) -> None:
    assert ort_detector.backend is Backend.ONNXRUNTIME and torch_detector.backend is Backend.TORCH
    assert isinstance(ort_detector.runtime, InferenceBackend) and isinstance(torch_detector.runtime, InferenceBackend)
    assert ort_detector.contract == torch_detector.contract and ort_detector.contract.input_names == ("image",)
    assert torch_detector.onnx_path is None  # the torch backend never exports
    problem = tensorrt_status()
    auto = YoloDetector2D.from_known(search_dirs=[YOLO], cache=cache, runtime=RuntimeConfig())
    assert auto.backend is (Backend.TENSORRT if problem is None else Backend.ONNXRUNTIME)
    if problem is None:
        return
    with pytest.raises(ModelError, match="backend tensorrt asked for, but .*allow the fallback"):
        YoloDetector2D.from_known(search_dirs=[YOLO], cache=cache, runtime=RuntimeConfig(backend="tensorrt"))
    fallback = YoloDetector2D.from_known(search_dirs=[YOLO], cache=cache,
                                         runtime=RuntimeConfig(backend="tensorrt", allow_fallback=True))
    assert fallback.backend is Backend.ONNXRUNTIME
    with pytest.raises(ModelError, match="backend 'cuda' unknown"):
        runtime_config("cuda")  # the registry's one conversion of a backend name
