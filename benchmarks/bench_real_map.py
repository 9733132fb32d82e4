"""The object map on a real room, scored on hand-made 3D ground truth: detector x memory, one run.

For each detector the 2D detections of every frame are computed once and lifted once; each memory
variant then takes the same perceptions, so the rows differ only by what they name. Published
objects are matched to ``redkitchen/ground_truth.json`` by its rules (metrics/object_map.py): by
IoU >= 0.25 of the oriented boxes, and separately by centre distance <= 0.3 m.

Memory variants (MemoryConfig overrides):
  legacy    the scene memory before the object map (box fusion only, every object published):
            the baseline of the issue;
  evidence  + existence as evidence both ways, only confident objects published;
  geometry  + each object's own geometry, box fitted to all of it, furniture completed;
            no existence evidence;
  full      the defaults (geometry and evidence);
  one-sum   full, but existence evidence summed over every look (existence_revisit_s=0), as before
            evidence was kept per place: the baseline of ``--passes``.

    .venv/bin/python benchmarks/bench_real_map.py [--detectors yolo-fastest-1.1-xl,yolox-nano]
        [--memories legacy,full] [--frames 100] [--subsets all] [--passes 1] [--registration auto]
        [--out DIR] [--per-class]

Prints one row per detector x memory, per-stage milliseconds per frame, each detector's ceiling
(the required objects that at least one single lifted detection fits: what the detector gives the
map; the objects outside it are the detector's misses, not the memory's), and (``--per-class``)
the matches per ground-truth class and the objects outside each detector's ceiling; ``--out``
also writes the contact sheet and top-down picture of every combination. ``--passes N`` replays
the frames N times, each pass a minute after the previous one ended (a robot going round its room
again), scores after the last and prints precision and recall after each pass. ``--subsets``
also scores other walks through the room, made of the same frames: ``first`` and ``last`` half of
the walk, and ``even`` and ``odd`` (every other frame: the walk at half the frame rate); ``all`` is
every frame.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from embodied_ros.cli import default_data_dir
from embodied_ros.detections import FramePerception
from embodied_ros.frame import Frame
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.metrics.object_map import (
    MapScore,
    MatchMode,
    load_ground_truth,
    reached_by_detections,
    score_object_map,
)
from embodied_ros.network.lifting import lift_detections
from embodied_ros.network.registry import build_perceptor
from embodied_ros.outputs.contact_sheet import ObjectViews, save_contact_sheet
from embodied_ros.outputs.pictures import save_top_down_map
from embodied_ros.sources import RecordingOptions, open_source
from embodied_ros.sources.registration import Registration

MEMORIES: dict[str, dict] = {
    "legacy": dict(geometry_voxel=0.0, existence_miss=0.0, existence_through=0.0, publish_confidence=0.0,
                   amodal=False, image_match=1.0),
    "evidence": dict(geometry_voxel=0.0, amodal=False, image_match=1.0),
    "geometry": dict(existence_miss=0.0, existence_through=0.0, publish_confidence=0.0),
    "full": {},
    "one-sum": dict(existence_revisit_s=0.0),
}
PASS_GAP_NS = 60 * 10**9  # between the end of one pass and the start of the next
SUBSETS = ("all", "first", "last", "even", "odd")


def _subset(name: str, n: int) -> slice:
    """The frames of one walk among ``n`` (see the module notes)."""
    return {"all": slice(None), "first": slice(0, n // 2), "last": slice(n // 2, None),
            "even": slice(0, None, 2), "odd": slice(1, None, 2)}[name]


@dataclass
class Row:
    detector: str
    subset: str
    memory: str
    n: int
    iou: MapScore
    centre: MapScore
    ms: dict[str, float]
    passes: list[MapScore] = field(default_factory=list)  # IoU score after each pass


def _frames(scene: Path, registration: str, n: int) -> list[Frame]:
    source = open_source(scene, RecordingOptions(registration=Registration(registration)))
    with source:
        return [f for f in source.frames(max_frames=n) if isinstance(f, Frame)]


def _perceptions(name: str, data: Path, frames: list[Frame]) -> tuple[list[FramePerception], dict[str, float]]:
    """Each frame's lifted detections by one detector, and the mean milliseconds of detect and lift."""
    perceptor = build_perceptor(name, weights=data, backend="onnxruntime")
    out, t_detect, t_lift = [], [], []
    for frame in frames:
        t0 = time.perf_counter()
        dets = perceptor.detector.detect(frame.color)
        t1 = time.perf_counter()
        lifted = lift_detections(frame, dets, perceptor.params)
        t2 = time.perf_counter()
        out.append(FramePerception(frame.index, frame.stamp_ns, lifted, dets,
                                   viewpoint=frame.T_world_camera[:3, 3].copy(), frame=frame))
        t_detect.append(t1 - t0)
        t_lift.append(t2 - t1)
    return out, {"detect": 1e3 * float(np.mean(t_detect)), "lift": 1e3 * float(np.mean(t_lift))}


