"""ONNX Runtime and PyTorch backends behind one contract (multi-input, dynamic views), and backend selection."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from runtime_nets import CONTRACT, MultiViewExportable, MultiViewNet

from embodied_ros.errors import ModelError
from embodied_ros.network.export_command import export_network, max_differences, random_inputs
from embodied_ros.runtime import Backend, InferenceBackend, RuntimeConfig
from embodied_ros.runtime.contract import ExportableNetwork
from embodied_ros.runtime.onnxruntime_backend import OnnxRuntimeBackend
from embodied_ros.runtime.select import choose_backend, create_backend
from embodied_ros.runtime.tensorrt_backend import tensorrt_status
from embodied_ros.runtime.tensorrt_compat import check_tensorrt_compatible
from embodied_ros.runtime.torch_backend import TorchBackend

# float32 on CPU: the same maths in another summation order. Outputs are O(1).
ATOL, RTOL = 1e-5, 1e-5
TRT_PROBLEM = tensorrt_status()


@pytest.fixture(scope="module")
def network() -> MultiViewExportable:
    return MultiViewExportable()


@pytest.fixture(scope="module")
def onnx_file(network: MultiViewExportable, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("multiview") / "multiview.onnx"
    export_network(network, path)
    return path


def test_export_keeps_names_dtypes_and_the_dynamic_views_axis(network: MultiViewExportable, onnx_file: Path) -> None:
    assert isinstance(network, ExportableNetwork)
    model = onnx.load(str(onnx_file))
    assert model.ir_version == 10
    dims = {vi.name: [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]
            for vi in (*model.graph.input, *model.graph.output)}
    assert dims == {"images": ["views", 3, 16, 16], "projections": ["views", 3, 4],
                    "fused": [1, 8, 8, 8], "per_view": ["views", 8]}
    assert check_tensorrt_compatible(model) == []


@pytest.mark.parametrize("views", [1, 3, 8])
def test_onnxruntime_matches_torch_for_every_view_count(network: MultiViewExportable, onnx_file: Path,
                                                        views: int) -> None:
    ort = OnnxRuntimeBackend(onnx_file, contract=CONTRACT, providers=["CPUExecutionProvider"], intra_op_threads=1)
    eager = TorchBackend(network.torch_module(), CONTRACT)
    assert isinstance(ort, InferenceBackend) and isinstance(eager, InferenceBackend)
    rng = np.random.default_rng(views)
    inputs = {"images": rng.random((views, 3, 16, 16), np.float32),
              "projections": rng.normal(size=(views, 3, 4)).astype(np.float32)}
    a, b = ort.run(inputs), eager.run(inputs)
    assert list(a) == list(b) == ["fused", "per_view"] and b["per_view"].shape == (views, 8)
    for name in a:
        assert a[name].dtype == b[name].dtype == np.float32
        np.testing.assert_allclose(a[name], b[name], rtol=RTOL, atol=ATOL)
    abs_diff, rel_diff = max_differences(a, b)
    assert abs_diff <= ATOL and rel_diff <= 1e-5
    assert "CPUExecutionProvider" in ort.describe() and "torch" in eager.describe()


def test_onnxruntime_threads_sleep_between_runs_unless_asked_to_spin(onnx_file: Path) -> None:
    """ORT's threads busy-wait between runs by default, taking a core from the map's stages (and from a map node
    beside a detector node); the project's sessions let them sleep unless RuntimeConfig.spin_wait asks otherwise."""
    def spinning(backend: OnnxRuntimeBackend) -> tuple[str, str]:
        options = backend._session.get_session_options()
        return tuple(options.get_session_config_entry(f"session.{k}.allow_spinning") for k in ("intra_op", "inter_op"))

    config = RuntimeConfig(backend=Backend.ONNXRUNTIME, warmup_runs=0)
    assert spinning(create_backend(config, CONTRACT, onnx_path=onnx_file)) == ("0", "0")
    config = RuntimeConfig(backend=Backend.ONNXRUNTIME, warmup_runs=0, spin_wait=True)
    assert spinning(create_backend(config, CONTRACT, onnx_path=onnx_file)) == ("1", "1")


def test_backends_refuse_inputs_outside_the_contract(network: MultiViewExportable, onnx_file: Path) -> None:
    for backend in (OnnxRuntimeBackend(onnx_file, contract=CONTRACT), TorchBackend(network.torch_module(), CONTRACT)):
        with pytest.raises(ModelError, match=r"axis 'views' = 9 outside its range \[1, 8\]"):
            backend.run({"images": np.zeros((9, 3, 16, 16), np.float32),
                         "projections": np.zeros((9, 3, 4), np.float32)})


