"""Per-stage time per frame and peak memory of `embodied-ros run` on the redkitchen recording,
plus the scene-memory update cost with 100 vs 10,000 objects (bench_memory.py).

Usage: .venv/bin/python benchmarks/bench_pipeline.py [--frames N] [--data DIR]
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
    parser.add_argument("--memory-frames", type=int, default=200, help="frames per memory-update measurement")
    args = parser.parse_args()

    source = open_source(args.data / "redkitchen")
    perceptor = build_perceptor(weights=args.data / "yolo_fastest")
    perceptor.perceive(source.read(0))  # warm-up: session creation, first-call allocations
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        summary = run(source, perceptor, SceneMemory(), OccupancyMap(), Path(out), max_frames=args.frames)
        wall = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: kilobytes

    print(f"redkitchen, {summary.frames_processed} frames, yolo-fastest-1.1-xl on ONNX Runtime (CPU), "
          f"{len(summary.all_objects)} objects in memory")
    print(f"{'stage':<10} {'ms/frame':>9} {'of 33 ms':>9}")
    for stage in STAGES:
        ms = summary.stage_ms.get(stage, 0.0)
        print(f"{stage:<10} {ms:9.1f} {ms / FRAME_BUDGET_MS:9.2f}")
    total = sum(summary.stage_ms.values())
    wall_ms = 1000 * wall / summary.frames_processed
    print(f"{'total':<10} {total:9.1f} {total / FRAME_BUDGET_MS:9.2f}   (wall {wall_ms:.1f} ms/frame incl. pictures)")
    stream = sum(summary.stage_ms.get(s, 0.0) for s in ("memory", "occupancy"))
    print(f"memory + occupancy (must keep up with the stream): {stream:.1f} ms/frame = "
          f"{stream / FRAME_BUDGET_MS:.2f} of the 33 ms budget")
    print(f"peak resident memory: {peak_mb:.0f} MB")

    small, _ = bench_memory(100, args.memory_frames)
    large, _ = bench_memory(10_000, args.memory_frames)
    print(f"memory update, 10 detections/frame: {small:.2f} ms with 100 objects (baseline), "
          f"{large:.2f} ms with 10,000 objects; ratio {large / small:.2f}")


if __name__ == "__main__":
    main()
