"""ONNX export (names, IR version, checker), the TensorRT-compatibility check, and the ORT session wrapper."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper

from embodied_ros.errors import ModelError
from embodied_ros.network.onnx_export import DEFAULT_IR_VERSION, check_tensorrt_compatible, export_onnx, load_onnx
from embodied_ros.network.onnx_runtime import OrtSession


class _TwoHeads(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.nn.functional.leaky_relu(self.conv(image), 0.1)
        return y, torch.nn.functional.max_pool2d(y, 2)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, _TwoHeads]:
    path = tmp_path_factory.mktemp("onnx") / "sub" / "two_heads.onnx"
    module = _TwoHeads()
    export_onnx(module, (torch.zeros(1, 3, 8, 8),), path, input_names=("image",), output_names=("head_0", "head_1"))
    return path, module


def test_export_names_ir_and_checker(exported: tuple[Path, _TwoHeads]) -> None:
    path, _ = exported
    model = load_onnx(path)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == DEFAULT_IR_VERSION == 10
    assert [i.name for i in model.graph.input] == ["image"]
    assert [o.name for o in model.graph.output] == ["head_0", "head_1"]
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims == [1, 3, 8, 8]
    assert check_tensorrt_compatible(path) == []
    assert not list(path.parent.glob(".*.part"))  # the atomic write left no temporary behind


def test_ort_session_matches_torch(exported: tuple[Path, _TwoHeads]) -> None:
    path, module = exported
    session = OrtSession(path, providers=["CPUExecutionProvider"], intra_op_threads=1, inter_op_threads=1)
    assert session.input_names == ("image",) and session.output_names == ("head_0", "head_1")
    assert session.input_shapes["image"] == (1, 3, 8, 8) and session.providers == ("CPUExecutionProvider",)
    x = np.random.default_rng(1).uniform(size=(1, 3, 8, 8)).astype(np.float32)
    out = session.run({"image": x})
    with torch.no_grad():
        ref = module(torch.from_numpy(x))
    for name, r in zip(session.output_names, ref, strict=True):
        np.testing.assert_allclose(out[name], r.numpy(), rtol=1e-5, atol=1e-5)
    assert list(session.run({"image": x}, output_names=["head_1"])) == ["head_1"]


def test_ort_session_errors(exported: tuple[Path, _TwoHeads], tmp_path: Path) -> None:
    path, _ = exported
    with pytest.raises(ModelError, match="ONNX model not found"):
        OrtSession(tmp_path / "absent.onnx")
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ModelError, match="ONNX Runtime cannot load it"):
        OrtSession(corrupt)
    with pytest.raises(ModelError, match="not a readable ONNX model"):
        load_onnx(corrupt)
    with pytest.raises(ModelError, match="unavailable"):
        OrtSession(path, providers=["NoSuchExecutionProvider"])
    session = OrtSession(path)
    with pytest.raises(ModelError, match="inputs missing \\['image'\\]"):
        session.run({"img": np.zeros((1, 3, 8, 8), np.float32)})
    with pytest.raises(ModelError, match="input 'image' must be float32, got float64"):
        session.run({"image": np.zeros((1, 3, 8, 8), np.float64)})
    with pytest.raises(ModelError, match=r"must have shape \(1, 3, 8, 8\), got \(1, 3, 8, 9\)"):
        session.run({"image": np.zeros((1, 3, 8, 9), np.float32)})
    with pytest.raises(ModelError, match="run failed"):
        session.run({"image": np.zeros((1, 3, 8, 8), np.float32)}, output_names=["no_such_output"])


def _graph_model(nodes, inputs, outputs, opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _tensor(name: str, shape: list[int], dtype=TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def test_check_flags_5d_grid_sample_and_scatter_nd_reduction() -> None:
    bad = _graph_model(
        [
            helper.make_node("GridSample", ["vol", "grid5"], ["s"], name="lift"),
            helper.make_node("ScatterND", ["data", "idx", "upd"], ["acc"], name="splat", reduction="add"),
            helper.make_node("ScatterND", ["data", "idx", "upd"], ["plain"], name="ok_scatter"),
        ],
        [
            _tensor("vol", [1, 8, 4, 4, 4]),
            _tensor("grid5", [1, 2, 2, 2, 3]),
            _tensor("data", [10]),
            _tensor("idx", [3, 1], TensorProto.INT64),
            _tensor("upd", [3]),
        ],
        [_tensor("s", [1, 8, 2, 2, 2]), _tensor("acc", [10]), _tensor("plain", [10])],
        opset=20,
    )
    problems = check_tensorrt_compatible(bad)
    assert len(problems) == 2
    assert "GridSample node lift: 5-D" in problems[0] and "ScatterND node splat: reduction='add'" in problems[1]
    good = _graph_model(
        [helper.make_node("GridSample", ["img", "grid4"], ["s"], name="sample")],
        [_tensor("img", [1, 8, 4, 4]), _tensor("grid4", [1, 2, 2, 2])],
        [_tensor("s", [1, 8, 2, 2])],
        opset=16,
    )
    assert check_tensorrt_compatible(good) == []
