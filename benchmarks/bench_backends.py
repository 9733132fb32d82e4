"""Benchmark: each network on each runtime backend available here: latency, throughput, peak memory, parity.

Run: .venv/bin/python benchmarks/bench_backends.py [--runs 100] [--threads 0] [--networks yolo perceptron]

Networks: the Yolo-Fastest-1.1-XL COCO detector on real redkitchen keyframes (preprocessed as in
the pipeline), and the Embodied Perceptron (network/perceptron.py, if present; random weights and
inputs: its latency does not depend on them). Backends: PyTorch eager and ONNX Runtime on the CPU;
on a machine with an NVIDIA GPU also PyTorch CUDA, ONNX Runtime CUDA (onnxruntime-gpu) and
TensorRT FP32 and FP16 engines (built once into a temporary cache; build time printed).

Each (network, backend) runs in its own process so that peak memory (max RSS) is its own. Latency
is one ``backend.run(inputs)`` per keyframe, host arrays in and out (copies included), after 3
warm-up runs. Parity: max |output - ONNX Runtime CPU| over the largest |ONNX Runtime output|, on the
first keyframe. The ratio ONNX Runtime / PyTorch is of the p50 latencies measured in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KEYFRAMES = 20  # distinct inputs cycled through


# -- networks ---------------------------------------------------------------------------------------------


def _yolo(work: Path):
    """(exportable network, list of input dicts) for the YOLO detector on real frames."""
    from PIL import Image

    from embodied_ros.network.yolo_detector import YoloDetector2D, preprocess
    from embodied_ros.runtime.config import RuntimeConfig

    detector = YoloDetector2D.from_known(search_dirs=[DATA / "yolo_fastest"], cache=work / "cache",
                                         runtime=RuntimeConfig(backend="torch"))
    frames = sorted((DATA / "redkitchen").glob("frame-*.color.jpg"))[:KEYFRAMES]
    if not frames:
        raise FileNotFoundError(f"no redkitchen frames in {DATA}")
    inputs = [{"image": preprocess(np.asarray(Image.open(f).convert("RGB")), detector.input_size)} for f in frames]
    return detector, inputs


class _Wrapped:
    """Any torch module + named example inputs as an ExportableNetwork (contract from one forward pass)."""

    def __init__(self, module, input_names, output_names, examples) -> None:
        import torch

        from embodied_ros.runtime import IOContract, TensorSpec

        self._module = module.eval()
        self._examples = tuple(examples)
        with torch.inference_mode():
            outs = self._module(*self._examples)
        self.contract = IOContract(
            tuple(TensorSpec(n, tuple(t.shape), "float32") for n, t in zip(input_names, self._examples, strict=True)),
            tuple(TensorSpec(n, tuple(t.shape), "float32") for n, t in zip(output_names, outs, strict=True)),
        )

    def torch_module(self):
        return self._module

    def example_inputs(self):
        return self._examples


def _perceptron(work: Path):
    """(exportable network, inputs) for the Embodied Perceptron with random weights and random inputs."""
    import torch

    from embodied_ros.network import perceptron as p
    from embodied_ros.training.config import synthetic_model

    torch.manual_seed(0)
    config = synthetic_model()
    examples = p.example_inputs(config)
    net = _Wrapped(p.EmbodiedPerceptron(config), p.INPUT_NAMES, p.OUTPUT_NAMES, examples)
    rng = np.random.default_rng(0)
    inputs = []
    for _ in range(4):
        d = {s.name: rng.random(s.shape).astype(np.float32) for s in net.contract.inputs}
        if "projections" in d:  # a plausible camera: identity-ish projection keeps samples in the image
            d["projections"] = examples[1].numpy() + rng.normal(0, 0.01, d["projections"].shape).astype(np.float32)
        inputs.append(d)
    return net, inputs


NETWORKS = {"yolo": _yolo, "perceptron": _perceptron}


# -- one (network, backend) in its own process -------------------------------------------------------------


def _worker(spec: dict) -> dict:
    """Load one backend, time it, return its figures. Imports only what that backend needs (RSS is its own)."""
    from embodied_ros.network.export_command import max_differences
    from embodied_ros.runtime.contract import IOContract, TensorSpec

    contract = IOContract(tuple(TensorSpec(**t) for t in spec["inputs"]),
                          tuple(TensorSpec(**t) for t in spec["outputs"]))
    data = np.load(spec["inputs_npz"])
    n_keyframes = spec["n_keyframes"]
    inputs = [{s.name: data[f"{k}/{s.name}"] for s in contract.inputs} for k in range(n_keyframes)]
    kind = spec["backend"]
    t0 = time.perf_counter()
    extra = ""
    if kind.startswith("torch"):
        import torch

        from embodied_ros.runtime.torch_backend import TorchBackend

        if spec["threads"]:
            torch.set_num_threads(spec["threads"])

        module = torch.load(spec["module_pt"], weights_only=False)
        backend = TorchBackend(module, contract, device="cuda:0" if kind == "torch-cuda" else "cpu")
    elif kind.startswith("onnxruntime"):
        from embodied_ros.runtime.onnxruntime_backend import OnnxRuntimeBackend

        provider = "CUDAExecutionProvider" if kind == "onnxruntime-cuda" else "CPUExecutionProvider"
        backend = OnnxRuntimeBackend(spec["onnx"], contract=contract, providers=[provider],
                                     intra_op_threads=spec["threads"])
    else:
        from embodied_ros.runtime.tensorrt_backend import TensorRTBackend

        backend = TensorRTBackend(spec["onnx"], contract=contract, fp16=kind == "tensorrt-fp16",
                                  cache_dir=spec["engines"], warmup_runs=0)
        extra = f"TensorRT {backend.key.tensorrt_version}, {backend.key.gpu_name}"
    load_s = time.perf_counter() - t0
    for i in range(3):
        backend.run(inputs[i % n_keyframes])
    times = []
    for i in range(spec["runs"]):
        t = time.perf_counter()
        backend.run(inputs[i % n_keyframes])
        times.append(time.perf_counter() - t)
    ref = np.load(spec["reference_npz"])
    _, rel = max_differences(backend.run(inputs[0]), {k: ref[k] for k in ref.files})
    ms = np.asarray(times) * 1e3
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
        "fps": float(1e3 / ms.mean()),
        "peak_rss_mib": _peak_rss_mib(),
        "load_s": load_s,
        "rel_diff": rel,
        "extra": extra,
        "describe": backend.describe(),
    }


def _peak_rss_mib() -> float:
    """This process's peak resident memory. VmHWM, not ru_maxrss: Linux carries ru_maxrss over execve from
    the parent (which holds every network), VmHWM belongs to this address space alone."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 if sys.platform != "darwin" else 2**20)


