"""Discovery and the room's structure alone, per keyframe, on a real walk: their milliseconds and what they found.

Replays a scene's frames with the detector's lifted detections from bench_real_map's cache (``--cache``; frames not
cached are detected and lifted once) through ``SceneMemory.update`` and times, on each keyframe discovery looked at,
discovery and the structure (``UpdateResult.discovery_s`` / ``structure_s``; discovery's time is its finding of the
segments, ``ObjectDiscovery.seconds``, and taking them into the memory). ``--digest FILE`` writes, per keyframe, the
discovered boxes, a hash of the classified samples (points, normals, supports), every object of the memory and the
structure's elements, all to the last bit (JSON lines): two runs of the same walk with two versions of the code
(``PYTHONPATH`` at one checkout, then the other) write the same file when a change is a pure speed-up.
``--profile FILE`` writes a cProfile of discovery and the structure, ``--sample`` prints a pyinstrument profile.

    PYTHONPATH=/work/main .venv/bin/python benchmarks/bench_discovery.py --cache /work/cache/bench_real_map \
        [--scene redkitchen_walk] [--stride 1] [--frames 300] [--digest out.jsonl] [--profile out.prof]
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import time
from pathlib import Path

import numpy as np
from bench_real_map import _cache_key, _frame_numbers, _frames, _perceptions

from embodied_ros.cli import default_data_dir
from embodied_ros.memory.scene_memory import SceneMemory


def _digest(k: int, found: object, memory: SceneMemory) -> str:
    """One keyframe's line of the digest (module notes); floats as JSON writes them (exact round trips)."""
    surfaces = memory._discovery.surfaces  # noqa: SLF001
    digest = hashlib.sha1()
    for a in (surfaces.normal, surfaces.has_normal, surfaces.support, surfaces.valid, surfaces.points):
        digest.update(np.ascontiguousarray(a).tobytes())
    return json.dumps({"frame": k, "found": [] if found is None else found.boxes.tolist(),
                       "surfaces": digest.hexdigest(),
                       "objects": [[o.id, o.class_name, *o.box.tolist()] for o in memory.objects()],
                       "structure": [[o.id, o.class_name, *o.box.tolist()] for o in memory.structure_objects()]})


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=default_data_dir())
    p.add_argument("--scene", default="redkitchen_walk")
    p.add_argument("--stride", type=int, default=1)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--frames", type=int, default=0, help="at most this many frames of the walk (0: all)")
    p.add_argument("--cache", type=Path, default=None)
    p.add_argument("--detector", default="yolox-nano")
    p.add_argument("--digest", type=Path, default=None)
    p.add_argument("--profile", type=Path, default=None, help="write a cProfile of the stages here")
    p.add_argument("--sample", action="store_true", help="print a sampling profile (pyinstrument) of the stages")
    args = p.parse_args()
    scene = args.data / args.scene
    walk = list(range(args.start, len(_frame_numbers(scene)), args.stride))
    walk = walk[: args.frames] if args.frames else walk
    frames = _frames(scene, "auto", set(walk))
    key = _cache_key(args.detector, scene, "auto")
    perceptions, _ = _perceptions(args.detector, args.data, frames, args.cache, key)
    memory = SceneMemory()
    discovery = memory._discovery  # noqa: SLF001 - the benchmark wraps the stages it times
    found_by_frame: dict[int, object] = {}
    cpu: dict[str, float] = {}
    if discovery is not None:
        inner = discovery.discover

        def discover(frame, floor_z=None):  # the stage's output kept for the digest, its CPU time for the figures
            start = time.process_time()
            out = inner(frame, floor_z)
            cpu["finding"] = time.process_time() - start
            found_by_frame[frame.index] = out
            return out
        discovery.discover = discover
    prof = cProfile.Profile() if args.profile else None
    if args.sample:  # pyinstrument: a sampling profile, nearer the real time of many small numpy calls
        from pyinstrument import Profiler
        prof = Profiler(interval=0.0005)
        prof.enable, prof.disable = prof.start, prof.stop
    if prof is not None:
        stage = memory._discover  # noqa: SLF001 - discovery, unknown objects and the structure of a frame

        def profiled(*a, **k):
            prof.enable()
            try:
                return stage(*a, **k)
            finally:
                prof.disable()
        memory._discover = profiled  # noqa: SLF001
    measured = memory._discover  # noqa: SLF001 - discovery, unknown objects and the structure of a frame: CPU time

    def timed(*a, **k):
        start = time.process_time()
        try:
            return measured(*a, **k)
        finally:
            cpu["stage"] = time.process_time() - start
    memory._discover = timed  # noqa: SLF001
    t_disc, t_find, t_struct, t_update, c_stage, c_find = [], [], [], [], [], []
    lines = []
    for k in walk:
        perception = perceptions[k]
        t0 = time.perf_counter()
        result = memory.update(perception)
        t_update.append(time.perf_counter() - t0)
        if not getattr(result, "discovery_looked", False):
            continue
        t_disc.append(result.discovery_s)
        t_find.append(discovery.seconds)
        t_struct.append(getattr(result, "structure_s", 0.0))
        c_stage.append(cpu["stage"])
        c_find.append(cpu["finding"])
        if args.digest is not None:
            lines.append(_digest(k, found_by_frame.get(perception.frame.index), memory))
    if args.digest is not None:
        args.digest.write_text("\n".join(lines) + "\n")
    d, f, s = 1e3 * np.array(t_disc), 1e3 * np.array(t_find), 1e3 * np.array(t_struct)
    print(f"{args.scene} stride {args.stride}: {len(walk)} frames, {len(d)} keyframes; ms per keyframe (mean / median):"
          f" discovery {d.mean():.1f} / {np.median(d):.1f} (finding {f.mean():.1f} / {np.median(f):.1f}, unknown "
          f"objects {(d - f).mean():.1f} / {np.median(d - f):.1f}); structure {s.mean():.1f} / {np.median(s):.1f}; "
          f"both {(d + s).mean():.1f} / {np.median(d + s):.1f}; update per frame {1e3 * np.mean(t_update):.1f}")
    c, cf = 1e3 * np.array(c_stage), 1e3 * np.array(c_find)
    print(f"  CPU ms per keyframe (process_time, mean / median): finding {cf.mean():.1f} / {np.median(cf):.1f}; "
          f"finding + unknown objects + structure {c.mean():.1f} / {np.median(c):.1f}")
    if args.sample:
        print(prof.output_text(unicode=False, color=False, show_all=False))
    elif prof is not None:
        prof.dump_stats(args.profile)
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(40)


if __name__ == "__main__":
    main()
