"""TensorRT backend: an engine built from the ONNX file on first use, cached on disk, run on a CUDA stream.

TensorRT 10 and 11 differ in how reduced precision is asked for (NVIDIA's "Migrating from TensorRT
10.x to 11.x": "TensorRT 11.x removes all weak typing APIs", BuilderFlag.FP16 included):

- TensorRT 10 (weakly typed, as on Jetson): the FP16 builder flag lets TensorRT pick fp16 kernels.
- TensorRT 11 (strongly typed only): precision comes from the ONNX tensor types, so for fp16 the
  graph is first converted to fp16 (weights and activations; inputs/outputs stay float32) with
  ONNX Runtime's float16 converter, and that graph is built. Ops that overflow in fp16 would need
  a block list (NVIDIA suggests ModelOpt AutoCast); our networks are conv nets that do not.

The module imports without tensorrt: its pure helpers (``fp16_onnx``, ``tensorrt_status``) and the
cache logic (engine_cache.py) work anywhere; the backend itself needs tensorrt and a CUDA device.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ModelError
from .contract import Backend, IOContract
from .engine_cache import EngineKey, cache_decision, cached_engine_path, write_engine

if TYPE_CHECKING:  # onnx is imported where it is used: backend selection probes tensorrt_status on every run
    import onnx

log = logging.getLogger(__name__)

# An axis range this large means "nobody said"; TensorRT needs a real maximum to plan memory.
_UNBOUNDED = 2**31 - 1


def tensorrt_status(device: int = 0) -> str | None:
    """None when TensorRT can run here, else one line saying why not (no package, no CUDA device)."""
    try:
        import tensorrt  # noqa: F401  (probe only)
    except ImportError:
        return "the tensorrt Python package is not installed (pip install tensorrt, or use JetPack's)"
    except Exception as exc:  # a broken install (missing libnvinfer) raises OSError and friends
        return f"tensorrt cannot be imported: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device is visible to torch (TensorRT needs an NVIDIA GPU and a CUDA build of torch)"
    if device >= torch.cuda.device_count():
        return f"CUDA device {device} asked for, but only {torch.cuda.device_count()} present"
    return None


def fp16_onnx(model: onnx.ModelProto) -> onnx.ModelProto:
    """The graph with float32 weights and activations turned to float16; inputs and outputs stay float32.

    What a strongly typed TensorRT (11) builds for fp16. Uses ONNX Runtime's converter
    (``onnxruntime.transformers.float16``), which adds Casts at the graph's edges.

    Raises:
        ModelError: the conversion fails.
    """
    from onnxruntime.transformers.float16 import convert_float_to_float16

    try:
        converted = convert_float_to_float16(model, keep_io_types=True, disable_shape_infer=False)
    except Exception as exc:  # the converter raises plain Exceptions on graphs it cannot type
        raise ModelError(f"fp16 conversion of the ONNX graph failed: {str(exc).splitlines()[0]}") from exc
    converted.ir_version = model.ir_version
    _sort_topologically(converted.graph)  # the converter appends its input Casts at the end
    return converted


def _sort_topologically(graph: onnx.GraphProto) -> None:
    """Reorder ``graph.node`` so every node comes after the producers of its inputs (Kahn's algorithm)."""
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    pending = list(graph.node)
    ordered: list[onnx.NodeProto] = []
    while pending:
        ready = [n for n in pending if all(i in available for i in n.input)]
        if not ready:  # a cycle or a dangling input: keep the rest as it was, the checker will say why
            ordered += pending
            break
        for n in ready:
            available.update(n.output)
        ordered += ready
        ready_ids = {id(n) for n in ready}
        pending = [n for n in pending if id(n) not in ready_ids]
    import onnx

    nodes = [onnx.NodeProto.FromString(n.SerializeToString()) for n in ordered]
    del graph.node[:]
    graph.node.extend(nodes)


def _engine_contract(onnx_path: Path, model: onnx.ModelProto, contract: IOContract | None) -> IOContract:
    """The interface the engine is built for: ``contract`` when it matches the graph's, else the graph's own.

    Raises:
        ModelError: the graph does not match ``contract``, or a dynamic axis has no range (TensorRT's
            optimisation profile needs one).
    """
    declared = IOContract.from_onnx_graph(model.graph)
    if contract is not None:
        diffs = contract.same_interface(declared)
        if diffs:
            raise ModelError(f"{onnx_path}: graph does not match the expected contract: {'; '.join(diffs)}")
    chosen = contract or declared
    unbounded = sorted(a for a, r in chosen.axes.items() if r.max >= _UNBOUNDED)
    if unbounded:
        raise ModelError(f"{onnx_path.name}: dynamic axes {unbounded} need a range (IOContract.axes) "
                         "for TensorRT's optimisation profile")
    return chosen


def gpu_identity(device: int = 0) -> tuple[str, str]:
    """(GPU name, compute capability "major.minor") of a CUDA device, as the engine key records them."""
    import torch

    major, minor = torch.cuda.get_device_capability(device)
    return torch.cuda.get_device_name(device), f"{major}.{minor}"


class TensorRTBackend:
    """An ONNX graph as a TensorRT engine, built on first use and cached (see engine_cache.py).

    Attributes:
        kind: ``Backend.TENSORRT``.
        contract: inputs/outputs (names, shapes, dtypes, dynamic axis ranges), checked on every run.
        engine_path: the engine file in use.
        key: what the engine was built for (ONNX sha256, TensorRT version, GPU, precision, profiles).
        built: True when this instance built the engine, False when it came from the cache.
    """

    kind = Backend.TENSORRT

    def __init__(
        self,
        onnx_path: str | Path,
        *,
        contract: IOContract | None = None,
        fp16: bool = False,
        cache_dir: str | Path | None = None,
        engine_path: str | Path | None = None,
        workspace_mib: int = 1024,
        device: int = 0,
        warmup_runs: int = 2,
    ):
        """Load the cached engine for ``onnx_path`` on this GPU and TensorRT, or build and cache it.

        Args:
            onnx_path: the ONNX graph.
            contract: expected interface; needed when the graph has dynamic axes (their ranges become
                the optimisation profile). None = the graph's own (fixed shapes only).
            fp16: half-precision engine (TensorRT 10: FP16 flag; 11: fp16 graph, see module docstring).
            cache_dir: folder for cached engines (default ``<cache_dir()>/engines``).
            engine_path: use exactly this engine file (built there if absent or stale).
            workspace_mib: builder scratch memory limit.
            device: CUDA device index.
            warmup_runs: runs with zero inputs before returning, so the first frame is not slow.

        Raises:
            ModelError: no tensorrt or no GPU, a missing/corrupt ONNX file, a parse or build failure, or
                an engine whose tensors do not match the contract.
        """
        from .tensorrt_compat import load_onnx

        self.onnx_path = Path(onnx_path)
        model = load_onnx(self.onnx_path)  # missing or corrupt ONNX -> ModelError before anything else
        self.contract = _engine_contract(self.onnx_path, model, contract)
        # The file and contract errors above come first: they are the user's to fix on any machine.
        why_not = tensorrt_status(device)
        if why_not is not None:
            raise ModelError(f"TensorRT backend unavailable: {why_not}")
        import tensorrt as trt
        import torch

        self._trt, self._torch = trt, torch
        self.device = device
        self.fp16 = fp16
        self._workspace_mib = workspace_mib
        self._logger = trt.Logger(trt.Logger.WARNING)
        self._engine = self._cached_or_built_engine(model, cache_dir, engine_path)
        self._check_engine_tensors()
        self._start_context(warmup_runs)

    def _cached_or_built_engine(self, model: onnx.ModelProto, cache_dir: str | Path | None,
                                engine_path: str | Path | None):
        """The engine of ``self.key``: the cached file when it fits this GPU and TensorRT, else built and
        written (sets ``key``, ``engine_path`` and ``built``)."""
        from .engine_cache import cache_dir as default_cache_dir
        from .engine_cache import sha256_file

        trt = self._trt
        profiles = self.contract.profile_shapes()
        gpu_name, capability = gpu_identity(self.device)
        self.key = EngineKey.from_profiles(sha256_file(self.onnx_path), trt.__version__, gpu_name, capability,
                                           "fp16" if self.fp16 else "fp32", profiles)
        cache = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "engines"
        stem = self.onnx_path.stem
        self.engine_path = Path(engine_path) if engine_path else cached_engine_path(cache, stem, self.key)
        reuse, reason = cache_decision(self.engine_path, self.key, search_dir=None if engine_path else cache)
        engine = None
        self.built = False
        if reuse:
            engine = self._deserialize(self.engine_path.read_bytes())
            if engine is None:
                reason = f"{self.engine_path.name} could not be deserialised (corrupt or incompatible); rebuilding"
        log.info("TensorRT engine for %s: %s", self.onnx_path.name, reason)
        if engine is None:
            engine_bytes = self._build(model)
            write_engine(self.engine_path, engine_bytes, self.key)
            engine = self._deserialize(engine_bytes)
            if engine is None:
                raise ModelError(f"TensorRT cannot deserialise the engine it just built for {self.onnx_path.name}")
            self.built = True
            log.info("TensorRT engine built and cached: %s", self.engine_path)
        return engine

    def _start_context(self, warmup_runs: int) -> None:
        """The execution context and CUDA stream on ``self.device``, then ``warmup_runs`` runs on zeros."""
        torch = self._torch
        with torch.cuda.device(self.device):
            self._context = self._engine.create_execution_context()
            self._stream = torch.cuda.Stream(self.device)
        if self._context is None:
            raise ModelError(f"TensorRT could not create an execution context for {self.engine_path.name}")
        shapes = self.contract.example_shapes()
        example = {s.name: np.zeros(shapes[s.name], s.dtype) for s in self.contract.inputs}
        for _ in range(warmup_runs):
            self.run(example)

    # -- building -----------------------------------------------------------------------------------

    def _build(self, model: onnx.ModelProto) -> bytes:
        """Parse the ONNX graph and build a serialised engine (minutes for big graphs)."""
        trt = self._trt
        strongly_typed = not hasattr(trt.BuilderFlag, "FP16")  # TensorRT 11 removed the weak-typing flags
        builder = trt.Builder(self._logger)
        flags = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED) if strongly_typed else 0
        network = builder.create_network(flags)
        parser = trt.OnnxParser(network, self._logger)
        with tempfile.TemporaryDirectory(prefix="embodied_ros_trt_") as tmp:
            source = self.onnx_path
            if self.fp16 and strongly_typed:
                import onnx

                source = Path(tmp) / f"{self.onnx_path.stem}.fp16.onnx"
                onnx.save(fp16_onnx(model), str(source))
            if not parser.parse_from_file(str(source)):
                errors = "; ".join(_parser_error(parser.get_error(i)) for i in range(parser.num_errors))
                raise ModelError(f"TensorRT cannot parse {self.onnx_path.name}: {errors or 'unknown error'}")
        config = builder.create_builder_config()
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, self._workspace_mib << 20)
        if self.fp16 and not strongly_typed:
            config.set_flag(trt.BuilderFlag.FP16)
        profiles = self.contract.profile_shapes()
        if profiles:
            profile = builder.create_optimization_profile()
            for name, (lo, opt, hi) in profiles.items():
                profile.set_shape(name, lo, opt, hi)
            config.add_optimization_profile(profile)
        log.info("building a TensorRT %s engine for %s (%s typing) ...", trt.__version__, self.onnx_path.name,
                 "strong" if strongly_typed else "weak")
        serialized = builder.build_serialized_network(network, config)
        if serialized is None:
            raise ModelError(f"TensorRT failed to build an engine for {self.onnx_path.name} (see its log above)")
        return bytes(serialized)

    def _deserialize(self, data: bytes):
        # The runtime is kept: TensorRT wants it alive as long as engines it deserialised.
        if not hasattr(self, "_runtime"):
            self._runtime = self._trt.Runtime(self._logger)
        try:
            return self._runtime.deserialize_cuda_engine(data)
        except Exception:  # some versions raise instead of returning None on a foreign engine
            return None

    def _check_engine_tensors(self) -> None:
        trt = self._trt
        names = [self._engine.get_tensor_name(i) for i in range(self._engine.num_io_tensors)]
        inputs = [n for n in names if self._engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        outputs = [n for n in names if n not in inputs]
        if sorted(inputs) != sorted(self.contract.input_names) or sorted(outputs) != sorted(self.contract.output_names):
            raise ModelError(f"{self.engine_path.name}: engine tensors {inputs} -> {outputs} do not match the "
                             f"contract {list(self.contract.input_names)} -> {list(self.contract.output_names)}")

    # -- running ------------------------------------------------------------------------------------

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Numpy in, numpy out (host memory): copies to the GPU, runs, copies back.

        Raises:
            ModelError: inputs that do not fit the contract, or a failed execution.
        """
        self.contract.check_inputs(inputs, self.engine_path.name)
        torch = self._torch
        with torch.cuda.device(self.device):
            tensors = {n: torch.from_numpy(np.ascontiguousarray(a)).to(f"cuda:{self.device}")
                       for n, a in inputs.items()}
            out = self.run_torch(tensors)
            return {n: t.cpu().numpy() for n, t in out.items()}

    def run_torch(self, inputs: Mapping[str, object]) -> dict[str, object]:
        """Run on torch CUDA tensors, no host copies: name -> tensor in, name -> tensor out (on the GPU).

        The inputs must already be on this backend's device with the contract's dtypes and shapes.
        Outputs are new tensors, valid after this call returns (the stream is synchronised).
        """
        torch, ctx = self._torch, self._context
        keep = []  # the buffers must outlive the asynchronous run
        for spec in self.contract.inputs:
            t = inputs[spec.name]
            engine_dtype = _torch_dtype(torch, self._trt, self._engine.get_tensor_dtype(spec.name))
            t = t.to(engine_dtype).contiguous()
            keep.append(t)
            if not ctx.set_input_shape(spec.name, tuple(t.shape)):
                raise ModelError(f"{self.engine_path.name}: shape {tuple(t.shape)} of '{spec.name}' is outside the "
                                 "engine's optimisation profile")
            ctx.set_tensor_address(spec.name, t.data_ptr())
        outputs = {}
        for spec in self.contract.outputs:
            shape = tuple(ctx.get_tensor_shape(spec.name))
            if any(d < 0 for d in shape):
                raise ModelError(f"{self.engine_path.name}: output '{spec.name}' has a data-dependent shape "
                                 f"{shape}; keep such ops outside the engine")
            dtype = _torch_dtype(torch, self._trt, self._engine.get_tensor_dtype(spec.name))
            buf = torch.empty(shape, dtype=dtype, device=f"cuda:{self.device}")
            ctx.set_tensor_address(spec.name, buf.data_ptr())
            outputs[spec.name] = buf
        # The inputs were written on torch's current stream; ours must wait for them.
        self._stream.wait_stream(torch.cuda.current_stream(self.device))
        if not ctx.execute_async_v3(self._stream.cuda_stream):
            raise ModelError(f"{self.engine_path.name}: TensorRT execution failed")
        self._stream.synchronize()
        want = {s.name: getattr(torch, s.dtype) for s in self.contract.outputs}
        return {n: b if b.dtype == want[n] else b.to(want[n]) for n, b in outputs.items()}

    def describe(self) -> str:
        return (f"tensorrt {self.key.tensorrt_version} on {self.key.gpu_name} (sm {self.key.compute_capability}), "
                f"{self.key.precision}, engine {self.engine_path.name}")


def _parser_error(error) -> str:
    """One ONNX parser error as text (node and description)."""
    desc = error.desc() if hasattr(error, "desc") else str(error)
    node = f"node {error.node_name()}: " if hasattr(error, "node_name") and error.node_name() else ""
    return f"{node}{desc}"


def _torch_dtype(torch, trt, dtype):
    """TensorRT DataType -> torch dtype."""
    table = {"FLOAT": torch.float32, "HALF": torch.float16, "BF16": torch.bfloat16, "INT32": torch.int32,
             "INT64": torch.int64, "INT8": torch.int8, "UINT8": torch.uint8, "BOOL": torch.bool}
    for name, tdtype in table.items():
        if getattr(trt.DataType, name, None) == dtype:
            return tdtype
    raise ModelError(f"TensorRT tensor dtype {dtype} has no torch equivalent here")
