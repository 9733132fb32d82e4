"""Per-stage time per frame, sustained frame rate and peak memory of `embodied-ros run`, for
detector:memory pairs side by side in one run, or for this code against a baseline (``--baseline
REF``: ``git archive REF`` run the same way in its own process, alternating with this code), plus
the scene-memory update cost with 100 vs 10,000 objects (bench_memory.py).

The map's work per keyframe (lifting + object map + discovery + structure + occupancy, and any stage a newer
map adds) is compared with the detector's (network) time of the same frames in the same process: the ratio the
budget of issues 34 and 41 bounds by 1. Every frame of `run` is a keyframe of the network; discovery looks at
the frames the camera reached by moving, so each stage is given per frame and per frame it ran on (its keyframes).

Usage: .venv/bin/python benchmarks/bench_pipeline.py [--scene redkitchen] [--frames N] [--stride K]
           [--pairs yolo-fastest-1.1-xl:legacy,yolox-nano:full]   (memories: see memory_variants.MEMORIES)
           [--baseline REF [--repeats 2]] [--profile] [--data DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import inspect
import io
import pstats
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from baseline_runs import baseline_tree, print_result, run_child

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

FRAME_BUDGET_MS = 1000.0 / 30  # Azure Kinect at 30 fps
STAGES = ("decode", "network", "lifting", "memory", "discovery", "structure", "occupancy", "writing")
NOT_MAP = ("decode", "network", "writing")  # every other stage is the map's work per keyframe
RAN_MS = 0.5  # a stage that took longer on a frame ran on it (discovery declines most frames in microseconds)


def _map_stages(stage_ms: dict[str, float]) -> list[str]:
    """The map's stages of a run: all but decoding, the network and writing (a newer map may add some)."""
    return [s for s in stage_ms if s not in NOT_MAP]


def measure(args: argparse.Namespace, pair: str) -> dict[str, object]:
    """One `run` over the frames with whatever embodied_ros this process imports; its figures."""
    from memory_variants import MEMORIES

    from embodied_ros.memory.scene_memory import SceneMemory
    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.pipeline import run
    try:
        from embodied_ros.occupancy.voxel_map import OccupancyMap
        from embodied_ros.recordings import open_source
    except ImportError:  # a baseline from before occupancy/ and recordings.py
        from embodied_ros.memory.occupancy import OccupancyMap

        from embodied_ros.sources import open_source

    model, memory = pair.split(":")
    per_frame: list[dict[str, float]] = []  # each frame's stages, ms (SceneMapper's step; a baseline without it: none)
    source = open_source(args.data / args.scene)
    perceptor = build_perceptor(model, weights=args.data, backend="onnxruntime")
    perceptor.perceive(source.read(0))  # warm-up: session creation, first-call allocations
    profile = _profiler() if args.profile else None
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        if profile is not None:
            profile.enable()
        memory_map = SceneMemory(**MEMORIES[memory]), OccupancyMap()
        # A baseline from before the SceneMapper: run(source, perceptor, memory, occupancy, ...). Asked of run()
        # itself: the editable install would find this code's mapper.py beside an older package.
        if "mapper" not in inspect.signature(run).parameters:
            step: tuple = (perceptor, *memory_map)
        else:
            from embodied_ros.mapper import SceneMapper

            mapper = SceneMapper(perceptor=perceptor, memory=memory_map[0], occupancy=memory_map[1])
            step = (mapper,)
            mapper.step = _recorded(mapper.step, per_frame)
        summary = run(source, *step, Path(out),
                      stride=args.stride, max_frames=args.frames, write_inputs=not args.no_inputs)
        if profile is not None:
            profile.disable()
        wall = 1000 * (time.perf_counter() - t0) / summary.frames_processed
    stage_ms = dict(summary.stage_ms)
    result = {
        "code": str(Path(sys.modules["embodied_ros"].__file__).parents[1]), "pair": pair,
        "frames": summary.frames_processed, "stage_ms": stage_ms, "wall_ms": wall,
        "fps": getattr(summary, "fps", float("nan")),  # what `run` reports (the baseline may not)
        "bag_thread_ms": getattr(summary, "writer_ms", None),
        "ratio": sum(stage_ms[s] for s in _map_stages(stage_ms)) / stage_ms["network"],
        "ran": {s: [sum(f.get(s, 0.0) > RAN_MS for f in per_frame),
                    float(np.mean([f[s] for f in per_frame if f.get(s, 0.0) > RAN_MS] or [0.0]))]
                for s in (per_frame[0] if per_frame else {})},
        "objects": [len(summary.objects), len(summary.all_objects)],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,  # Linux: kilobytes
    }
    if profile is not None:
        result["profile"] = profile.text()
    return result


