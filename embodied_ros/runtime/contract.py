"""The one input/output contract every backend honours: named tensors with shapes, dtypes and dynamic axes.

A network is described once by an ``IOContract``; the ONNX export takes its names and dynamic axes
from it, TensorRT derives its optimisation profiles from it, and every backend checks its inputs
against it, so ONNX Runtime, PyTorch and TensorRT take and return exactly the same arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..errors import ConfigError, ModelError

# ONNX TensorProto element types <-> numpy, for the dtypes a contract may use (no onnx import here).
_ONNX_TO_NUMPY = {1: "float32", 2: "uint8", 3: "int8", 6: "int32", 7: "int64", 9: "bool", 10: "float16", 11: "float64"}


class Backend(str, Enum):
    """Where a network runs. All share one contract, preprocessing and decode."""

    TENSORRT = "tensorrt"  # an engine built from the ONNX file (NVIDIA GPU + tensorrt package)
    ONNXRUNTIME = "onnxruntime"  # the ONNX file in ONNX Runtime (CPU, or CUDA with onnxruntime-gpu)
    TORCH = "torch"  # the PyTorch module, eager (development, training, reference for parity)
    AUTO = "auto"  # TensorRT when a GPU and tensorrt are present, else ONNX Runtime


@dataclass(frozen=True)
class AxisRange:
    """Sizes a dynamic axis may take; TensorRT builds one optimisation profile from min/opt/max."""

    min: int  # smallest size the engine must accept
    opt: int  # size the kernels are tuned for
    max: int  # largest size the engine must accept

    def __post_init__(self) -> None:
        if not 1 <= self.min <= self.opt <= self.max:
            raise ConfigError(f"axis range needs 1 <= min <= opt <= max, got {self.min}, {self.opt}, {self.max}")


@dataclass(frozen=True)
class TensorSpec:
    """One named input or output tensor.

    ``shape`` holds an int per fixed dimension and an axis name (e.g. ``"views"``) per dynamic one;
    every tensor using the same axis name must agree on its size in one call.
    """

    name: str  # the graph's tensor name, identical in ONNX, TensorRT and the torch wrapper
    shape: tuple[int | str, ...]  # fixed sizes and named dynamic axes, e.g. ("views", 3, 480, 640)
    dtype: str  # numpy dtype name, e.g. "float32"
    doc: str = ""  # meaning, units and layout, for the documentation and `export` output

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)

    @property
    def dynamic_axes(self) -> dict[int, str]:
        """Dimension index -> axis name, for the dynamic dimensions only."""
        return {i: d for i, d in enumerate(self.shape) if isinstance(d, str)}

    def concrete_shape(self, sizes: Mapping[str, int]) -> tuple[int, ...]:
        """The shape with every named axis replaced by its size in ``sizes``."""
        return tuple(sizes[d] if isinstance(d, str) else d for d in self.shape)

    def describe(self) -> str:
        dims = ", ".join(str(d) for d in self.shape)
        return f"{self.name}: {self.dtype} ({dims})" + (f"  {self.doc}" if self.doc else "")


@dataclass(frozen=True)
class IOContract:
    """A network's inputs and outputs, in graph order, and the ranges of its dynamic axes."""

    inputs: tuple[TensorSpec, ...]  # graph inputs, in the order the torch module takes them
    outputs: tuple[TensorSpec, ...]  # graph outputs, in the order the torch module returns them
    axes: Mapping[str, AxisRange] = field(default_factory=dict)  # a range per dynamic axis name

    def __post_init__(self) -> None:
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        names = [s.name for s in (*self.inputs, *self.outputs)]
        if len(set(names)) != len(names):
            raise ConfigError(f"tensor names must be unique, got {names}")
        missing = {a for s in self.inputs for a in s.dynamic_axes.values()} - set(self.axes)
        if missing:
            raise ConfigError(f"dynamic input axes {sorted(missing)} need an AxisRange in `axes`")

    @property
    def input_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.inputs)

    @property
    def output_names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.outputs)

    def onnx_dynamic_axes(self) -> dict[str, dict[int, str]]:
        """``torch.onnx.export``'s ``dynamic_axes`` argument: tensor name -> {dim index: axis name}."""
        return {s.name: s.dynamic_axes for s in (*self.inputs, *self.outputs) if s.dynamic_axes}

    def profile_shapes(self) -> dict[str, tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        """Input name -> (min, opt, max) shapes for a TensorRT optimisation profile; dynamic inputs only."""
        pick = {k: {a: getattr(r, k) for a, r in self.axes.items()} for k in ("min", "opt", "max")}
        return {
            s.name: (s.concrete_shape(pick["min"]), s.concrete_shape(pick["opt"]), s.concrete_shape(pick["max"]))
            for s in self.inputs
            if s.dynamic_axes
        }

    def example_shapes(self) -> dict[str, tuple[int, ...]]:
        """Input name -> shape at every axis's ``opt`` size (for warm-up and export examples)."""
        opt = {a: r.opt for a, r in self.axes.items()}
        return {s.name: s.concrete_shape(opt) for s in self.inputs}

    def check_inputs(self, inputs: Mapping[str, np.ndarray], where: str = "model") -> dict[str, int]:
        """Check names, dtypes, ranks, fixed sizes and dynamic axes of one call's inputs.

        Args:
            inputs: name -> array, one per contract input.
            where: prefix for error messages (e.g. the model file's name).

        Returns:
            The size of each dynamic axis in this call.

        Raises:
            ModelError: a name missing or unknown, a dtype, rank or size that does not fit.
        """
        missing = set(self.input_names) - inputs.keys()
        unknown = inputs.keys() - set(self.input_names)
        if missing or unknown:
            raise ModelError(
                f"{where}: inputs missing {sorted(missing)} / unknown {sorted(unknown)}; "
                f"the model takes {list(self.input_names)}"
            )
        sizes: dict[str, int] = {}
        for spec in self.inputs:
            arr = inputs[spec.name]
            if np.dtype(arr.dtype).name != spec.dtype:
                raise ModelError(f"{where}: input '{spec.name}' must be {spec.dtype}, got {arr.dtype}")
            if arr.ndim != len(spec.shape):
                raise ModelError(f"{where}: input '{spec.name}' must have shape {spec.shape}, got {arr.shape}")
            for want, got in zip(spec.shape, arr.shape, strict=True):
                if isinstance(want, int) and want != got:
                    raise ModelError(f"{where}: input '{spec.name}' must have shape {spec.shape}, got {arr.shape}")
                if isinstance(want, str):
                    if sizes.setdefault(want, got) != got:
                        raise ModelError(f"{where}: axis '{want}' is {sizes[want]} in one input and {got} in another")
                    r = self.axes[want]
                    if not r.min <= got <= r.max:
                        raise ModelError(f"{where}: axis '{want}' = {got} outside its range [{r.min}, {r.max}]")
        return sizes

    def describe(self) -> str:
        """Human-readable table of the contract (the `export` command prints it)."""
        lines = ["inputs:", *(f"  {s.describe()}" for s in self.inputs), "outputs:"]
        lines += [f"  {s.describe()}" for s in self.outputs]
        lines += [f"axis {a}: {r.min}..{r.max} (opt {r.opt})" for a, r in self.axes.items()]
        return "\n".join(lines)

    @classmethod
    def from_onnx_graph(cls, graph, axes: Mapping[str, AxisRange] | None = None) -> IOContract:
        """The contract an ONNX graph declares (``onnx.GraphProto``); unnamed dynamic dims become ``dim_i``.

        Raises:
            ModelError: a tensor has a dtype the contract cannot express.
        """

        def spec(vi) -> TensorSpec:
            t = vi.type.tensor_type
            if t.elem_type not in _ONNX_TO_NUMPY:
                raise ModelError(f"graph tensor {vi.name} has ONNX element type {t.elem_type}, not supported here")
            dims = tuple(
                d.dim_value if d.HasField("dim_value") else (d.dim_param or f"{vi.name}_dim{i}")
                for i, d in enumerate(t.shape.dim)
            )
            return TensorSpec(vi.name, dims, _ONNX_TO_NUMPY[t.elem_type])

        initializers = {i.name for i in graph.initializer}
        inputs = tuple(spec(vi) for vi in graph.input if vi.name not in initializers)
        outputs = tuple(spec(vi) for vi in graph.output)
        named = {a for s in inputs for a in s.dynamic_axes.values()}
        given = dict(axes or {})
        # An axis nobody gave a range for accepts any size (ONNX Runtime needs none; TensorRT asks for one).
        ranges = {a: given.get(a, AxisRange(1, 1, 2**31 - 1)) for a in named}
        return cls(inputs, outputs, ranges)

    def same_interface(self, other: IOContract) -> list[str]:
        """Differences in names, dtypes and ranks/fixed sizes between two contracts (empty when none)."""
        diffs = []
        for kind, mine, theirs in (("input", self.inputs, other.inputs), ("output", self.outputs, other.outputs)):
            if [s.name for s in mine] != [s.name for s in theirs]:
                diffs.append(f"{kind} names {[s.name for s in mine]} != {[s.name for s in theirs]}")
                continue
            for a, b in zip(mine, theirs, strict=True):
                fixed_a = [d if isinstance(d, int) else None for d in a.shape]
                fixed_b = [d if isinstance(d, int) else None for d in b.shape]
                if a.dtype != b.dtype or fixed_a != fixed_b:
                    diffs.append(f"{kind} {a.name}: {a.dtype} {a.shape} != {b.dtype} {b.shape}")
        return diffs


@runtime_checkable
class InferenceBackend(Protocol):
    """A loaded network on one backend: numpy in, numpy out, names and shapes as in ``contract``."""

    kind: Backend
    contract: IOContract

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once: one array per contract input -> one array per contract output (host memory)."""
        ...

    def describe(self) -> str:
        """One line for logs: backend, version, device, precision."""
        ...


@runtime_checkable
class ExportableNetwork(Protocol):
    """A network the `export` command can write to ONNX: its contract, torch module and example inputs."""

    contract: IOContract

    def torch_module(self) -> Any:
        """The ``torch.nn.Module`` with its weights loaded; forward takes the inputs in contract order."""
        ...

    def example_inputs(self) -> tuple[Any, ...]:
        """One torch tensor per contract input, at the ``opt`` size of every dynamic axis."""
        ...


def outputs_by_name(values: Sequence, names: Sequence[str], where: str) -> dict:
    """Pair a module's flat outputs with the contract's output names (a count mismatch is a ModelError)."""
    if len(values) != len(names):
        raise ModelError(f"{where}: returned {len(values)} outputs, the contract names {len(names)}: {list(names)}")
    return dict(zip(names, values, strict=True))
