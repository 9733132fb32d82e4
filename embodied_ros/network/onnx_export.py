"""Export of a torch module to ONNX that ONNX Runtime loads and TensorRT's parser accepts."""

from __future__ import annotations

import io
import os
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import onnx
import torch

from ..errors import ModelError

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
) -> onnx.ModelProto:
    """Export ``module`` with fixed input shapes and names, check it, and write it atomically.

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
            torch.onnx.export(
                module,
                tuple(example_inputs),
                buffer,
                dynamo=False,
                input_names=list(input_names),
                output_names=list(output_names),
                opset_version=opset,
                do_constant_folding=True,
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


def check_tensorrt_compatible(model: str | Path | onnx.ModelProto) -> list[str]:
    """List what TensorRT's ONNX parser would reject: 5-D GridSample and ScatterND with a reduction.

    A GridSample whose input rank cannot be inferred is listed too, since it cannot be shown to be 4-D.

    Args:
        model: an ONNX file or a loaded model.

    Returns:
        One line per problem (node name and reason); empty when none was found.

    Raises:
        ModelError: the file is missing or not ONNX.
    """
    if not isinstance(model, onnx.ModelProto):
        model = load_onnx(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference is best effort; ranks then come from declared value infos only
        inferred = model
    ranks = _known_ranks(inferred.graph)
    problems: list[str] = []
    for node in _all_nodes(inferred.graph):
        label = f"{node.op_type} node {node.name or '(unnamed)'}"
        if node.op_type == "GridSample":
            rank = ranks.get(node.input[0])
            if rank is None:
                problems.append(f"{label}: input rank unknown, cannot prove it is 4-D")
            elif rank != 4:
                problems.append(f"{label}: {rank}-D input; TensorRT supports only 4-D GridSample")
        elif node.op_type == "ScatterND":
            reduction = next((a.s.decode() for a in node.attribute if a.name == "reduction"), "none")
            if reduction != "none":
                problems.append(f"{label}: reduction={reduction!r}; TensorRT supports only plain ScatterND")
    return problems


def load_onnx(path: str | Path) -> onnx.ModelProto:
    """Load an ONNX file; ModelError (one line) when it is missing or not a valid ONNX protobuf."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"ONNX model not found: {path}")
    try:
        return onnx.load(str(path))
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelError(f"{path}: not a readable ONNX model ({type(exc).__name__})") from exc


def _known_ranks(graph: onnx.GraphProto, ranks: dict[str, int] | None = None) -> dict[str, int]:
    """Tensor name -> rank, wherever the graph (or a subgraph) declares a shape."""
    ranks = {} if ranks is None else ranks
    for vi in [*graph.input, *graph.value_info, *graph.output]:
        t = vi.type.tensor_type
        if t.HasField("shape"):
            ranks[vi.name] = len(t.shape.dim)
    for init in graph.initializer:
        ranks[init.name] = len(init.dims)
    for node in graph.node:
        for attr in node.attribute:
            for sub in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                _known_ranks(sub, ranks)
    return ranks


def _all_nodes(graph: onnx.GraphProto):
    """Every node, including those inside If/Loop/Scan bodies."""
    for node in graph.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _all_nodes(g)


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