class _Cprofile:
    """cProfile, printed as the functions of the map's modules by cumulative time."""

    def __init__(self) -> None:
        self.profile = cProfile.Profile()
        self.enable, self.disable = self.profile.enable, self.profile.disable

    def text(self) -> str:
        out = io.StringIO()
        stats = pstats.Stats(self.profile, stream=out).sort_stats("cumulative")
        stats.print_stats(r"embodied_ros/(memory|network/lifting|network/depth_clusters|geometry|pipeline|outputs)", 40)
        return out.getvalue()


class _Pyinstrument:
    """pyinstrument's sampling profiler (a call tree, little overhead), when it is installed."""

    def __init__(self) -> None:
        from pyinstrument import Profiler

        self.profile = Profiler(interval=0.0005)
        self.enable, self.disable = self.profile.start, self.profile.stop

    def text(self) -> str:
        return self.profile.output_text(unicode=False, color=False, show_all=False)


def _profiler() -> _Cprofile | _Pyinstrument:
    try:
        return _Pyinstrument()
    except ImportError:
        return _Cprofile()


def _recorded(step: object, per_frame: list[dict[str, float]]) -> object:
    """``SceneMapper.step`` that also records each frame's stages (ms), discovery apart from the memory."""

    def recorded(frame: object, *args: object, **kwargs: object) -> object:
        result = step(frame, *args, **kwargs)
        ms = {k: 1000.0 * v for k, v in result.stages_s.items()}
        discovery = 1000.0 * getattr(result.update, "discovery_s", 0.0)
        ahead = 1000.0 * getattr(result.update, "discovery_ahead_s", 0.0)  # alongside the network: not in "memory"
        ms["memory"] = ms.get("memory", 0.0) - (discovery - ahead)
        ms["discovery"] = discovery
        per_frame.append(ms)
        return result

    return recorded


def _child(code: Path, args: argparse.Namespace, pair: str) -> dict[str, object]:
    """``measure`` in a fresh process importing embodied_ros from ``code``: its own peak RSS."""
    argv = ["--child", pair, "--scene", args.scene, "--stride", str(args.stride), "--data", str(args.data)] \
        + (["--frames", str(args.frames)] if args.frames else []) + (["--profile"] if args.profile else []) \
        + (["--no-inputs"] if args.no_inputs else [])
    return run_child(code, __file__, argv)


