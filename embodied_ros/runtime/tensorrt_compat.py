"""What TensorRT's ONNX parser rejects, checked on the ONNX graph alone (no TensorRT needed).

Every rule names its source. Unless said otherwise it is onnx/onnx-tensorrt ``docs/operators.md``
at the "ONNX-TensorRT 10.1 GA release" (commit 96e7811), the parser TensorRT 10 ships:
its support matrix, its "Restrictions" column and its data-type notes. The data-dependent-shape
rule is this project's (design card: NMS and point voxelisation stay outside the engine), since
TensorRT 10 does parse NonZero and NonMaxSuppression but gives them outputs whose size is known only
after the run, which our fixed-buffer execution (and CUDA graphs) cannot take.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import onnx
from onnx import TensorProto, numpy_helper

from ..errors import ModelError

# operators.md, rows marked "N" (not supported by the parser).
UNSUPPORTED_OPS = frozenset(
    "AffineGrid Bernoulli BitShift BitwiseAnd BitwiseNot BitwiseOr BitwiseXor BlackmanWindow Col2Im "
    "CenterCropPad Compress ConcatFromSequence ConvInteger DFT Det DynamicQuantizeLinear HammingWindow "
    "HannWindow ImageDecoder MatMulInteger MaxRoiPool MaxUnpool MelWeightMatrix Multinomial "
    "NegativeLogLikelihoodLoss Optional OptionalGetElement OptionalHasElement QLinearConv QLinearMatMul "
    "RegexFullMatch STFT SequenceAt SequenceConstruct SequenceEmpty SequenceErase SequenceInsert "
    "SequenceLength SequenceMap SoftmaxCrossEntropyLoss SplitToSequence StringConcat StringNormalizer "
    "StringSplit TfIdfVectorizer Unique".split()
)
# Output shape depends on the input values; keep them after the engine (project rule, see module docstring).
DATA_DEPENDENT_OPS = frozenset({"NonZero", "NonMaxSuppression", "Unique", "Compress"})
# operators.md header: "TensorRT supports the following ONNX data types: DOUBLE, FLOAT32, FLOAT16,
# BFLOAT16, INT32, INT64, FP8, INT8, INT4, UINT8, and BOOL" (FP8 is E4M3FN in TensorRT).
SUPPORTED_DTYPES = frozenset({
    TensorProto.DOUBLE, TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT32,
    TensorProto.INT64, TensorProto.FLOAT8E4M3FN, TensorProto.INT8, TensorProto.INT4, TensorProto.UINT8,
    TensorProto.BOOL,
})
# "TopK: `K` input must be less than 3840"; "`sorted` must be 1".
TOPK_MAX_K = 3840
# TensorRT 10.0 "supports operators in the inclusive range of opset 9 to opset 20".
OPSET_RANGE = (9, 20)
# Resize: "Supported resize modes: `nearest`, `linear`", "Antialiasing is not supported".
RESIZE_MODES = frozenset({"nearest", "linear"})


def check_tensorrt_compatible(model: str | Path | onnx.ModelProto) -> list[str]:
    """List what TensorRT 10's ONNX parser would reject, or what must stay outside the engine.

    Rules (source: onnx-tensorrt operators.md, TensorRT 10.1; see the module docstring):

    - operators the parser does not support (``UNSUPPORTED_OPS``, e.g. Unique, Col2Im, DFT);
    - GridSample on anything but a 4-D input ("Input must be 4D input"); an input whose rank cannot
      be inferred is listed too, since it cannot be shown to be 4-D;
    - ScatterND with a ``reduction`` ("`reduction` is not supported");
    - tensors of a dtype outside the supported list (e.g. uint16, string, complex); UINT8 anywhere but
      a graph input or output ("UINT8 is only supported as network input or output tensor types");
      DOUBLE ("limited support ... cast DOUBLE down to FLOAT, clamping values"): our graphs must
      not silently lose precision, so it is listed as well;
    - data-dependent output shapes inside the engine: NonZero, NonMaxSuppression, Unique, Compress;
      TopK whose K is not a constant, is >= 3840, or ``sorted=0``;
    - MaxPool's ``Indices`` output ("`Indices` output tensor unsupported");
    - Resize with mode ``cubic`` or antialiasing;
    - a default-domain opset outside 9..20.

    Args:
        model: an ONNX file or a loaded model.

    Returns:
        One line per problem (node or tensor name and reason); empty when none was found.

    Raises:
        ModelError: the file is missing or not ONNX.
    """
    if not isinstance(model, onnx.ModelProto):
        model = load_onnx(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # inference is best effort; ranks then come from declared value infos only
        inferred = model
    graph = inferred.graph
    ranks, dtypes = _tensor_facts(graph)
    constants = _constant_values(graph)
    problems: list[str] = []
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is not None and not OPSET_RANGE[0] <= opset <= OPSET_RANGE[1]:
        problems.append(f"opset {opset}: TensorRT 10 parses opsets {OPSET_RANGE[0]}-{OPSET_RANGE[1]}")
    io_names = {vi.name for vi in (*graph.input, *graph.output)}
    by_reason: dict[str, list[str]] = {}  # one line per dtype problem, not one per tensor
    for name, dtype in dtypes.items():
        reason = _dtype_problem(dtype, name in io_names)
        if reason:
            by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
        problems.append(f"tensor{'s' if len(names) > 1 else ''} {shown}: {reason}")
    for node in _all_nodes(graph):
        problems += _node_problems(node, ranks, constants)
    return problems


def _dtype_problem(dtype: int, is_graph_io: bool) -> str | None:
    if dtype == TensorProto.UNDEFINED:
        return None
    if dtype not in SUPPORTED_DTYPES:
        return f"dtype {TensorProto.DataType.Name(dtype)} is not supported by TensorRT"
    if dtype == TensorProto.UINT8 and not is_graph_io:
        return "UINT8 is supported by TensorRT only as a graph input or output"
    if dtype == TensorProto.DOUBLE:
        return "DOUBLE is cast down to float32 by TensorRT (values clamped); export float32"
    return None


def _node_problems(node: onnx.NodeProto, ranks: dict[str, int], constants: dict[str, list[int]]) -> list[str]:
    label = f"{node.op_type} node {node.name or '(unnamed)'}"
    op = node.op_type
    if node.domain not in ("", "ai.onnx"):
        return []  # custom domains are plugins: TensorRT resolves them from its plugin registry at parse time
    if op in UNSUPPORTED_OPS and op not in DATA_DEPENDENT_OPS:
        return [f"{label}: operator not supported by TensorRT's ONNX parser"]
    if op in DATA_DEPENDENT_OPS:
        return [f"{label}: data-dependent output shape; keep it outside the engine (after the network)"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    if op == "GridSample":
        rank = ranks.get(node.input[0])
        if rank is None:
            return [f"{label}: input rank unknown, cannot prove it is 4-D"]
        if rank != 4:
            return [f"{label}: {rank}-D input; TensorRT supports only 4-D GridSample"]
    elif op == "ScatterND":
        reduction = attrs.get("reduction", b"none")
        reduction = reduction.decode() if isinstance(reduction, bytes) else str(reduction)
        if reduction != "none":
            return [f"{label}: reduction={reduction!r}; TensorRT supports only plain ScatterND"]
    elif op == "TopK":
        k = constants.get(node.input[1]) if len(node.input) > 1 else None
        if k is None:
            return [f"{label}: K is not a constant (data-dependent output shape)"]
        if k and k[0] >= TOPK_MAX_K:
            return [f"{label}: K={k[0]}; TensorRT needs K < {TOPK_MAX_K}"]
        if attrs.get("sorted", 1) != 1:
            return [f"{label}: sorted=0; TensorRT needs sorted=1"]
    elif op == "MaxPool" and len(node.output) > 1 and node.output[1]:
        return [f"{label}: the Indices output is not supported by TensorRT"]
    elif op == "Resize":
        mode = attrs.get("mode", b"nearest")
        mode = mode.decode() if isinstance(mode, bytes) else str(mode)
        if mode not in RESIZE_MODES:
            return [f"{label}: mode={mode!r}; TensorRT supports nearest and linear"]
        if attrs.get("antialias", 0):
            return [f"{label}: antialias=1 is not supported by TensorRT"]
    return []


def load_onnx(path: str | Path) -> onnx.ModelProto:
    """Load an ONNX file; ModelError (one line) when it is missing or not a valid ONNX protobuf."""
    path = Path(path)
    if not path.is_file():
        raise ModelError(f"ONNX model not found: {path}")
    try:
        return onnx.load(str(path))
    except Exception as exc:  # protobuf's DecodeError and friends
        raise ModelError(f"{path}: not a readable ONNX model ({type(exc).__name__})") from exc


def _tensor_facts(graph: onnx.GraphProto) -> tuple[dict[str, int], dict[str, int]]:
    """Tensor name -> rank and -> element type, wherever the graph (or a subgraph) declares them."""
    ranks: dict[str, int] = {}
    dtypes: dict[str, int] = {}
    for g in _all_graphs(graph):
        for vi in [*g.input, *g.value_info, *g.output]:
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type"):
                dtypes[vi.name] = t.elem_type
                if t.HasField("shape"):
                    ranks[vi.name] = len(t.shape.dim)
        for init in g.initializer:
            ranks[init.name] = len(init.dims)
            dtypes[init.name] = init.data_type
        for node in g.node:
            if node.op_type == "Constant":
                for a in node.attribute:
                    if a.type == onnx.AttributeProto.TENSOR:
                        dtypes[node.output[0]] = a.t.data_type
                        ranks[node.output[0]] = len(a.t.dims)
    return ranks, dtypes


def _constant_values(graph: onnx.GraphProto) -> dict[str, list[int]]:
    """Small integer constants (initializers and Constant nodes) by name, e.g. TopK's K."""
    values: dict[str, list[int]] = {}
    tensors = [(i.name, i) for g in _all_graphs(graph) for i in g.initializer]
    tensors += [
        (n.output[0], a.t)
        for g in _all_graphs(graph)
        for n in g.node
        if n.op_type == "Constant"
        for a in n.attribute
        if a.type == onnx.AttributeProto.TENSOR
    ]
    for name, t in tensors:
        if t.data_type in (TensorProto.INT64, TensorProto.INT32) and len(t.dims) <= 1:
            values[name] = [int(v) for v in numpy_helper.to_array(t).reshape(-1)]
    return values


def _all_graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _all_graphs(attr.g)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for g in attr.graphs:
                    yield from _all_graphs(g)


def _all_nodes(graph: onnx.GraphProto) -> Iterator[onnx.NodeProto]:
    """Every node, including those inside If/Loop/Scan bodies."""
    for g in _all_graphs(graph):
        yield from g.node
