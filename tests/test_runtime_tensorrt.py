"""TensorRT: engine cache keys and decisions and the fp16 graph (run anywhere); build, cache and parity (GPU only).

Tolerances, relative to the largest output magnitude (outputs are logits/features of O(1-20)):
- FP32 engine vs ONNX Runtime CPU: 5e-3 (TensorRT may use TF32 tensor cores for fp32 convolutions,
  10-bit mantissa);
- FP16 engine (or the fp16 graph TensorRT 11 builds) vs ONNX Runtime fp32: 2e-2.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from runtime_nets import CONTRACT, MultiViewExportable

from embodied_ros.errors import ModelError
from embodied_ros.network.export_command import export_network, max_differences, random_inputs
from embodied_ros.runtime.config import RuntimeConfig
from embodied_ros.runtime.engine_cache import (
    EngineKey,
    cache_decision,
    cached_engine_path,
    key_changes,
    read_key,
    write_engine,
)
from embodied_ros.runtime.onnxruntime_backend import OnnxRuntimeBackend
from embodied_ros.runtime.tensorrt_backend import TensorRTBackend, fp16_onnx, tensorrt_status

FP32_REL, FP16_REL = 5e-3, 2e-2
TRT_PROBLEM = tensorrt_status()
needs_trt = pytest.mark.skipif(TRT_PROBLEM is not None, reason=f"TensorRT tests need a GPU: {TRT_PROBLEM}")
DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
YOLO, KITCHEN = DATA / "yolo_fastest", DATA / "redkitchen"
KEY = EngineKey.from_profiles("ab" * 32, "10.7.0", "NVIDIA H100 80GB HBM3", "9.0", "fp32",
                              CONTRACT.profile_shapes())


@pytest.fixture(scope="module")
def onnx_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trt") / "multiview.onnx"
    export_network(MultiViewExportable(), path)
    return path


# -- the cache logic (pure: no TensorRT) ---------------------------------------------------------------


def test_engine_key_digest_covers_every_field() -> None:
    assert KEY.digest() == EngineKey.from_json(KEY.to_json()).digest()
    changed = [
        replace(KEY, onnx_sha256="cd" * 32),
        replace(KEY, tensorrt_version="11.0.0"),
        replace(KEY, gpu_name="Orin"),
        replace(KEY, compute_capability="8.7"),
        replace(KEY, precision="fp16"),
        replace(KEY, profiles=()),
    ]
    assert len({k.digest() for k in [KEY, *changed]}) == 7
    assert EngineKey.from_json(KEY.to_json()) == KEY
    with pytest.raises(ValueError, match="not an engine key"):
        EngineKey.from_json('{"onnx_sha256": "x"}')
    with pytest.raises(ValueError, match="precision"):
        replace(KEY, precision="int8")


def test_cache_hit_and_misses_say_what_changed(tmp_path: Path) -> None:
    path = cached_engine_path(tmp_path, "multiview", KEY)
    assert path.parent == tmp_path and path.name.startswith("multiview-fp32-") and path.suffix == ".engine"
    reuse, reason = cache_decision(path, KEY, search_dir=tmp_path)
    assert not reuse and reason == f"no cached engine {path.name}; building"
    write_engine(path, b"engine bytes", KEY)
    assert read_key(path) == KEY and path.read_bytes() == b"engine bytes"
    assert not list(tmp_path.glob(".*.part"))
    assert cache_decision(path, KEY) == (True, f"reusing {path.name} (TensorRT 10.7.0, NVIDIA H100 80GB HBM3)")
    # A new TensorRT or another GPU gets its own file; the log says what changed since the last build.
    for new, change in [(replace(KEY, tensorrt_version="10.8.0"), "TensorRT 10.7.0 -> 10.8.0"),
                        (replace(KEY, gpu_name="Orin", compute_capability="8.7"), "GPU NVIDIA H100 80GB HBM3 -> Orin")]:
        new_path = cached_engine_path(tmp_path, "multiview", new)
        assert new_path != path
        reuse, reason = cache_decision(new_path, new, search_dir=tmp_path)
        assert not reuse and change in reason and reason.endswith("since the last build); building")
    # An explicit engine file (--engine OUT.engine) built for another setup is rebuilt, not loaded.
    reuse, reason = cache_decision(path, replace(KEY, tensorrt_version="11.1.0"))
    assert not reuse and "built for another setup (TensorRT 10.7.0 -> 11.1.0); rebuilding" in reason
    Path(str(path) + ".json").write_text("{ not json")
    reuse, reason = cache_decision(path, KEY)
    assert not reuse and "no readable key" in reason and read_key(path) is None


def test_key_changes_lists_each_difference() -> None:
    new = replace(KEY, onnx_sha256="cd" * 32, precision="fp16")
    assert key_changes(KEY, new) == "ONNX graph abababababab -> cdcdcdcdcdcd, precision fp32 -> fp16"
    assert key_changes(KEY, KEY) == "same key"


def test_fp16_graph_keeps_float32_io_and_matches_within_fp16_tolerance(onnx_file: Path, tmp_path: Path) -> None:
    """What TensorRT 11 (strongly typed) builds when fp16 is asked for; ONNX Runtime runs it here."""
    half = fp16_onnx(onnx.load(str(onnx_file)))
    onnx.checker.check_model(half, full_check=True)  # also proves the nodes are topologically sorted
    assert half.ir_version == 10
    assert {vi.type.tensor_type.elem_type for vi in (*half.graph.input, *half.graph.output)} == {onnx.TensorProto.FLOAT}
    float_inits = {i.data_type for i in half.graph.initializer if i.data_type in (1, 10)}
    assert float_inits == {onnx.TensorProto.FLOAT16}
    path = tmp_path / "multiview.fp16.onnx"
    onnx.save(half, str(path))
    inputs = random_inputs(CONTRACT)
    ref = OnnxRuntimeBackend(onnx_file, contract=CONTRACT).run(inputs)
    got = OnnxRuntimeBackend(path, contract=CONTRACT).run(inputs)
    abs_diff, rel_diff = max_differences(got, ref)
    assert 0 < abs_diff and rel_diff <= FP16_REL  # differs (it is fp16), but within the stated tolerance


@pytest.mark.skipif(TRT_PROBLEM is None, reason="TensorRT is usable here")
def test_tensorrt_backend_without_tensorrt_says_why(onnx_file: Path) -> None:
    with pytest.raises(ModelError, match="TensorRT backend unavailable: " + re.escape(TRT_PROBLEM)):
        TensorRTBackend(onnx_file, contract=CONTRACT)


# -- on a GPU with TensorRT ------------------------------------------------------------------------------


@needs_trt
def test_build_cache_hit_and_rebuild_on_version_gpu_or_corruption(onnx_file: Path, tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="embodied_ros.runtime")
    first = TensorRTBackend(onnx_file, contract=CONTRACT, cache_dir=tmp_path, warmup_runs=1)
    assert first.built and first.engine_path.is_file() and read_key(first.engine_path) == first.key
    again = TensorRTBackend(onnx_file, contract=CONTRACT, cache_dir=tmp_path, warmup_runs=0)
    assert not again.built and again.engine_path == first.engine_path and "reusing" in caplog.text
    # An explicit engine file whose key names another TensorRT version or GPU is rebuilt, with the reason logged.
    explicit = tmp_path / "explicit.engine"
    for field, value in [("tensorrt_version", "0.0.1"), ("gpu_name", "Some Other GPU")]:
        write_engine(explicit, first.engine_path.read_bytes(), replace(first.key, **{field: value}))
        caplog.clear()
        rebuilt = TensorRTBackend(onnx_file, contract=CONTRACT, engine_path=explicit, warmup_runs=0)
        assert rebuilt.built and read_key(explicit) == first.key
        assert f"-> {getattr(first.key, field)}" in caplog.text and "rebuilding" in caplog.text
    explicit.write_bytes(b"not an engine")  # the key still matches: TensorRT must refuse the bytes
    caplog.clear()
    assert TensorRTBackend(onnx_file, contract=CONTRACT, engine_path=explicit, warmup_runs=0).built
    assert "could not be deserialised" in caplog.text


def test_tensorrt_file_and_contract_errors_come_first(tmp_path: Path, onnx_file: Path) -> None:
    """Checked before TensorRT is looked for, so they are seen (and tested) on any machine."""
    with pytest.raises(ModelError, match="ONNX model not found"):
        TensorRTBackend(tmp_path / "absent.onnx", cache_dir=tmp_path)
    (tmp_path / "bad.onnx").write_bytes(b"\x08garbage")
    with pytest.raises(ModelError, match="not a readable ONNX model"):
        TensorRTBackend(tmp_path / "bad.onnx", cache_dir=tmp_path)
    with pytest.raises(ModelError, match=r"dynamic axes \['views'\] need a range"):
        TensorRTBackend(onnx_file, cache_dir=tmp_path)  # no contract: the graph alone gives no profile
    wrong = type(CONTRACT)(CONTRACT.inputs[::-1], CONTRACT.outputs, CONTRACT.axes)
    with pytest.raises(ModelError, match="does not match the expected contract"):
        TensorRTBackend(onnx_file, contract=wrong, cache_dir=tmp_path)


@needs_trt
@pytest.mark.parametrize(("fp16", "tolerance"), [(False, FP32_REL), (True, FP16_REL)])
def test_tensorrt_matches_onnxruntime_for_every_view_count(onnx_file: Path, tmp_path: Path, fp16: bool,
                                                           tolerance: float) -> None:
    import torch

    trt = TensorRTBackend(onnx_file, contract=CONTRACT, fp16=fp16, cache_dir=tmp_path)
    ort = OnnxRuntimeBackend(onnx_file, contract=CONTRACT, providers=["CPUExecutionProvider"])
    for views in (1, 4, 8):  # min, opt and max of the optimisation profile
        rng = np.random.default_rng(views)
        inputs = {"images": rng.random((views, 3, 16, 16), np.float32),
                  "projections": rng.normal(size=(views, 3, 4)).astype(np.float32)}
        got, ref = trt.run(inputs), ort.run(inputs)
        assert {n: a.shape for n, a in got.items()} == {n: a.shape for n, a in ref.items()}
        abs_diff, rel_diff = max_differences(got, ref)
        print(f"TensorRT {trt.key.tensorrt_version} {trt.key.precision} on {trt.key.gpu_name}, views {views}: "
              f"max abs diff {abs_diff:.2e}, relative {rel_diff:.2e}")
        assert rel_diff <= tolerance
    on_gpu = trt.run_torch({n: torch.from_numpy(a).cuda() for n, a in inputs.items()})
    assert all(t.is_cuda for t in on_gpu.values())
    np.testing.assert_allclose(on_gpu["fused"].cpu().numpy(), got["fused"], rtol=1e-6, atol=1e-6)


@needs_trt
@pytest.mark.skipif(not (YOLO.is_dir() and KITCHEN.is_dir()), reason=f"Yolo-Fastest or redkitchen not in {DATA}")
@pytest.mark.parametrize(("fp16", "tolerance"), [(False, FP32_REL), (True, FP16_REL)])
def test_yolo_on_tensorrt_matches_onnxruntime_on_real_frames(tmp_path: Path, fp16: bool, tolerance: float) -> None:
    from PIL import Image

    from embodied_ros.network.yolo_detector import YoloDetector2D, preprocess

    trt = YoloDetector2D.from_known(search_dirs=[YOLO], cache=tmp_path,
                                    runtime=RuntimeConfig(backend="tensorrt", fp16=fp16))
    ort = YoloDetector2D.from_known(search_dirs=[YOLO], cache=tmp_path,
                                    runtime=RuntimeConfig(backend="onnxruntime", providers=["CPUExecutionProvider"]))
    assert trt.backend.value == "tensorrt" and ort.onnx_path == trt.onnx_path
    for index in (0, 540):
        image = np.asarray(Image.open(KITCHEN / f"frame-{index:06d}.color.jpg").convert("RGB"))
        batch = preprocess(image, trt.input_size)
        got = dict(zip(trt.output_names, trt.infer(batch), strict=True))
        ref = dict(zip(ort.output_names, ort.infer(batch), strict=True))
        abs_diff, rel_diff = max_differences(got, ref)
        print(f"YOLO frame {index} TensorRT {'fp16' if fp16 else 'fp32'}: abs {abs_diff:.2e}, rel {rel_diff:.2e}")
        assert rel_diff <= tolerance
        d_trt, d_ort = trt.detect(image), ort.detect(image)
        strong = d_ort.scores > 0.5  # confident detections must survive the precision change
        assert set(d_ort.labels[strong]) <= set(d_trt.labels)


@needs_trt
@pytest.mark.parametrize(("name", "folder"), [("yolox-nano", "yolox_nano"), ("nanodet-plus-m-416", "nanodet_plus")])
@pytest.mark.parametrize(("fp16", "tolerance"), [(False, FP32_REL), (True, FP16_REL)])
def test_stronger_detectors_on_tensorrt_match_onnxruntime(tmp_path: Path, name: str, folder: str, fp16: bool,
                                                          tolerance: float) -> None:
    from PIL import Image

    from embodied_ros.network.registry import build_detector
    from embodied_ros.network.weights import resolve_known_model

    if not ((DATA / folder).is_dir() and KITCHEN.is_dir()):
        pytest.skip(f"{name}'s files or redkitchen not in {DATA}")
    files = resolve_known_model(name, search_dirs=[DATA / folder])
    trt = build_detector(files, RuntimeConfig(backend="tensorrt", fp16=fp16), cache=tmp_path)
    ort = build_detector(files, RuntimeConfig(backend="onnxruntime", providers=["CPUExecutionProvider"]),
                         cache=tmp_path)
    assert trt.backend.value == "tensorrt" and ort.onnx_path == trt.onnx_path
    image = np.asarray(Image.open(KITCHEN / "frame-000300.color.jpg").convert("RGB"))
    batch, _ = trt.preprocess(image)
    got = dict(zip(trt.output_names, trt.infer(batch), strict=True))
    ref = dict(zip(ort.output_names, ort.infer(batch), strict=True))
    abs_diff, rel_diff = max_differences(got, ref)
    print(f"{name} TensorRT {'fp16' if fp16 else 'fp32'}: abs {abs_diff:.2e}, rel {rel_diff:.2e}")
    assert rel_diff <= tolerance
    d_trt, d_ort = trt.detect(image), ort.detect(image)
    strong = d_ort.scores > 0.5
    assert set(d_ort.labels[strong]) <= set(d_trt.labels)


def test_engine_sidecar_is_plain_json(tmp_path: Path) -> None:
    path = tmp_path / "x.engine"
    write_engine(path, b"e", KEY)
    stored = json.loads(Path(str(path) + ".json").read_text())
    assert stored["tensorrt_version"] == "10.7.0" and stored["gpu_name"] == "NVIDIA H100 80GB HBM3"
