"""check_tensorrt_compatible: one small graph per rule (what TensorRT 10's ONNX parser rejects), and clean graphs.

GridSample 5-D and ScatterND with a reduction are covered in test_onnx_export.py.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from embodied_ros.runtime.tensorrt_compat import check_tensorrt_compatible

F = TensorProto.FLOAT


def _model(nodes, inputs, outputs, *, opset: int = 17, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _t(name: str, shape: list, dtype: int = F) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def _k(value: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array([value], np.int64), "k")


CASES = {
    "unsupported op": (
        _model([helper.make_node("Det", ["x"], ["y"], name="det")], [_t("x", [3, 3])], [_t("y", [])]),
        "Det node det: operator not supported by TensorRT's ONNX parser",
    ),
    "NonZero inside the engine": (
        _model([helper.make_node("NonZero", ["x"], ["y"], name="nz")], [_t("x", [4])],
               [_t("y", [1, "n"], TensorProto.INT64)]),
        "NonZero node nz: data-dependent output shape; keep it outside the engine",
    ),
    "NMS inside the engine": (
        _model([helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["keep"], name="nms")],
               [_t("boxes", [1, 10, 4]), _t("scores", [1, 1, 10])], [_t("keep", ["n", 3], TensorProto.INT64)]),
        "NonMaxSuppression node nms: data-dependent output shape",
    ),
    "Unique": (
        _model([helper.make_node("Unique", ["x"], ["y"], name="u")], [_t("x", [4])], [_t("y", ["n"])]),
        "Unique node u: data-dependent output shape",
    ),
    "TopK with a runtime K": (
        _model([helper.make_node("TopK", ["x", "kin"], ["v", "i"], name="topk")],
               [_t("x", [100]), _t("kin", [1], TensorProto.INT64)],
               [_t("v", ["k"]), _t("i", ["k"], TensorProto.INT64)]),
        "TopK node topk: K is not a constant",
    ),
    "TopK with K too large": (
        _model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk")], [_t("x", [5000])],
               [_t("v", [4000]), _t("i", [4000], TensorProto.INT64)], initializers=[_k(4000)]),
        "TopK node topk: K=4000; TensorRT needs K < 3840",
    ),
    "TopK unsorted": (
        _model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk", sorted=0)], [_t("x", [50])],
               [_t("v", [5]), _t("i", [5], TensorProto.INT64)], initializers=[_k(5)]),
        "TopK node topk: sorted=0",
    ),
    "MaxPool indices": (
        _model([helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2])],
               [_t("x", [1, 1, 4, 4])], [_t("y", [1, 1, 2, 2]), _t("idx", [1, 1, 2, 2], TensorProto.INT64)]),
        "MaxPool node pool: the Indices output is not supported",
    ),
    "Resize cubic": (
        _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="up", mode="cubic")],
               [_t("x", [1, 1, 4, 4])], [_t("y", [1, 1, 8, 8])],
               initializers=[numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]),
        "Resize node up: mode='cubic'",
    ),
    "Resize antialias": (
        _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], name="down", mode="linear", antialias=1)],
               [_t("x", [1, 1, 8, 8])], [_t("y", [1, 1, 4, 4])], opset=18,
               initializers=[numpy_helper.from_array(np.array([1, 1, 0.5, 0.5], np.float32), "scales")]),
        "Resize node down: antialias=1",
    ),
    "float64 tensor": (
        _model([helper.make_node("Relu", ["x"], ["y"])], [_t("x", [4], TensorProto.DOUBLE)],
               [_t("y", [4], TensorProto.DOUBLE)]),
        "tensors x, y: DOUBLE is cast down to float32 by TensorRT",
    ),
    "unsupported dtype": (
        _model([helper.make_node("Identity", ["x"], ["y"])], [_t("x", [4], TensorProto.UINT16)],
               [_t("y", [4], TensorProto.UINT16)]),
        "tensors x, y: dtype UINT16 is not supported by TensorRT",
    ),
    "uint8 inside the graph": (
        _model([helper.make_node("Cast", ["x"], ["u"], to=TensorProto.UINT8),
                helper.make_node("Cast", ["u"], ["y"], to=F)],
               [_t("x", [4])], [_t("y", [4])]),
        "tensor u: UINT8 is supported by TensorRT only as a graph input or output",
    ),
    "opset too new": (
        _model([helper.make_node("Relu", ["x"], ["y"])], [_t("x", [4])], [_t("y", [4])], opset=22),
        "opset 22: TensorRT 10 parses opsets 9-20",
    ),
    "5-D GridSample inside an If branch": (
        _model([helper.make_node(
            "If", ["c"], ["y"], name="branch",
            then_branch=helper.make_graph([helper.make_node("GridSample", ["v", "g"], ["s"], name="lift")], "then",
                                          [], [_t("s", [1, 2, 2, 2, 2])]),
            else_branch=helper.make_graph([helper.make_node("Identity", ["w"], ["s2"])], "else", [],
                                          [_t("s2", [1, 2, 2, 2, 2])]))],
            [_t("c", [], TensorProto.BOOL), _t("v", [1, 2, 4, 4, 4]), _t("g", [1, 2, 2, 2, 3]),
             _t("w", [1, 2, 2, 2, 2])], [_t("y", [1, 2, 2, 2, 2])], opset=20),
        "GridSample node lift: 5-D input",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_rule_is_found(case: str) -> None:
    model, expected = CASES[case]
    problems = check_tensorrt_compatible(model)
    assert len(problems) == 1 and expected in problems[0], problems


def test_clean_graphs_pass() -> None:
    uint8_image = _model(  # uint8 at the graph's edge is fine; so are int64 shape tensors and TopK with small K
        [helper.make_node("Cast", ["img"], ["f"], to=F),
         helper.make_node("Flatten", ["f"], ["flat"], axis=0),
         helper.make_node("TopK", ["flat", "k"], ["v", "i"], name="topk"),
         helper.make_node("Resize", ["f", "", "scales"], ["up"], mode="linear")],
        [_t("img", [1, 3, 4, 4], TensorProto.UINT8)],
        [_t("v", [1, 5]), _t("i", [1, 5], TensorProto.INT64), _t("up", [1, 3, 8, 8])],
        initializers=[_k(5), numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")],
    )
    assert check_tensorrt_compatible(uint8_image) == []
    custom = _model([helper.make_node("MyPlugin", ["x"], ["y"], domain="my.plugins")], [_t("x", [4])],
                    [_t("y", [4])])
    custom.opset_import.append(helper.make_opsetid("my.plugins", 1))
    assert check_tensorrt_compatible(custom) == []  # plugin ops are TensorRT's plugin registry's business
