"""Benchmark: what sampling each detection's colour adds to the scene memory's update, on real frames.

Run: .venv/bin/python benchmarks/bench_object_colour.py [--frames 50] [--repeats 5]

The lifted COCO detector runs once over redkitchen's frames; then the same perceptions go through
fresh memories, alternately with the frame (colour sampled from each detection's pixels) and
without it (the memory's other work only), so both figures come from one run on one machine.
Prints ms per frame for each, the difference per detection, and how many objects got a colour.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

from embodied_ros.memory.scene_memory import SceneMemory

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from embodied_ros.network.registry import build_perceptor
    try:
        from embodied_ros.recordings import open_source
    except ImportError:  # a baseline from before recordings.py
        from embodied_ros.sources import open_source

    perceptor = build_perceptor("yolo-fastest-1.1-xl", weights=DATA / "yolo_fastest", backend="onnxruntime")
    with open_source(DATA / "redkitchen") as source:
        perceptions = [perceptor.perceive(f) for f in source.frames(max_frames=args.frames)
                       if not isinstance(f, Exception)]
    blind = [replace(p, frame=None) for p in perceptions]
    n_det = sum(len(p.detections) for p in perceptions)
    times: dict[str, list[float]] = {"with colour": [], "without": []}
    for _ in range(args.repeats):
        for name, batch in (("with colour", perceptions), ("without", blind)):
            memory = SceneMemory()
            start = time.perf_counter()
            for p in batch:
                memory.update(p)
            times[name].append(1000 * (time.perf_counter() - start) / len(batch))
    with_c, without = (statistics.median(times[k]) for k in ("with colour", "without"))
    coloured = sum(o.colour_name is not None for o in memory_with_colour(perceptions).objects())
    per_detection = (with_c - without) * len(perceptions) / max(n_det, 1)
    print(f"{len(perceptions)} frames, {n_det} detections; memory update, median of {args.repeats}: "
          f"{with_c:.2f} ms/frame with colour, {without:.2f} without (+{with_c - without:.2f} ms/frame, "
          f"{per_detection:.2f} ms per detection); {coloured} objects with a colour")


def memory_with_colour(perceptions: list) -> SceneMemory:
    memory = SceneMemory()
    for p in perceptions:
        memory.update(p)
    return memory


if __name__ == "__main__":
    main()
