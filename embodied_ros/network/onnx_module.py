"""An ONNX graph of plain CNN operators as a PyTorch module, so a detector shipped only as ONNX
(YOLOX-Nano) also runs on the torch backend and goes through the same export and parity checks.

Operators: Conv, Sigmoid, Mul, Add, Concat, Slice, MaxPool, Reshape, Resize (nearest, scale
factors, "asymmetric" + "floor" as torch's nearest), Transpose. Anything else is refused with a
ModelError: a graph this reader does not understand is never run differently from ONNX Runtime.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn
from torch.nn import functional as F

from ..errors import ModelError


def _attrs(node: onnx.NodeProto) -> dict:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class OnnxModule(nn.Module):
    """The graph of an ONNX file as torch operations; ``forward`` takes and returns its tensors in graph order.

    Attributes:
        input_names / output_names: the graph's non-initializer inputs and its outputs.
    """

    def __init__(self, path: str | Path):
        """Read ``path``.

        Raises:
            ModelError: not an ONNX file, or an operator or attribute this reader does not support.
        """
        super().__init__()
        try:
            model = onnx.load(str(path))
        except Exception as exc:  # protobuf's DecodeError, OSError
            raise ModelError(f"{path}: not a readable ONNX file ({exc})".splitlines()[0]) from exc
        graph = model.graph
        # Shapes, slice bounds and scales stay numpy constants (the graph's structure depends on them);
        # every other initializer (weights, biases) becomes a parameter.
        structural = {n for node in graph.node if node.op_type in _STRUCTURAL_INPUTS for n in node.input[1:]}
        self.params = nn.ParameterDict()
        self._param_keys: dict[str, str] = {}
        self._consts: dict[str, np.ndarray] = {}
        for i, init in enumerate(graph.initializer):
            value = numpy_helper.to_array(init)
            if init.name in structural:
                self._consts[init.name] = value
            else:
                self._param_keys[init.name] = f"p{i}"
                self.params[f"p{i}"] = nn.Parameter(torch.from_numpy(value.copy()), requires_grad=False)
        initializers = {i.name for i in graph.initializer}
        self.input_names = tuple(i.name for i in graph.input if i.name not in initializers)
        self.output_names = tuple(o.name for o in graph.output)
        self._nodes: list[tuple[onnx.NodeProto, Callable, dict]] = []
        for node in graph.node:
            if node.domain not in ("", "ai.onnx"):
                raise ModelError(f"{path}: operator {node.domain}.{node.op_type} is not supported")
            op = _OPS.get(node.op_type)
            if op is None:
                raise ModelError(f"{path}: ONNX operator {node.op_type} ({node.name}) is not supported by this reader")
            self._nodes.append((node, op, _attrs(node)))

    def _value(self, name: str, values: dict[str, torch.Tensor]):
        if name in values:
            return values[name]
        if name in self._param_keys:
            return self.params[self._param_keys[name]]
        return self._consts[name]

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        values: dict[str, torch.Tensor] = dict(zip(self.input_names, inputs, strict=True))
        for node, op, attrs in self._nodes:
            args = [self._value(n, values) if n else None for n in node.input]
            outs = op(args, attrs)
            values.update(zip(node.output, outs if isinstance(outs, tuple) else (outs,), strict=False))
        return tuple(values[n] for n in self.output_names)


_STRUCTURAL_INPUTS = {"Slice", "Reshape", "Resize"}  # operators whose inputs after the first are constants


def _conv(args, a):
    x, w, b = (args + [None])[:3]
    pads = list(a.get("pads", [0, 0, 0, 0]))
    if a.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET") or pads[:2] != pads[2:]:
        raise ModelError("Conv with auto_pad or asymmetric pads is not supported")
    return F.conv2d(x, w, b, tuple(a.get("strides", [1, 1])), tuple(pads[:2]), tuple(a.get("dilations", [1, 1])),
                    a.get("group", 1))


def _maxpool(args, a):
    pads = list(a.get("pads", [0, 0, 0, 0]))
    if pads[:2] != pads[2:] or any(d != 1 for d in a.get("dilations", [1, 1])) or a.get("storage_order", 0):
        raise ModelError("MaxPool with asymmetric pads, dilations or a storage order is not supported")
    return F.max_pool2d(args[0], tuple(a["kernel_shape"]), tuple(a.get("strides", [1, 1])), tuple(pads[:2]),
                        ceil_mode=bool(a.get("ceil_mode", 0)))


def _slice(args, a):
    x, starts, ends = args[:3]
    axes = args[3] if len(args) > 3 and args[3] is not None else np.arange(len(starts))
    steps = args[4] if len(args) > 4 and args[4] is not None else np.ones(len(starts), np.int64)
    index = [slice(None)] * x.dim()
    for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
        if step < 1:
            raise ModelError("Slice with a negative step is not supported")
        index[int(axis)] = slice(int(start), int(min(end, 2**31 - 1)), int(step))
    return x[tuple(index)]


def _resize(args, a):
    scales = args[2] if len(args) > 2 else None
    ok = (a.get("mode") == b"nearest" and a.get("coordinate_transformation_mode") == b"asymmetric"
          and a.get("nearest_mode", b"round_prefer_floor") == b"floor")
    if not ok or scales is None or len(scales) != 4 or tuple(scales[:2]) != (1.0, 1.0):
        raise ModelError("only nearest Resize by (1, 1, sy, sx) scales with asymmetric/floor rounding is supported")
    return F.interpolate(args[0], scale_factor=(float(scales[2]), float(scales[3])), mode="nearest")


def _reshape(args, a):
    shape = [int(v) for v in args[1]]
    if a.get("allowzero", 0) or 0 in shape:
        raise ModelError("Reshape with zeros in the shape is not supported")
    return args[0].reshape(shape)


_OPS: dict[str, Callable] = {
    "Conv": _conv,
    "Sigmoid": lambda args, a: torch.sigmoid(args[0]),
    "Mul": lambda args, a: args[0] * args[1],
    "Add": lambda args, a: args[0] + args[1],
    "Concat": lambda args, a: torch.cat(args, dim=a["axis"]),
    "Slice": _slice,
    "MaxPool": _maxpool,
    "Resize": _resize,
    "Reshape": _reshape,
    "Transpose": lambda args, a: args[0].permute(*a["perm"]),
}
