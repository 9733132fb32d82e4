"""Backend selection: `backend: tensorrt | onnxruntime | torch | auto` plus `allow_fallback`, logged."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..errors import ModelError
from .config import RuntimeConfig
from .contract import Backend, InferenceBackend, IOContract

log = logging.getLogger(__name__)


def choose_backend(
    requested: Backend | str, *, allow_fallback: bool, tensorrt_problem: str | None
) -> tuple[Backend, str]:
    """Which backend runs, and why (one line for the log). Pure: the TensorRT probe is an argument.

    Args:
        requested: the user's choice; ``auto`` means TensorRT when usable, else ONNX Runtime.
        allow_fallback: ``tensorrt`` asked for but unusable -> ONNX Runtime instead of an error.
        tensorrt_problem: None when TensorRT can run here, else why not (``tensorrt_status()``).

    Returns:
        (backend, reason); never ``Backend.AUTO``.

    Raises:
        ModelError: tensorrt asked for, unusable, and no fallback allowed.
    """
    requested = Backend(requested)
    if requested is Backend.AUTO:
        if tensorrt_problem is None:
            return Backend.TENSORRT, "auto: TensorRT and a CUDA device are present"
        return Backend.ONNXRUNTIME, f"auto: ONNX Runtime, since TensorRT is unusable here ({tensorrt_problem})"
    if requested is Backend.TENSORRT and tensorrt_problem is not None:
        if not allow_fallback:
            raise ModelError(f"backend tensorrt asked for, but {tensorrt_problem}; "
                             "choose onnxruntime, or allow the fallback")
        return Backend.ONNXRUNTIME, f"tensorrt unusable ({tensorrt_problem}); falling back to ONNX Runtime"
    return requested, f"{requested.value} as asked"


def create_backend(
    config: RuntimeConfig,
    contract: IOContract,
    *,
    onnx_path: Path | Callable[[], Path] | None = None,
    torch_module: Callable[[], object] | None = None,
) -> InferenceBackend:
    """Load a network on the backend ``config`` asks for.

    Args:
        config: backend choice and its settings.
        contract: the network's inputs and outputs; every backend is checked against it.
        onnx_path: the ONNX file, or a function that exports it and returns its path (called only
            when an ONNX-based backend is chosen).
        torch_module: a function returning the torch module (called only for the torch backend).

    Returns:
        The loaded backend; its ``kind`` says which one runs (never AUTO).

    Raises:
        ModelError: the chosen backend cannot be loaded (and no fallback applies).
    """
    from .tensorrt_backend import tensorrt_status

    probe = tensorrt_status(config.device) if config.backend in (Backend.TENSORRT, Backend.AUTO) else None
    kind, reason = choose_backend(config.backend, allow_fallback=config.allow_fallback, tensorrt_problem=probe)
    (log.warning if "falling back" in reason else log.info)("runtime backend: %s", reason)
    if kind is Backend.TORCH:
        if torch_module is None:
            raise ModelError("the torch backend needs the network's torch module; none was given")
        from .torch_backend import TorchBackend

        return TorchBackend(torch_module(), contract, threads=config.intra_op_threads)
    if onnx_path is None:
        raise ModelError(f"the {kind.value} backend needs an ONNX file; none was given")
    path = onnx_path() if callable(onnx_path) else Path(onnx_path)
    if kind is Backend.TENSORRT:
        from .tensorrt_backend import TensorRTBackend

        try:
            return TensorRTBackend(path, contract=contract, fp16=config.fp16, cache_dir=config.engine_cache,
                                   engine_path=config.engine_path, workspace_mib=config.workspace_mib,
                                   device=config.device, warmup_runs=config.warmup_runs)
        except ModelError as err:
            if config.backend is not Backend.AUTO and not config.allow_fallback:
                raise
            log.warning("TensorRT failed (%s); falling back to ONNX Runtime", err)
    from .onnxruntime_backend import OnnxRuntimeBackend

    backend = OnnxRuntimeBackend(path, contract=contract, providers=config.providers,
                                 intra_op_threads=config.intra_op_threads, inter_op_threads=config.inter_op_threads,
                                 spin_wait=config.spin_wait)
    shapes = contract.example_shapes()
    for _ in range(config.warmup_runs):
        backend.run({s.name: np.zeros(shapes[s.name], s.dtype) for s in contract.inputs})
    return backend
