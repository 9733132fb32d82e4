"""Per-stage time per frame and peak memory of `embodied-ros run` on the redkitchen recording, for
detector:memory pairs side by side in one run (default: the old pipeline, Yolo-Fastest with the box-only
memory, against today's defaults), plus the scene-memory update cost with 100 vs 10,000 objects
(bench_memory.py).

Usage: .venv/bin/python benchmarks/bench_pipeline.py [--frames N] [--data DIR] [--scene redkitchen]
           [--pairs yolo-fastest-1.1-xl:legacy,yolox-nano:full]   (memories: see bench_real_map.MEMORIES)

``--scene redkitchen_walk`` is the camera's own rate (30 Hz, stride 1): the memory, discovery and occupancy
stages must keep up with it; redkitchen is every 10th of its frames (3 Hz), every one a keyframe.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_memory import bench_memory  # noqa: E402
from bench_real_map import MEMORIES  # noqa: E402

from embodied_ros.cli import default_data_dir  # noqa: E402
from embodied_ros.memory.occupancy import OccupancyMap  # noqa: E402
from embodied_ros.memory.scene_memory import SceneMemory  # noqa: E402
from embodied_ros.network.registry import build_perceptor  # noqa: E402
from embodied_ros.pipeline import STAGES, run  # noqa: E402
from embodied_ros.sources import open_source  # noqa: E402

FRAME_BUDGET_MS = 1000.0 / 30  # Azure Kinect at 30 fps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--scene", default="redkitchen", help="folder under --data (default: %(default)s)")
    parser.add_argument("--pairs", default="yolo-fastest-1.1-xl:legacy,yolox-nano:full",
                        help="detector:memory pairs to time (default: %(default)s)")
    parser.add_argument("--memory-frames", type=int, default=200, help="frames per memory-update measurement")
    args = parser.parse_args()

    source = open_source(args.data / args.scene)
    stage_ms, walls, objects = {}, {}, {}
    for pair in args.pairs.split(","):
        model, memory = pair.split(":")
        perceptor = build_perceptor(model, weights=args.data, backend="onnxruntime")
        perceptor.perceive(source.read(0))  # warm-up: session creation, first-call allocations
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            summary = run(source, perceptor, SceneMemory(**MEMORIES[memory]), OccupancyMap(), Path(out),
                          max_frames=args.frames)
            walls[pair] = 1000 * (time.perf_counter() - t0) / summary.frames_processed
        stage_ms[pair] = summary.stage_ms
        objects[pair] = (len(summary.objects), len(summary.all_objects))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes

    pairs = list(stage_ms)
    print(f"{args.scene}, {summary.frames_processed} frames, ONNX Runtime (CPU); ms per frame (every frame a keyframe)")
    print(f"{'stage':<10}" + "".join(f" {p:>32}" for p in pairs) + (f" {'ratio':>7}" if len(pairs) == 2 else ""))
    for stage in (*STAGES, "total"):
        row = [sum(stage_ms[p].values()) if stage == "total" else stage_ms[p].get(stage, 0.0) for p in pairs]
        ratio = f" {row[1] / row[0]:7.2f}" if len(pairs) == 2 and row[0] > 0 else ""
        print(f"{stage:<10}" + "".join(f" {v:32.1f}" for v in row) + ratio)
    print(f"{'wall':<10}" + "".join(f" {walls[p]:32.1f}" for p in pairs) + "   (incl. pictures)")
    for p in pairs:
        stream = sum(stage_ms[p].get(s, 0.0) for s in ("memory", "occupancy"))
        print(f"{p}: memory + occupancy {stream:.1f} ms/frame = {stream / FRAME_BUDGET_MS:.2f} of the 33 ms budget; "
              f"{objects[p][0]} objects published, {objects[p][1]} in memory")
    print(f"peak resident memory: {peak_mb:.0f} MB")

    small, _ = bench_memory(100, args.memory_frames)
    large, _ = bench_memory(10_000, args.memory_frames)
    print(f"memory update, 10 detections/frame: {small:.2f} ms with 100 objects (baseline), "
          f"{large:.2f} ms with 10,000 objects; ratio {large / small:.2f}")


if __name__ == "__main__":
    main()
