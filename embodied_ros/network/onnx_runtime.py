"""A thin ONNX Runtime session: chosen providers and threads, named inputs and outputs, clear errors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort

from ..errors import ModelError

# Preferred order when the caller names no providers; others (e.g. Azure) are only used on request.
_DEFAULT_PROVIDERS = ("CUDAExecutionProvider", "CPUExecutionProvider")


class OrtSession:
    """One ONNX model loaded into ONNX Runtime.

    Attributes:
        path: the .onnx file.
        providers: execution providers in use, in priority order.
        input_names / output_names: the graph's names, in graph order.
        input_shapes: name -> declared shape (ints, or strings for symbolic dimensions).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        providers: Sequence[str] | None = None,
        intra_op_threads: int = 0,
        inter_op_threads: int = 0,
    ):
        """Load ``path``.

        Args:
            path: the .onnx file.
            providers: execution providers in priority order; default CUDA (if installed), then CPU.
            intra_op_threads: threads inside one operator; 0 lets ORT choose (one per core).
            inter_op_threads: threads across independent operators; 0 lets ORT choose.

        Raises:
            ModelError: missing or corrupt file, or a provider this onnxruntime does not have.
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
        options.log_severity_level = 3  # errors only: ORT's warnings would flood a robot's log
        try:
            self._session = ort.InferenceSession(str(self.path), sess_options=options, providers=list(providers))
        except Exception as exc:  # ORT raises its own pybind exception types (InvalidProtobuf, Fail, ...)
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ModelError(f"{self.path}: ONNX Runtime cannot load it: {reason}") from exc
        self.providers = tuple(self._session.get_providers())
        self.input_names = tuple(i.name for i in self._session.get_inputs())
        self.output_names = tuple(o.name for o in self._session.get_outputs())
        self.input_shapes = {i.name: tuple(i.shape) for i in self._session.get_inputs()}

    def run(self, inputs: Mapping[str, np.ndarray], output_names: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        """Run the model.

        Args:
            inputs: name -> array for every graph input (dtype and shape as the graph declares).
            output_names: the outputs wanted; default all.

        Returns:
            name -> array for each requested output.

        Raises:
            ModelError: inputs missing or unknown, or the run fails (e.g. wrong shape or dtype).
        """
        wanted = tuple(output_names) if output_names is not None else self.output_names
        missing = set(self.input_names) - inputs.keys()
        unknown = inputs.keys() - set(self.input_names)
        if missing or unknown:
            raise ModelError(
                f"{self.path.name}: inputs missing {sorted(missing)} / unknown {sorted(unknown)}; "
                f"the model takes {list(self.input_names)}"
            )
        try:
            values = self._session.run(list(wanted), dict(inputs))
        except Exception as exc:  # ORT's pybind errors: bad shape, dtype, unknown output name
            raise ModelError(f"{self.path.name}: ONNX Runtime run failed: {str(exc).splitlines()[0]}") from exc
        return dict(zip(wanted, values, strict=True))
