"""Export of a torch module to ONNX that ONNX Runtime loads and TensorRT's parser accepts (checked in runtime)."""

from __future__ import annotations

import io
import os
import tempfile
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import onnx
import torch

from ..errors import ModelError
from ..runtime.tensorrt_compat import check_tensorrt_compatible, load_onnx

__all__ = ["DEFAULT_IR_VERSION", "DEFAULT_OPSET", "check_tensorrt_compatible", "export_onnx", "load_onnx"]

DEFAULT_OPSET = 17
# onnx >= 1.19 stamps IR 11+; older runtimes (and TensorRT 10's parser) refuse it. IR 10 covers opset <= 21.
DEFAULT_IR_VERSION = 10


def export_onnx(
    module: torch.nn.Module,
    example_inputs: Sequence[torch.Tensor],
    path: str | Path,
    *,
    input_names: Sequence[str],
    output_names: Sequence[str],
    opset: int = DEFAULT_OPSET,
    ir_version: int = DEFAULT_IR_VERSION,
    dynamic_axes: Mapping[str, Mapping[int, str]] | None = None,
) -> onnx.ModelProto:
    """Export ``module`` with named inputs/outputs (fixed shapes unless made dynamic), check it, write it atomically.

    Uses the TorchScript exporter (``dynamo=False``): it needs no ``onnxscript`` and yields a
    flat graph of standard operators at the requested opset.

    Args:
        module: the network; exported in eval mode. Its forward returns a flat tuple of tensors.
        example_inputs: one tensor per input; their shapes become the graph's fixed shapes.
        path: where the .onnx file goes (its folder is created).
        input_names: a name per input, e.g. ``("image",)``.
        output_names: a name per output, e.g. ``("head_0", "head_1")``.
        opset: ONNX opset of the default domain.
        ir_version: IR version written into the file.
        dynamic_axes: tensor name -> {dimension index: axis name} for dimensions left symbolic
            (``IOContract.onnx_dynamic_axes()``); all others keep the example's size.

    Returns:
        The checked model as written.

    Raises:
        ModelError: the export fails, or the graph's names or checks do not come out right.
    """
    path = Path(path)
    module.eval()
    buffer = io.BytesIO()
    try:
        with torch.no_grad(), warnings.catch_warnings():
            # The TorchScript exporter is deprecated in favour of dynamo; it still works and is what we want here.
            warnings.simplefilter("ignore", DeprecationWarning)
            # Graph readers (ncnn, onnx_module) check shapes in Python; every graph here has fixed shapes.
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.onnx.export(
                module,
                tuple(example_inputs),
                buffer,
                dynamo=False,
                input_names=list(input_names),
                output_names=list(output_names),
                opset_version=opset,
                do_constant_folding=True,
                dynamic_axes={k: dict(v) for k, v in (dynamic_axes or {}).items()} or None,
            )
    except Exception as exc:  # the exporter raises many unrelated types; all mean "cannot export"
        raise ModelError(f"ONNX export of {type(module).__name__} failed: {exc}".splitlines()[0]) from exc
    model = onnx.load_from_string(buffer.getvalue())
    model.ir_version = ir_version
    got_in = [i.name for i in model.graph.input]
    got_out = [o.name for o in model.graph.output]
    if got_in != list(input_names) or got_out != list(output_names):
        raise ModelError(
            f"ONNX export named inputs {got_in} and outputs {got_out}, not {list(input_names)}/{list(output_names)}"
        )
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise ModelError(f"exported ONNX graph fails onnx.checker: {exc}".splitlines()[0]) from exc
    _write_atomically(model, path)
    return model


def _write_atomically(model: onnx.ModelProto, path: Path) -> None:
    """Write to a temporary file in the same folder and rename, so readers never see half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(model.SerializeToString())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
