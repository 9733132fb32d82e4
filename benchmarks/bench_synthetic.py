"""Benchmark: synthetic scene generation and rendering time (per scene and per frame).

Run: .venv/bin/python benchmarks/bench_synthetic.py [--scenes 3] [--frames 20]

Prints, per image size (480x480 and the Kinect's 1280x720): layout + trajectory per scene,
renderer build per scene (open3d BVH), surface sampling per scene (occupancy labels), prompts
per scene, and per frame: the noise-free ray-cast view, the noisy frame, the frame with
visibility, and the 40x40x16 occupancy labels. Median and minimum over frames (the minimum is
the better estimate of the cost on a machine shared with other work), and the mean process
CPU time of the same calls over all threads (open3d casts rays on every core, so CPU time
can exceed wall time on an idle machine; on a busy one it is the steadier figure). The first
renderer build includes importing open3d.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

from embodied_ros.synthetic import KINECT_720P, SceneConfig, TrajectoryConfig, generate_scene

_CPU: dict[int, float] = {}  # id(list of wall times) -> summed CPU time of the same calls


def _time(fn: Callable[[], object], into: list[float]) -> None:
    """Append fn's wall time (ms) to ``into``; its process CPU time (all threads) is summed aside."""
    t, c = time.perf_counter(), time.process_time()
    fn()
    into.append((time.perf_counter() - t) * 1000.0)
    _CPU[id(into)] = _CPU.get(id(into), 0.0) + (time.process_time() - c) * 1000.0


def _line(name: str, values: list[float]) -> None:
    cpu = _CPU.get(id(values), 0.0) / max(len(values), 1)
    print(f"  {name:<34s} wall median {statistics.median(values):8.1f} ms  min {min(values):8.1f} ms"
          f"  | CPU mean {cpu:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", type=int, default=3, help="scenes per image size")
    parser.add_argument("--frames", type=int, default=20, help="frames rendered per scene")
    args = parser.parse_args()
    for label, base in (("480x480", SceneConfig()), ("1280x720", KINECT_720P)):
        config = replace(base, trajectory=TrajectoryConfig(n_frames=args.frames))
        per_scene: dict[str, list[float]] = {k: [] for k in ("layout+trajectory", "renderer build", "surface samples",
                                                             "prompts")}
        per_frame: dict[str, list[float]] = {k: [] for k in ("ray-cast view (no noise)", "frame (noise)",
                                                             "frame + visibility", "occupancy labels")}
        n_objects = []
        for seed in range(args.scenes):
            made = []
            _time(lambda seed=seed, made=made, c=config: made.append(generate_scene(1000 + seed, c)),
                  per_scene["layout+trajectory"])
            scene = made[0]
            _time(lambda s=scene: s.renderer, per_scene["renderer build"])
            _time(lambda s=scene: s.surface, per_scene["surface samples"])
            _time(lambda s=scene: s.prompts, per_scene["prompts"])
            n_objects.append(len(scene.objects))
            for i in range(len(scene)):
                _time(lambda s=scene, i=i: s.renderer.render(s.K, s.poses[i], s.config.width, s.config.height),
                      per_frame["ray-cast view (no noise)"])
                _time(lambda s=scene, i=i: s.render(i, visibility=False), per_frame["frame (noise)"])
                _time(lambda s=scene, i=i: s.render(i), per_frame["frame + visibility"])
                _time(lambda s=scene, i=i: s.occupancy(i), per_frame["occupancy labels"])
        print(f"{label}: {args.scenes} scenes ({min(n_objects)}-{max(n_objects)} objects), {args.frames} frames each")
        for k, v in per_scene.items():
            _line(k + " / scene", v)
        for k, v in per_frame.items():
            _line(k + " / frame", v)


if __name__ == "__main__":
    main()