def _table(runs: list[tuple[str, dict]], title: str) -> None:
    print(title)
    stages = [s for s in STAGES if any(s in r["stage_ms"] for _, r in runs)]
    stages += [s for _, r in runs for s in r["stage_ms"] if s not in stages]
    print(f"{'ms per frame':<30}" + "".join(f" {name:>22}" for name, _ in runs))
    rows = [(s, lambda r, s=s: r["stage_ms"].get(s, 0.0)) for s in stages]
    rows += [("total (stages)", lambda r: sum(r["stage_ms"].values())),
             ("wall (with pictures)", lambda r: r["wall_ms"]),
             ("bag thread", lambda r: r["bag_thread_ms"] if r["bag_thread_ms"] is not None else float("nan")),
             ("map (all but network, I/O)", lambda r: sum(r["stage_ms"][s] for s in _map_stages(r["stage_ms"]))),
             ("map / detector", lambda r: r["ratio"]),
             ("frames per second", lambda r: r["fps"]),  # sustained, to the bag closed (pictures after)
             ("peak RSS, MB", lambda r: r["peak_rss_mb"])]
    for label, value in rows:
        print(f"{label:<30}" + "".join(f" {value(r):22.2f}" for _, r in runs))
    # Per keyframe of each stage: the frames it ran on (took > RAN_MS) and its mean time on them.
    print(f"{'ms per frame it ran (frames)':<30}" + "".join(f" {name:>22}" for name, _ in runs))
    for s in [s for s in stages if s not in ("decode", "writing")]:
        cells = [f"{r['ran'][s][1]:.2f} ({r['ran'][s][0]})" if s in r.get("ran", {}) else "-" for _, r in runs]
        print(f"{s:<30}" + "".join(f" {c:>22}" for c in cells))
    for name, r in runs:
        stream = sum(r["stage_ms"].get(s, 0.0) for s in ("memory", "occupancy"))
        print(f"{name} ({r['code']}): memory + occupancy {stream:.1f} ms/frame = {stream / FRAME_BUDGET_MS:.2f} of the "
              f"33 ms budget; {r['objects'][0]} objects published, {r['objects'][1]} in memory")


def main() -> None:
    from embodied_ros.cli import default_data_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scene", default="redkitchen", help="recording under --data (e.g. redkitchen_walk)")
    parser.add_argument("--frames", type=int, default=None, help="at most N frames (default: all)")
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--pairs", default="yolo-fastest-1.1-xl:legacy,yolox-nano:full",
                        help="detector:memory pairs to time (default: %(default)s)")
    parser.add_argument("--baseline", default="", help="git ref: time the first pair with it and with this code")
    parser.add_argument("--repeats", type=int, default=2, help="with --baseline: runs of each, alternating")
    parser.add_argument("--profile", action="store_true",
                        help="print where the map's time went (pyinstrument's call tree if installed, else cProfile)")
    parser.add_argument("--no-inputs", action="store_true",
                        help="leave the inputs (JPEG, PNG) out of the bag: less work beside the network on 2 cores")
    parser.add_argument("--memory-frames", type=int, default=200, help="frames per memory-update measurement")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print_result(measure(args, args.child))
        return
    what = (f"{args.scene}, every {args.stride}. frame" + (f", at most {args.frames}" if args.frames else "")
            + ", ONNX Runtime (CPU), every frame a keyframe" + (", no inputs in the bag" if args.no_inputs else "")
            + "; each run in its own process")
    if args.baseline:
        pair = args.pairs.split(",")[0]
        with tempfile.TemporaryDirectory() as tmp:
            base = baseline_tree(args.baseline, Path(tmp))
            runs = []
            for k in range(args.repeats):  # alternating: the machine's load drifts
                runs.append((f"{args.baseline} #{k + 1}", _child(base, args, pair)))
                runs.append((f"this code #{k + 1}", _child(REPO, args, pair)))
        _table(runs, f"{pair} on {what}")
    else:
        runs = [(pair, _child(REPO, args, pair)) for pair in args.pairs.split(",")]
        _table(runs, what)
    for name, r in runs:
        if r.get("profile"):
            print(f"\n--- where the time went: {name} ---\n{r['profile']}")

    if args.memory_frames > 0:
        from bench_memory import bench_memory

        small, _ = bench_memory(100, args.memory_frames)
        large, _ = bench_memory(10_000, args.memory_frames)
        print(f"memory update, 10 detections/frame: {small:.2f} ms with 100 objects (baseline), "
              f"{large:.2f} ms with 10,000 objects; ratio {large / small:.2f}")


if __name__ == "__main__":
    main()
