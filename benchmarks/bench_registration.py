"""Benchmark: how well each 7-Scenes colour/depth registration model puts colour edges on depth edges.

Run: .venv/bin/python benchmarks/bench_registration.py [--frames 100]

On the redkitchen frames (../shared/data/redkitchen, Kinect v1: colour NOT registered to depth),
each model's colour image is scored by the mean colour gradient under depth edges
(sources.registration.edge_alignment_score: higher = colour edges sit on the depth edges); it
prints the mean, the median, on how many frames each model beats the affine default, and the
time per frame. The ground-truth boxes are a separate, 3D check of the same choice.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from embodied_ros.sources.folders import SevenScenesFolder
from embodied_ros.sources.registration import Registration, edge_alignment_score, register_color

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
MODELS = (Registration.NONE, Registration.SEVEN_SCENES_AFFINE, Registration.SEVEN_SCENES_KINECT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100, help="redkitchen frames to score (default: all 100)")
    args = parser.parse_args()
    raw = SevenScenesFolder(DATA / "redkitchen", registration=Registration.NONE)
    scores: dict[Registration, list[float]] = {m: [] for m in MODELS}
    seconds: dict[Registration, float] = {m: 0.0 for m in MODELS}
    n = min(args.frames, len(raw))
    for i in range(n):
        frame = raw.read(i)
        for model in MODELS:
            start = time.perf_counter()
            color = register_color(model, frame.color, frame.depth, frame.K)
            seconds[model] += time.perf_counter() - start
            scores[model].append(edge_alignment_score(color, frame.depth))
    affine = np.array(scores[Registration.SEVEN_SCENES_AFFINE])
    print(f"redkitchen, {n} frames: mean colour gradient under depth edges (higher = better registered)")
    for model in MODELS:
        s = np.array(scores[model])
        print(f"  {model.value:15s} mean {s.mean():5.1f}  median {np.median(s):5.1f}  "
              f"beats 7scenes-affine on {int((s > affine).sum()):3d}/{n} frames  "
              f"{1000 * seconds[model] / n:5.1f} ms/frame")


if __name__ == "__main__":
    main()
