"""`embodied-ros export`: a network to ONNX (checked for TensorRT, verified in ONNX Runtime), optionally an engine.

Wiring (cli/models.py)::

    p = sub.add_parser("export", help="export a network to ONNX (and a TensorRT engine)")
    add_export_arguments(p)
    p.set_defaults(func=cmd_export)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import numpy as np

from ..errors import ConfigError, ModelError
from ..runtime.contract import ExportableNetwork, IOContract

if TYPE_CHECKING:  # onnx is imported where it is used: every `embodied-ros` command builds this parser
    import onnx

# Random inputs in [0, 1) for the post-export check: the networks' inputs are images/volumes in that range.
_CHECK_SEED = 0


def export_network(network: ExportableNetwork, path: str | Path) -> onnx.ModelProto:
    """Export ``network`` to ONNX with its contract's names, shapes, dtypes and dynamic axes.

    Args:
        network: anything with ``contract``, ``torch_module()`` and ``example_inputs()``.
        path: the .onnx file to write (atomically; its folder is created).

    Returns:
        The checked model as written (IR version ``DEFAULT_IR_VERSION``, opset ``DEFAULT_OPSET``).

    Raises:
        ModelError: the export fails or the graph does not declare the contract's interface.
    """
    from .onnx_export import export_onnx

    contract = network.contract
    model = export_onnx(network.torch_module(), network.example_inputs(), path,
                        input_names=contract.input_names, output_names=contract.output_names,
                        dynamic_axes=contract.onnx_dynamic_axes())
    diffs = contract.same_interface(IOContract.from_onnx_graph(model.graph))
    if diffs:
        raise ModelError(f"{path}: exported graph does not declare the contract: {'; '.join(diffs)}")
    return model


def random_inputs(contract: IOContract, seed: int = _CHECK_SEED) -> dict[str, np.ndarray]:
    """Inputs of the contract's ``opt`` shapes, uniform in [0, 1) (integers: 0), for checks and benchmarks."""
    rng = np.random.default_rng(seed)
    shapes = contract.example_shapes()
    return {
        s.name: rng.random(shapes[s.name]).astype(s.dtype) if s.dtype.startswith("float")
        else np.zeros(shapes[s.name], s.dtype)
        for s in contract.inputs
    }


def max_differences(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> tuple[float, float]:
    """(max |a - b|, max |a - b| / max(|b|)) over all outputs: the parity figures the tests and tools print."""
    abs_diff = max(float(np.max(np.abs(a[n].astype(np.float64) - b[n]))) if a[n].size else 0.0 for n in b)
    scale = max(float(np.max(np.abs(b[n]))) if b[n].size else 0.0 for n in b)
    return abs_diff, abs_diff / scale if scale > 0 else 0.0


def export_command(
    model: str,
    *,
    onnx_path: Path,
    weights: Path | None = None,
    engine_path: Path | None = None,
    fp16: bool = False,
    download: bool = False,
    out: TextIO | None = None,
) -> int:
    """Export the perceptor ``model``'s network to ONNX (and build a TensorRT engine if asked).

    Prints the contract (names, shapes, dtypes), the TensorRT compatibility findings, and the
    ONNX Runtime vs PyTorch difference on one random input; with ``engine_path``, the engine's
    key and its difference to ONNX Runtime.

    Args:
        model: a perceptor name (``registry.build_perceptor``), e.g. "yolo-fastest-1.1-xl".
        onnx_path: the .onnx file to write.
        weights: weights file or folder (as for `run`).
        engine_path: also build the TensorRT engine here (needs tensorrt and a CUDA device).
        fp16: build the engine in half precision.
        download: fetch missing weights from their pinned URL (sha256-checked).
        out: where to print (default stdout).

    Returns:
        0 on success.

    Raises:
        ModelError: unknown model or weights, export failure, a graph TensorRT would reject while an
            engine is asked for, or no TensorRT/GPU for the engine. (The CLI prints it as one line.)
    """
    from ..runtime.onnxruntime_backend import OnnxRuntimeBackend
    from ..runtime.torch_backend import TorchBackend
    from .registry import build_perceptor

    out = out or sys.stdout
    if engine_path is not None:
        from ..runtime.tensorrt_backend import tensorrt_status

        why_not = tensorrt_status()
        if why_not is not None:  # say so before minutes of work, not after
            raise ModelError(f"--engine needs TensorRT: {why_not}")
    perceptor = build_perceptor(model, weights=weights, download=download, backend="torch")
    network = getattr(perceptor, "detector", None) or getattr(perceptor, "network", perceptor)
    if not isinstance(network, ExportableNetwork):
        raise ModelError(f"model {model!r} has no exportable network")
    exported = export_network(network, onnx_path)
    print(f"wrote {onnx_path} (ONNX IR {exported.ir_version}, opset {exported.opset_import[0].version})", file=out)
    print(network.contract.describe(), file=out)
    from ..runtime.tensorrt_compat import check_tensorrt_compatible

    problems = check_tensorrt_compatible(exported)
    for p in problems:
        print(f"TensorRT: {p}", file=out)
    if not problems:
        print("TensorRT compatibility check: no problems found", file=out)
    inputs = random_inputs(network.contract)
    ort = OnnxRuntimeBackend(onnx_path, contract=network.contract)
    ort_out = ort.run(inputs)
    abs_d, rel_d = max_differences(ort_out, TorchBackend(network.torch_module(), network.contract).run(inputs))
    print(f"ONNX Runtime vs PyTorch on a random input: max abs diff {abs_d:.2e}, relative {rel_d:.2e}", file=out)
    if engine_path is None:
        return 0
    if problems:
        raise ModelError(f"{onnx_path}: TensorRT would reject the graph ({len(problems)} problems above)")
    from ..runtime.tensorrt_backend import TensorRTBackend

    trt = TensorRTBackend(onnx_path, contract=network.contract, fp16=fp16, engine_path=engine_path, warmup_runs=1)
    print(f"{'built' if trt.built else 'reused'} {engine_path}: {trt.describe()}", file=out)
    abs_d, rel_d = max_differences(trt.run(inputs), ort_out)
    print(f"TensorRT vs ONNX Runtime on a random input: max abs diff {abs_d:.2e}, relative {rel_d:.2e}", file=out)
    return 0


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    """The `export` subcommand's options."""
    from .weights import DEFAULT_MODEL

    p.add_argument("--model", default=DEFAULT_MODEL,
                   help="perceptor whose network to export, e.g. yolox-nano, nanodet-plus-m-416 (%(default)s)")
    p.add_argument("--weights", type=Path, default=None, help="weights file or folder (as for `run`)")
    p.add_argument("--download-weights", action="store_true", help="fetch missing weights (sha256-checked)")
    p.add_argument("--onnx", type=Path, required=True, help="ONNX file to write")
    p.add_argument("--engine", type=Path, default=None, help="also build a TensorRT engine here (NVIDIA GPU)")
    p.add_argument("--fp16", action="store_true", help="half-precision TensorRT engine")


def cmd_export(args: argparse.Namespace) -> int:
    """`embodied-ros export` from parsed arguments."""
    if args.fp16 and args.engine is None:
        raise ConfigError("--fp16 applies to the TensorRT engine; give --engine OUT.engine too")
    return export_command(args.model, onnx_path=args.onnx, weights=args.weights, engine_path=args.engine,
                          fp16=args.fp16, download=args.download_weights)
