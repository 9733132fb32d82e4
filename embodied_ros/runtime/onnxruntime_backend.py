"""ONNX Runtime backend: an ONNX file in an InferenceSession with chosen providers and thread counts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from ..errors import ModelError
from .contract import AxisRange, Backend, IOContract, TensorSpec

# Preferred order when the caller names no providers; others (e.g. Azure) are only used on request.
_DEFAULT_PROVIDERS = ("CUDAExecutionProvider", "CPUExecutionProvider")


class OnnxRuntimeBackend:
    """One ONNX model loaded into ONNX Runtime.

    Attributes:
        kind: ``Backend.ONNXRUNTIME``.
        path: the .onnx file.
        contract: the graph's inputs/outputs (names, shapes, dtypes), checked on every run.
        providers: execution providers in use, in priority order.
        input_names / output_names: the graph's names, in graph order.
        input_shapes: name -> declared shape (ints, or strings for symbolic dimensions).
    """

    kind = Backend.ONNXRUNTIME

    def __init__(
        self,
        path: str | Path,
        *,
        contract: IOContract | None = None,
        providers: Sequence[str] | None = None,
        intra_op_threads: int = 0,
        inter_op_threads: int = 0,
        spin_wait: bool = False,
    ):
        """Load ``path``.

        Args:
            path: the .onnx file.
            contract: the interface the caller expects; the graph must match it in names, dtypes and
                fixed sizes (its axis ranges are then used to check inputs). None = take the graph's.
            providers: execution providers in priority order; default CUDA (if installed), then CPU.
            intra_op_threads: threads inside one operator; 0 lets ORT choose (one per core).
            inter_op_threads: threads across independent operators; 0 lets ORT choose.
            spin_wait: the threads busy-wait between runs (ORT's default); off, they sleep and leave the cores to
                the rest of the process and machine.

        Raises:
            ModelError: missing or corrupt file, a provider this onnxruntime does not have, or a
                graph that does not match ``contract``.
        """
        self.path = Path(path)
        if not self.path.is_file():
            raise ModelError(f"ONNX model not found: {self.path}")
        available = ort.get_available_providers()
        if providers is None:
            providers = [p for p in _DEFAULT_PROVIDERS if p in available]
        missing = [p for p in providers if p not in available]
        if missing or not providers:
            raise ModelError(f"ONNX Runtime providers {missing or 'none'} unavailable; this install has {available}")
        if intra_op_threads < 0 or inter_op_threads < 0:
            raise ModelError("ONNX Runtime thread counts must be >= 0 (0 = automatic)")
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = inter_op_threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin_wait else "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "1" if spin_wait else "0")
        options.log_severity_level = 3  # errors only: ORT's warnings would flood a robot's log
        try:
            self._session = ort.InferenceSession(str(self.path), sess_options=options, providers=list(providers))
        except Exception as exc:  # ORT raises its own pybind exception types (InvalidProtobuf, Fail, ...)
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ModelError(f"{self.path}: ONNX Runtime cannot load it: {reason}") from exc
        self.providers = tuple(self._session.get_providers())
        self.threads = (intra_op_threads, inter_op_threads)
        self.spin_wait = spin_wait
        self.input_names = tuple(i.name for i in self._session.get_inputs())
        self.output_names = tuple(o.name for o in self._session.get_outputs())
        self.input_shapes = {i.name: tuple(i.shape) for i in self._session.get_inputs()}
        declared = _contract_of_session(self._session)
        if contract is not None:
            diffs = contract.same_interface(declared)
            if diffs:
                raise ModelError(f"{self.path}: graph does not match the expected contract: {'; '.join(diffs)}")
        self.contract = contract or declared

    def run(self, inputs: Mapping[str, np.ndarray], output_names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Run the model.

        Args:
            inputs: name -> array for every graph input (dtype and shape as the contract declares).
            output_names: the outputs wanted; default all.

        Returns:
            name -> array for each requested output.

        Raises:
            ModelError: inputs missing, unknown or of the wrong dtype/shape, or the run fails.
        """
        self.contract.check_inputs(inputs, self.path.name)
        wanted = tuple(output_names) if output_names is not None else self.output_names
        try:
            values = self._session.run(list(wanted), dict(inputs))
        except Exception as exc:  # ORT's pybind errors: unknown output name, kernel failures
            raise ModelError(f"{self.path.name}: ONNX Runtime run failed: {str(exc).splitlines()[0]}") from exc
        return dict(zip(wanted, values, strict=True))

    def describe(self) -> str:
        intra, inter = self.threads
        return (
            f"onnxruntime {ort.__version__} ({', '.join(self.providers)}; threads intra {intra or 'auto'}, "
            f"inter {inter or 'auto'}) {self.path.name}"
        )


def _contract_of_session(session: ort.InferenceSession) -> IOContract:
    """The contract the loaded graph declares, from ORT's NodeArgs (type strings like 'tensor(float)')."""

    def spec(arg) -> TensorSpec:
        dtype = _ORT_TYPES.get(arg.type)
        if dtype is None:
            raise ModelError(f"graph tensor {arg.name} has type {arg.type}, not supported by the runtime contract")
        dims = tuple(d if isinstance(d, int) else (d or f"{arg.name}_dim{i}") for i, d in enumerate(arg.shape))
        return TensorSpec(arg.name, dims, dtype)

    inputs = tuple(spec(a) for a in session.get_inputs())
    outputs = tuple(spec(a) for a in session.get_outputs())
    # The graph carries no ranges for its symbolic axes: accept any size (ORT needs none).
    axes = {a: AxisRange(1, 1, 2**31 - 1) for s in inputs for a in s.dynamic_axes.values()}
    return IOContract(inputs, outputs, axes)


_ORT_TYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(int8)": "int8",
    "tensor(uint8)": "uint8",
    "tensor(bool)": "bool",
}
