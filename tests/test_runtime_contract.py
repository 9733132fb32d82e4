"""The runtime contract: named tensors, dtypes, fixed and dynamic axes, TensorRT profiles, config checks."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from embodied_ros.errors import ConfigError, ModelError
from embodied_ros.runtime import AxisRange, Backend, IOContract, RuntimeConfig, TensorSpec

VIEWS = AxisRange(1, 8, 50)


def _multiview() -> IOContract:
    """Shaped like the Embodied Perceptron's graph: several named inputs sharing a dynamic 'views' axis."""
    return IOContract(
        inputs=(
            TensorSpec("images", ("views", 3, 32, 32), "float32", "RGB in [0, 1]"),
            TensorSpec("projections", ("views", 3, 4), "float32"),
            TensorSpec("depth_volume", (1, 1, 8, 8, 4), np.float32),
        ),
        outputs=(TensorSpec("occupancy", (1, 5, 8, 8, 4), "float32"),),
        axes={"views": VIEWS},
    )


def _inputs(views: int, proj_views: int | None = None, dtype=np.float32) -> dict[str, np.ndarray]:
    return {
        "images": np.zeros((views, 3, 32, 32), dtype),
        "projections": np.zeros((proj_views or views, 3, 4), np.float32),
        "depth_volume": np.zeros((1, 1, 8, 8, 4), np.float32),
    }


def test_check_inputs_accepts_any_view_count_in_range() -> None:
    contract = _multiview()
    for views in (1, 8, 50):
        assert contract.check_inputs(_inputs(views)) == {"views": views}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({k: v for k, v in _inputs(2).items() if k != "projections"}, r"inputs missing \['projections'\]"),
        ({**_inputs(2), "extra": np.zeros(1)}, r"unknown \['extra'\]"),
        (_inputs(2, dtype=np.float64), "input 'images' must be float32, got float64"),
        ({**_inputs(2), "depth_volume": np.zeros((1, 1, 8, 8, 5), np.float32)}, "input 'depth_volume' must have shape"),
        ({**_inputs(2), "projections": np.zeros((2, 12), np.float32)}, "input 'projections' must have shape"),
        (_inputs(2, proj_views=3), "axis 'views' is 2 in one input and 3 in another"),
        (_inputs(51), r"axis 'views' = 51 outside its range \[1, 50\]"),
    ],
)
def test_check_inputs_says_what_is_wrong(inputs: dict[str, np.ndarray], message: str) -> None:
    with pytest.raises(ModelError, match=message):
        _multiview().check_inputs(inputs, "net.onnx")


def test_export_axes_profiles_and_example_shapes() -> None:
    contract = _multiview()
    assert contract.onnx_dynamic_axes() == {"images": {0: "views"}, "projections": {0: "views"}}
    assert contract.profile_shapes() == {
        "images": ((1, 3, 32, 32), (8, 3, 32, 32), (50, 3, 32, 32)),
        "projections": ((1, 3, 4), (8, 3, 4), (50, 3, 4)),
    }
    assert contract.example_shapes()["images"] == (8, 3, 32, 32)
    assert contract.input_names == ("images", "projections", "depth_volume")
    text = contract.describe()
    assert "images: float32 (views, 3, 32, 32)  RGB in [0, 1]" in text and "axis views: 1..50 (opt 8)" in text


def test_contract_construction_errors() -> None:
    with pytest.raises(ConfigError, match="need an AxisRange"):
        IOContract((TensorSpec("x", ("batch", 3), "float32"),), (TensorSpec("y", (1,), "float32"),))
    with pytest.raises(ConfigError, match="unique"):
        IOContract((TensorSpec("x", (1,), "float32"),), (TensorSpec("x", (1,), "float32"),))
    with pytest.raises(ConfigError, match="min <= opt <= max"):
        AxisRange(4, 2, 8)


def test_from_onnx_graph_and_same_interface() -> None:
    graph = helper.make_graph(
        [helper.make_node("Identity", ["images"], ["out"])],
        "g",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["views", 3, 32, 32])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["views", 3, 32, 32])],
    )
    declared = IOContract.from_onnx_graph(graph, axes={"views": VIEWS})
    assert declared.inputs[0] == TensorSpec("images", ("views", 3, 32, 32), "float32")
    assert declared.axes == {"views": VIEWS}
    same = IOContract((TensorSpec("images", ("v", 3, 32, 32), "float32"),),
                      (TensorSpec("out", ("v", 3, 32, 32), "float32"),), {"v": VIEWS})
    assert same.same_interface(declared) == []  # axis names may differ; fixed sizes and dtypes may not
    other = IOContract((TensorSpec("images", ("v", 3, 32, 16), "float16"),),
                       (TensorSpec("result", ("v", 3, 32, 32), "float32"),), {"v": VIEWS})
    diffs = other.same_interface(declared)
    assert len(diffs) == 2 and "input images: float16" in diffs[0] and "output names" in diffs[1]


def test_runtime_config_validates() -> None:
    assert RuntimeConfig().backend is Backend.AUTO
    assert RuntimeConfig(backend="torch", providers=["CPUExecutionProvider"]).providers == ("CPUExecutionProvider",)
    with pytest.raises(ConfigError, match="backend 'cuda' unknown; choose one of tensorrt, onnxruntime, torch, auto"):
        RuntimeConfig(backend="cuda")
    with pytest.raises(ConfigError, match="thread counts"):
        RuntimeConfig(intra_op_threads=-1)
    with pytest.raises(ConfigError, match="workspace_mib"):
        RuntimeConfig(workspace_mib=1)