def test_onnxruntime_refuses_a_graph_that_breaks_the_contract(onnx_file: Path) -> None:
    wrong = type(CONTRACT)(CONTRACT.inputs, CONTRACT.outputs[::-1], CONTRACT.axes)
    with pytest.raises(ModelError, match="does not match the expected contract: output names"):
        OnnxRuntimeBackend(onnx_file, contract=wrong)


def test_torch_backend_checks_the_output_count() -> None:
    one_output = type(CONTRACT)(CONTRACT.inputs, CONTRACT.outputs[:1], CONTRACT.axes)
    backend = TorchBackend(MultiViewNet(), one_output)
    with pytest.raises(ModelError, match="returned 2 outputs, the contract names 1"):
        backend.run(random_inputs(one_output))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch sees a CUDA device")
def test_torch_backend_on_cuda_without_a_gpu_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="no CUDA device"):
        TorchBackend(MultiViewNet(), CONTRACT, device="cuda:0")


@pytest.mark.parametrize("requested", list(Backend))
@pytest.mark.parametrize("trt_problem", [None, "no CUDA device"])
@pytest.mark.parametrize("allow_fallback", [False, True])
def test_choose_backend(requested: Backend, trt_problem: str | None, allow_fallback: bool) -> None:
    if requested is Backend.TENSORRT and trt_problem and not allow_fallback:
        with pytest.raises(ModelError, match="backend tensorrt asked for, but no CUDA device; choose onnxruntime"):
            choose_backend(requested, allow_fallback=allow_fallback, tensorrt_problem=trt_problem)
        return
    kind, reason = choose_backend(requested.value, allow_fallback=allow_fallback, tensorrt_problem=trt_problem)
    expected = {
        Backend.AUTO: Backend.TENSORRT if trt_problem is None else Backend.ONNXRUNTIME,
        Backend.TENSORRT: Backend.TENSORRT if trt_problem is None else Backend.ONNXRUNTIME,
        Backend.ONNXRUNTIME: Backend.ONNXRUNTIME,
        Backend.TORCH: Backend.TORCH,
    }[requested]
    assert kind is expected and kind is not Backend.AUTO
    fell_back = trt_problem is not None and requested in (Backend.AUTO, Backend.TENSORRT)
    assert (trt_problem is not None and trt_problem in reason) == fell_back


def test_create_backend_auto_and_fallback_are_logged(network: MultiViewExportable, onnx_file: Path, tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="embodied_ros.runtime")
    config = RuntimeConfig(backend="auto", engine_cache=tmp_path, warmup_runs=1)
    auto = create_backend(config, CONTRACT, onnx_path=onnx_file, torch_module=network.torch_module)
    assert auto.kind is (Backend.TENSORRT if TRT_PROBLEM is None else Backend.ONNXRUNTIME)
    assert "runtime backend: auto:" in caplog.text
    eager = create_backend(RuntimeConfig(backend="torch"), CONTRACT, torch_module=network.torch_module)
    assert eager.kind is Backend.TORCH
    exported: list[int] = []

    def lazy_export() -> Path:  # an ONNX-based backend calls it; the torch backend must not
        exported.append(1)
        return onnx_file

    create_backend(RuntimeConfig(backend="torch"), CONTRACT, onnx_path=lazy_export, torch_module=network.torch_module)
    assert exported == []
    create_backend(RuntimeConfig(backend="onnxruntime"), CONTRACT, onnx_path=lazy_export)
    assert exported == [1]
    with pytest.raises(ModelError, match="the torch backend needs the network's torch module"):
        create_backend(RuntimeConfig(backend="torch"), CONTRACT, onnx_path=onnx_file)


@pytest.mark.skipif(TRT_PROBLEM is None, reason="TensorRT is usable here; the no-GPU answers cannot be seen")
def test_tensorrt_without_gpu_errors_or_falls_back(onnx_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.raises(ModelError, match="backend tensorrt asked for, but .*; choose onnxruntime"):
        create_backend(RuntimeConfig(backend="tensorrt"), CONTRACT, onnx_path=onnx_file)
    caplog.set_level(logging.INFO, logger="embodied_ros.runtime")
    backend = create_backend(RuntimeConfig(backend="tensorrt", allow_fallback=True), CONTRACT, onnx_path=onnx_file)
    assert backend.kind is Backend.ONNXRUNTIME
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("falling back to ONNX Runtime" in w for w in warnings)
