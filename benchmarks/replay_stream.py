"""Replay one walk's cached lifted detections through a SceneMemory and print every published map.

bench_real_map runs it in a fresh interpreter with a git ref's package (``--baseline REF``), so the
ref's object map is scored by this code's streaming score in the same run. It imports only what every
version since the object map has (SceneMemory, FramePerception, open_source), streams the frames from
the recording instead of holding them, and prints one ``RESULT <json>`` line (baseline_runs.py):

    {"snapshots": [[stamp_ns, [x, y, z] camera, [[id, class, box(9), score, confidence, settled], ...]], ...],
     "memory_ms": mean milliseconds of an update without discovery, "discovery_ms": of discovery}

``settled`` is null where the map does not say (SceneObject has no ``settled``).

    .venv/bin/python benchmarks/replay_stream.py --scene DIR --detections PKL --walk START:STOP:STEP
        [--registration auto] [--memory JSON]
"""

from __future__ import annotations

import argparse
import json
import pickle
import time
from pathlib import Path

import numpy as np
from baseline_runs import print_result

from embodied_ros.detections import FramePerception
from embodied_ros.frame import Frame
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.sources import RecordingOptions

try:
    from embodied_ros.recordings import open_source
except ImportError:  # a baseline from before recordings.py
    from embodied_ros.sources import open_source
from embodied_ros.sources.registration import Registration


def published_row(memory: SceneMemory, perception: FramePerception) -> list:
    """One snapshot: the frame's stamp, the camera position and the published objects."""
    eye = None if perception.viewpoint is None else [float(v) for v in perception.viewpoint]
    objects = [[int(o.id), o.class_name, [float(v) for v in o.box], float(o.score), float(o.confidence),
                None if getattr(o, "settled", None) is None else bool(o.settled)]
               for o in memory.published_objects()]
    return [int(perception.stamp_ns), eye, objects]


def replay(scene: Path, registration: str, detections: dict, walk: range, memory: SceneMemory,
           seconds: list[tuple[float, float]] | None = None) -> list[list]:
    """Feed the walk's frames (positions in file order) to ``memory``; every published map, in order;
    ``seconds`` gets each update's seconds without discovery and of discovery."""
    wanted = set(walk)
    rows = []
    source = open_source(scene, RecordingOptions(registration=Registration(registration)))
    with source:
        for k, frame in enumerate(source.frames(max_frames=walk.stop)):
            if k not in wanted or not isinstance(frame, Frame) or k not in detections:
                continue
            d2, d3 = detections[k]
            perception = FramePerception(frame.index, frame.stamp_ns, d3, d2,
                                         viewpoint=frame.T_world_camera[:3, 3].copy(), frame=frame)
            t0 = time.perf_counter()
            result = memory.update(perception)
            took = time.perf_counter() - t0
            if seconds is not None:
                discovery = float(getattr(result, "discovery_s", 0.0))
                seconds.append((took - discovery, discovery))
            rows.append(published_row(memory, perception))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scene", type=Path, required=True)
    p.add_argument("--detections", type=Path, required=True, help="bench_real_map's cache file of the detector")
    p.add_argument("--walk", required=True, help="START:STOP:STEP frame positions")
    p.add_argument("--registration", default="auto")
    p.add_argument("--memory", default="{}", help="MemoryConfig overrides as JSON")
    args = p.parse_args()
    with args.detections.open("rb") as f:
        detections, _ = pickle.load(f)  # noqa: S301 - bench_real_map's own cache file
    start, stop, step = (int(v) for v in args.walk.split(":"))
    memory = SceneMemory(**json.loads(args.memory))
    seconds: list[tuple[float, float]] = []
    rows = replay(args.scene, args.registration, detections, range(start, stop, step), memory, seconds)
    ms = 1e3 * np.mean(np.array(seconds).reshape(-1, 2), axis=0) if seconds else [float("nan")] * 2
    print_result({"snapshots": rows, "memory_ms": float(ms[0]), "discovery_ms": float(ms[1])})


if __name__ == "__main__":
    main()