def _ceiling(perceptions: list[FramePerception], truth) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Required objects that one lifted detection of some frame fits: by IoU, and by centre distance."""
    boxes = np.concatenate([p.detections.boxes for p in perceptions]).reshape(-1, 9)
    names = [n for p in perceptions for n in p.detections.names]
    return (reached_by_detections(boxes, names, truth, MatchMode.IOU),
            reached_by_detections(boxes, names, truth, MatchMode.CENTRE))


def _replay(perceptions: list[FramePerception], memory: SceneMemory, passes: int, truth
            ) -> tuple[ObjectViews, list[float], list[tuple[int, MapScore, MapScore]]]:
    """Feed the perceptions ``passes`` times (a minute apart): each object's views, the update
    times (s) and the score (``_score``) after each pass."""
    views = ObjectViews()
    t_memory = []
    scores = []
    span = perceptions[-1].stamp_ns - perceptions[0].stamp_ns + PASS_GAP_NS
    for k in range(passes):
        for perception in perceptions:
            perception = replace(perception, frame_index=perception.frame_index + k * len(perceptions),
                                 stamp_ns=perception.stamp_ns + k * span)
            t0 = time.perf_counter()
            result = memory.update(perception)
            t_memory.append(time.perf_counter() - t0)
            views.merged(result.merged)
            touched = (memory.get(i) for i in (*result.created, *result.updated))
            views.observe(perception.frame, ((o.id, o.box, memory.geometry_points(o.id))
                                             for o in touched if o is not None))
        scores.append(_score(memory, truth))
    return views, t_memory, scores


def _score(memory: SceneMemory, truth) -> tuple[int, MapScore, MapScore]:
    objects = memory.published_objects()
    boxes = np.array([o.box for o in objects]).reshape(-1, 9)
    names = [o.class_name for o in objects]
    scores = np.array([o.score for o in objects])
    return (len(objects), score_object_map(boxes, names, scores, truth, MatchMode.IOU),
            score_object_map(boxes, names, scores, truth, MatchMode.CENTRE))


def _per_class(row: Row, truth) -> str:
    """'class matched/required' for every class of the ground truth's required objects (IoU mode)."""
    required: dict[str, int] = defaultdict(int)
    for g in truth:
        if not g.optional:
            required[g.class_name] += 1
    matched: dict[str, int] = defaultdict(int)
    for gid in row.iou.matched:
        matched[next(g.class_name for g in truth if g.id == gid)] += 1
    return ", ".join(f"{c} {matched[c]}/{n}" for c, n in sorted(required.items()))


