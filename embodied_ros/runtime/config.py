"""RuntimeConfig: which backend runs a network, and its knobs (one frozen dataclass, used by CLI and node)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .contract import Backend


@dataclass(frozen=True)
class RuntimeConfig:
    """How a network is run. Built by the CLI / ROS parameters, read by ``select.create_backend``."""

    backend: Backend = Backend.AUTO  # tensorrt | onnxruntime | torch | auto (TensorRT if usable, else ORT)
    allow_fallback: bool = False  # tensorrt asked for but unusable -> ONNX Runtime with a warning (else an error)
    providers: tuple[str, ...] | None = None  # ONNX Runtime providers in priority order; None = CUDA if present, CPU
    intra_op_threads: int = 0  # ONNX Runtime / torch threads inside one operator; 0 = library default
    inter_op_threads: int = 0  # ONNX Runtime threads across independent operators; 0 = library default
    # ONNX Runtime's threads busy-wait for the next run. Off: they sleep, and the map's stages (or the map node
    # beside a detector node) keep the cores; on 2 cores a spinning YOLOX-Nano took 88 ms instead of 34 next to a
    # busy process (docs/performance.md).
    spin_wait: bool = False
    fp16: bool = False  # TensorRT: build a half-precision engine (FP16 flag on TRT 10, fp16 ONNX on TRT 11)
    engine_cache: Path | None = None  # folder of cached TensorRT engines; None = <cache_dir()>/engines
    engine_path: Path | None = None  # use/write exactly this engine file instead of the cache folder
    workspace_mib: int = 1024  # TensorRT builder scratch memory limit
    device: int = 0  # CUDA device index (TensorRT, torch on GPU)
    warmup_runs: int = 2  # runs at start-up so the first real frame does not pay for lazy initialisation

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "backend", Backend(self.backend))
        except ValueError:
            raise ConfigError(
                f"backend {self.backend!r} unknown; choose one of {', '.join(b.value for b in Backend)}"
            ) from None
        if self.providers is not None:
            object.__setattr__(self, "providers", tuple(self.providers))
        if self.intra_op_threads < 0 or self.inter_op_threads < 0:
            raise ConfigError("thread counts must be >= 0 (0 = automatic)")
        if self.workspace_mib < 16 or self.warmup_runs < 0 or self.device < 0:
            raise ConfigError(
                f"workspace_mib >= 16, warmup_runs >= 0 and device >= 0 needed, got "
                f"{self.workspace_mib}, {self.warmup_runs}, {self.device}"
            )