# -- driver ------------------------------------------------------------------------------------------------


def _backends() -> list[str]:
    import onnxruntime as ort
    import torch

    from embodied_ros.runtime.tensorrt_backend import tensorrt_status

    kinds = ["torch", "onnxruntime"]
    if torch.cuda.is_available():
        kinds.append("torch-cuda")
    if "CUDAExecutionProvider" in ort.get_available_providers():
        kinds.append("onnxruntime-cuda")
    problem = tensorrt_status()
    if problem is None:
        kinds += ["tensorrt-fp32", "tensorrt-fp16"]
    else:
        print(f"TensorRT rows skipped: {problem}")
    return kinds


def _prepare(name: str, work: Path) -> dict:
    import torch

    from embodied_ros.network.export_command import export_network
    from embodied_ros.runtime.onnxruntime_backend import OnnxRuntimeBackend

    net, inputs = NETWORKS[name](work)
    onnx_path = work / f"{name}.onnx"
    export_network(net, onnx_path)
    module_pt = work / f"{name}.pt"
    torch.save(net.torch_module(), module_pt)
    np.savez(work / f"{name}_inputs.npz", **{f"{k}/{n}": a for k, d in enumerate(inputs) for n, a in d.items()})
    reference = OnnxRuntimeBackend(onnx_path, contract=net.contract, providers=["CPUExecutionProvider"]).run(inputs[0])
    np.savez(work / f"{name}_reference.npz", **reference)
    as_dict = lambda s: {"name": s.name, "shape": list(s.shape), "dtype": s.dtype}  # noqa: E731
    return {
        "inputs": [as_dict(s) for s in net.contract.inputs],
        "outputs": [as_dict(s) for s in net.contract.outputs],
        "onnx": str(onnx_path),
        "module_pt": str(module_pt),
        "inputs_npz": str(work / f"{name}_inputs.npz"),
        "reference_npz": str(work / f"{name}_reference.npz"),
        "n_keyframes": len(inputs),
        "engines": str(work / "engines"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="timed runs per backend (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (0 = library default, all cores)")
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(_worker(json.loads(Path(args.worker).read_text()))))
        return
    import onnxruntime as ort
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"{platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; "
          f"torch {torch.__version__}, onnxruntime {ort.__version__}; GPU: {gpu}")
    kinds = _backends()
    with tempfile.TemporaryDirectory(prefix="bench_backends_") as tmp:
        work = Path(tmp)
        for name in args.networks:
            try:
                spec = _prepare(name, work)
            except Exception as exc:  # a network that cannot be built here is reported, not fatal
                print(f"\n{name}: skipped ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})")
                continue
            print(f"\n{name}: inputs " + ", ".join(f"{s['name']} {tuple(s['shape'])}" for s in spec["inputs"])
                  + f"; {args.runs} runs over {spec['n_keyframes']} keyframes")
            print(f"{'backend':<18}{'p50 ms':>9}{'p99 ms':>9}{'fps':>8}{'peak RSS MiB':>14}{'load s':>8}"
                  f"{'rel diff vs ORT':>17}")
            rows = {}
            for kind in kinds:
                job = work / f"{name}-{kind}.json"
                job.write_text(json.dumps({**spec, "backend": kind, "runs": args.runs, "threads": args.threads}))
                proc = subprocess.run([sys.executable, __file__, "--worker", str(job)], capture_output=True, text=True)
                if proc.returncode != 0:
                    tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
                    print(f"{kind:<18} failed: {tail}")
                    continue
                r = rows[kind] = json.loads(proc.stdout.strip().splitlines()[-1])
                print(f"{kind:<18}{r['p50_ms']:>9.2f}{r['p99_ms']:>9.2f}{r['fps']:>8.1f}{r['peak_rss_mib']:>14.0f}"
                      f"{r['load_s']:>8.2f}{r['rel_diff']:>17.1e}" + (f"  ({r['extra']})" if r["extra"] else ""))
            if "torch" in rows and "onnxruntime" in rows:
                ratio = rows["onnxruntime"]["p50_ms"] / rows["torch"]["p50_ms"]
                print(f"ratio ONNX Runtime / PyTorch (CPU p50): {ratio:.2f}")
            if "torch-cuda" in rows and "tensorrt-fp32" in rows:
                for kind in ("tensorrt-fp32", "tensorrt-fp16"):
                    if kind in rows:
                        ratio = rows[kind]["p50_ms"] / rows["torch-cuda"]["p50_ms"]
                        print(f"ratio {kind} / PyTorch CUDA (p50): {ratio:.2f}")


if __name__ == "__main__":
    main()