def main() -> None:
    data = default_data_dir()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=data, help="shared data folder (default: %(default)s)")
    p.add_argument("--detectors", default="yolo-fastest-1.1-xl,yolox-nano,nanodet-plus-m-416,ensemble-yolox-nanodet")
    p.add_argument("--memories", default="legacy,evidence,geometry,full")
    p.add_argument("--frames", type=int, default=100)
    p.add_argument("--subsets", default="all", help=f"walks made of the frames, among {','.join(SUBSETS)}")
    p.add_argument("--passes", type=int, default=1, help="replay the frames this many times")
    p.add_argument("--registration", default="auto", choices=[r.value for r in Registration])
    p.add_argument("--out", type=Path, default=None, help="write each combination's pictures here")
    p.add_argument("--per-class", action="store_true", help="matches per ground-truth class")
    args = p.parse_args()
    subsets = args.subsets.split(",")
    if not set(subsets) <= set(SUBSETS):
        p.error(f"--subsets: choose among {','.join(SUBSETS)}, got {args.subsets}")
    scene = args.data / "redkitchen"
    truth = load_ground_truth(scene / "ground_truth.json")
    frames = _frames(scene, args.registration, args.frames)
    required = [g for g in truth if not g.optional]
    print(f"redkitchen: {len(frames)} frames, registration {args.registration}; ground truth: "
          f"{len(required)} required objects ({sum(g.easy for g in required)} easy)")
    rows: list[Row] = []
    ceilings: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for detector in args.detectors.split(","):
        perceptions, ms = _perceptions(detector, args.data, frames)
        ceilings[detector] = _ceiling(perceptions, truth)
        for subset, name in ((subset, name) for subset in subsets for name in args.memories.split(",")):
            walk = perceptions[_subset(subset, len(perceptions))]
            memory = SceneMemory(**MEMORIES[name])
            views, t_memory, scores = _replay(walk, memory, args.passes, truth)
            n, iou, centre = scores[-1]
            rows.append(Row(detector, subset, name, n, iou, centre, {**ms, "memory": 1e3 * float(np.mean(t_memory))},
                            [s[1] for s in scores]))
            if args.out is not None:
                args.out.mkdir(parents=True, exist_ok=True)
                objects = memory.published_objects()
                tag = f"{detector}_{name}" + ("" if subset == "all" else f"_{subset}")
                save_contact_sheet(args.out / f"objects_{tag}.png", objects, views,
                                   title=f"{detector}, memory {name}, frames {subset}: {iou.summary()}")
                cams = np.array([p.frame.T_world_camera[:3, 3] for p in walk])
                save_top_down_map(args.out / f"top_down_{tag}.png", objects, None, cams,
                                  title=f"{detector}, {name}, {subset}")
    print(f"\n{'detector':24s} {'frames':6s} {'memory':9s} {'pub':>4s} | IoU>=0.25: {'prec':>5s} {'rec':>5s} "
          f"easy dup false (mislab) | centre<=0.3m: prec   rec | ms/frame detect lift memory")
    for r in rows:
        i, c = r.iou, r.centre
        print(f"{r.detector:24s} {r.subset:6s} {r.memory:9s} {r.n:4d} | {i.precision:16.2f} {i.recall:5.2f} "
              f"{len(i.easy_matched):2d}/{i.n_easy} {i.n_duplicates:3d} {i.n_false:5d} ({i.n_mislabelled:2d})    | "
              f"{c.precision:17.2f} {c.recall:5.2f} | {r.ms['detect']:13.1f} {r.ms['lift']:4.1f} {r.ms['memory']:6.1f}")
    if args.passes > 1:
        print(f"\nafter each of {args.passes} passes: precision / recall (easy), IoU >= 0.25")
        for r in rows:
            print(f"{r.detector:24s} {r.subset:6s} {r.memory:9s} " + "  ".join(
                f"{s.precision:.2f}/{s.recall:.2f} ({len(s.easy_matched)})" for s in r.passes))
    print("\nceiling: required objects that at least one single lifted detection fits (any frame, any score "
          "the detector passes)")
    n = len(required)
    for detector, (by_iou, by_centre) in ceilings.items():
        print(f"{detector:24s} IoU>=0.25 {len(by_iou):2d}/{n}   centre<=0.3m {len(by_centre):2d}/{n}")
    if args.per_class:
        print()
        for r in rows:
            print(f"{r.detector} / {r.subset} / {r.memory}: {_per_class(r, truth)}")
        print()
        for detector, (by_iou, _) in ceilings.items():
            outside = sorted(f"{g.class_name} {g.id}" for g in required if g.id not in by_iou)
            print(f"{detector}: no single detection fits (IoU): {', '.join(outside)}")


if __name__ == "__main__":
    main()
