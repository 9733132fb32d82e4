"""The object map on a real room, scored on hand-made 3D ground truth: detector x memory x walk, one run.

For each detector the 2D detections of every frame are computed once and lifted once (``--cache``
keeps them on disk between runs, keyed by the detector, the frames and the lifting code); each
memory variant then takes the same perceptions, so the rows differ only by what they name.
Published objects are matched to the scene's ``ground_truth.json`` by its rules
(metrics/object_map.py): by IoU >= 0.25 of the oriented boxes, and separately by centre distance
<= 0.3 m.

Another room: ``--scene`` a posed RGB-D folder's path (any layout ``embodied-ros run`` reads) and ``--truth`` its
ground-truth file (benchmarks/ground_truth/: rooms annotated by hand, their images kept outside the repository).

Walks (``--walks``) are made of the scene's frames, the way a robot or a user would record them:
``sN`` every N-th frame (on the 1000-frame redkitchen walk at 30 Hz: ``s1`` the camera's rate,
``s10`` the 100 frames of ``redkitchen/``, ``s100`` and ``s200`` sparse keyframes of a short
recording; ``sN+O`` the same from frame O on, another recording of the walk); ``first`` and
``last`` the two halves at the full rate. The map should not depend on the rate: the table ends
with the objects published at one rate and not at another.

Memory variants: memory_variants.MEMORIES.

    .venv/bin/python benchmarks/bench_real_map.py [--scene redkitchen_walk | --scene PATH --truth FILE]
        [--walks s1,s3,s10,s100,s200,first,last]
        [--detectors yolox-nano] [--memories full] [--passes 1] [--registration auto]
        [--cache DIR] [--out DIR] [--per-class] [--baseline REF]

Named figures score the named objects only; the class-agnostic column counts the required objects that
any published object fits at IoU >= 0.25 whatever its class (unknown objects included), and the unknown
objects that fit no annotated object and lie mostly outside every annotated box (spurious; those on
optional structure are ignored). The structure column scores the room's published structure
(memory/structure.py) against the ground truth's structure boxes (its optional counter, cabinet and shelf
objects), by class and IoU >= 0.25: found of each class, and false (a counter, cabinet or shelf that fits
none of its class); walls and the floor are not annotated, only counted.

Prints one row per detector x walk x memory, per-stage milliseconds per frame, the change events the walk made
(memory/changes.py; the kitchen is still, so each one is a false alarm), each detector's
ceiling (the required objects that at least one single lifted detection fits: what the detector
gives the map), which published objects differ between the walks of one memory (``sN`` against
each other), and (``--per-class``) the matches per ground-truth class; ``--out`` also writes the
contact sheet and top-down picture of every combination. ``--passes N`` replays each walk N times,
each pass a minute after the previous one ended (a robot going round its room again). ``--baseline REF`` runs
the same benchmark on git REF's package first (a child process, the same cached detections, its pictures under
``--out``/baseline) and ends with a before / after line per row. Discovery's time is given per frame and per
frame it looked at (its own keyframes).

Every published map along the way is scored too (metrics/streaming.py, printed by stream_report.py): the
time-averaged named precision, the messages holding a false object, the longest-lived false objects, each
true object's box over time. ``--stream-baseline REF`` replays the same walks with a git ref's object map
(replay_stream.py in a fresh interpreter on ``git archive REF``; needs ``--cache``) and prints its rows
beside this code's, with the publication delay of this code against it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import re
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from baseline_runs import baseline_tree, print_result, run_child
from memory_variants import MEMORIES
from replay_stream import published_row

import embodied_ros
from embodied_ros.cli import default_data_dir
from embodied_ros.detections import FramePerception
from embodied_ros.frame import Frame
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.discovery import UNKNOWN_CLASS
from embodied_ros.memory.scene_memory import SceneMemory, SceneObject
from embodied_ros.metrics.object_map import (
    AgnosticScore,
    MapScore,
    MatchMode,
    load_ground_truth,
    reached_by_detections,
    score_class_agnostic,
    score_object_map,
)
from embodied_ros.network.lifting import lift_detections
from embodied_ros.network.registry import build_perceptor
from embodied_ros.outputs.contact_sheet import ObjectViews, save_contact_sheet
from embodied_ros.outputs.pictures import save_top_down_map
from embodied_ros.sources import RecordingOptions

try:
    from embodied_ros.recordings import open_source
except ImportError:  # a baseline from before recordings.py
    from embodied_ros.sources import open_source
from embodied_ros.sources.registration import Registration

PASS_GAP_NS = 60 * 10**9  # between the end of one pass and the start of the next
_STRIDE = re.compile(r"s([1-9][0-9]*)(?:\+([0-9]+))?")


def _walk(name: str, n: int) -> range:
    """The frame indices (into the scene's ``n`` frames) of one walk (see the module notes)."""
    if name == "first":
        return range(0, n // 2)
    if name == "last":
        return range(n // 2, n)
    m = _STRIDE.fullmatch(name)
    if m is None:
        raise ValueError(f"unknown walk {name!r}: sN (every N-th frame), sN+O (from frame O), first or last")
    return range(int(m.group(2) or 0), n, int(m.group(1)))


@dataclass
class Row:
    detector: str
    walk: str
    memory: str
    n_frames: int
    n: int
    iou: MapScore
    centre: MapScore
    ms: dict[str, float]
    agnostic: AgnosticScore | None = None  # all published objects, names ignored
    objects: list = field(default_factory=list)  # the published objects
    passes: list[MapScore] = field(default_factory=list)  # IoU score after each pass
    structure: list = field(default_factory=list)  # the published structure
    structure_score: MapScore | None = None
    stream: list = field(default_factory=list)  # every published map (replay_stream.published_row)
    changes: list[str] = field(default_factory=list)  # the change events the walk made (a still room: none)


def _frame_numbers(scene: Path) -> list[int]:
    return sorted(int(p.name[6:12]) for p in scene.glob("frame-*.pose.txt"))


def _frames(scene: Path, registration: str, wanted: set[int]) -> dict[int, Frame]:
    """The frames of the scene whose position (0-based, in file order) is in ``wanted``."""
    source = open_source(scene, RecordingOptions(registration=Registration(registration)))
    out: dict[int, Frame] = {}
    with source:
        for k, f in enumerate(source.frames(max_frames=max(wanted) + 1)):
            if k in wanted and isinstance(f, Frame):
                out[k] = f
    return out


def _cache_key(detector: str, scene: Path, registration: str) -> str:
    """What the lifted detections depend on: the detector, the recording and the network/lifting code."""
    code = Path(embodied_ros.__file__).parent / "network"
    h = hashlib.sha256(f"{detector}|{scene.resolve()}|{registration}".encode())
    for f in sorted(code.glob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _perceptions(name: str, data: Path, frames: dict[int, Frame], cache: Path | None, key: str
                 ) -> tuple[dict[int, FramePerception], dict[str, float]]:
    """Each frame's lifted detections by one detector (those of frames already in the cache read from
    it), and the mean milliseconds of detect and lift over the frames computed now (or when cached)."""
    stored = cache / f"{name}_{key}.pkl" if cache is not None else None
    dets: dict[int, tuple] = {}
    ms: dict[str, float] = {}
    if stored is not None and stored.exists():
        with stored.open("rb") as f:
            dets, ms = pickle.load(f)  # noqa: S301 - our own cache file
    missing = [k for k in frames if k not in dets]
    if missing:
        perceptor = build_perceptor(name, weights=data, backend="onnxruntime")
        t_detect, t_lift = [], []
        for k in missing:
            frame = frames[k]
            t0 = time.perf_counter()
            d2 = perceptor.detector.detect(frame.color)
            t1 = time.perf_counter()
            d3 = lift_detections(frame, d2, perceptor.params)
            t2 = time.perf_counter()
            dets[k] = (d2, d3)
            t_detect.append(t1 - t0)
            t_lift.append(t2 - t1)
        ms = {"detect": 1e3 * float(np.mean(t_detect)), "lift": 1e3 * float(np.mean(t_lift))}
        if stored is not None:
            stored.parent.mkdir(parents=True, exist_ok=True)
            with stored.open("wb") as f:
                pickle.dump((dets, ms), f)
    out = {k: FramePerception(f.index, f.stamp_ns, dets[k][1], dets[k][0], viewpoint=f.T_world_camera[:3, 3].copy(),
                              frame=f) for k, f in frames.items()}
    return out, ms


def _ceiling(perceptions: list[FramePerception], truth) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Required objects that one lifted detection of some frame fits: by IoU, and by centre distance."""
    boxes = np.concatenate([p.detections.boxes for p in perceptions]).reshape(-1, 9)
    names = [n for p in perceptions for n in p.detections.names]
    return (reached_by_detections(boxes, names, truth, MatchMode.IOU),
            reached_by_detections(boxes, names, truth, MatchMode.CENTRE))


def _replay(perceptions: list[FramePerception], memory: SceneMemory, passes: int, truth, stream: list
            ) -> tuple[ObjectViews, list[float], list[float], list[float], list[float], list[float],
                       list[tuple[int, MapScore, MapScore, AgnosticScore]]]:
    """Feed the perceptions ``passes`` times (a minute apart): each object's views, the update
    times (s) without and of discovery, of the structure, of discovery on the frames it looked at (its
    keyframes), of the change rules (within the update), and the score (``_score``) after each pass; ``stream``
    gets every published map. The change events are in ``memory.changes.log``."""
    views = ObjectViews()
    t_memory, t_discovery, t_structure, t_keyframe, t_changes = [], [], [], [], []
    scores = []
    span = perceptions[-1].stamp_ns - perceptions[0].stamp_ns + PASS_GAP_NS
    for k in range(passes):
        for perception in perceptions:
            perception = replace(perception, frame_index=perception.frame_index + k * len(perceptions),
                                 stamp_ns=perception.stamp_ns + k * span)
            t0 = time.perf_counter()
            result = memory.update(perception)
            structure_s = getattr(result, "structure_s", 0.0)  # 0: code before the room's structure
            t_memory.append(time.perf_counter() - t0 - result.discovery_s - structure_s)
            t_discovery.append(result.discovery_s)
            t_structure.append(structure_s)
            if getattr(result, "discovery_looked", result.discovery_s > 5e-4):  # (a baseline may not say)
                t_keyframe.append(result.discovery_s)
            stream.append(published_row(memory, perception))
            t_changes.append(getattr(result, "changes_s", 0.0))
            views.merged(result.merged)
            touched = (memory.get(i) for i in (*result.created, *result.updated))
            views.observe(perception.frame, ((o.id, o.box, memory.geometry_points(o.id))
                                             for o in touched if o is not None))
            if structure_s > 0:  # a keyframe the structure looked at: a view of its parts
                views.observe(perception.frame, ((o.id, o.box, np.zeros((0, 3))) for o in _structure(memory)))
        scores.append(_score(memory.published_objects(), truth))
    return views, t_memory, t_discovery, t_structure, t_keyframe, t_changes, scores


def _change_events(memory: SceneMemory) -> list[str]:
    """The change events of the memory's history (none in code before them)."""
    changes = getattr(memory, "changes", None)
    return [e.summary() for e in changes.log.events()] if changes is not None else []


def _structure(memory: SceneMemory) -> list:
    """The memory's published structure (none in code before it)."""
    return list(getattr(memory, "published_structure", list)())


STRUCTURE_TRUTH = ("counter", "cabinet", "shelf")  # the ground truth's structure classes (optional objects)


def _score_structure(parts: list, truth) -> MapScore:
    """The published counters, cabinets and shelves against the ground truth's structure boxes (as required
    objects, by class and IoU >= 0.25)."""
    gt = [replace(g, optional=False) for g in truth if g.class_name in STRUCTURE_TRUTH]
    parts = [o for o in parts if o.class_name in STRUCTURE_TRUTH]
    return score_object_map(np.array([o.box for o in parts]).reshape(-1, 9), [o.class_name for o in parts],
                            np.array([o.score for o in parts]), gt, MatchMode.IOU)


def _structure_line(row: Row, truth) -> str:
    """'counter 2/2 (IoU 0.38, 0.33), ...' for a row: found of each structure class, each object's best IoU
    with a part of its class, false parts, and the unscored walls and floor."""
    gt = [g for g in truth if g.class_name in STRUCTURE_TRUTH]
    out = []
    for name in STRUCTURE_TRUTH:
        mine = [g for g in gt if g.class_name == name]
        parts = np.array([o.box for o in row.structure if o.class_name == name]).reshape(-1, 9)
        best = [float(box_iou_3d(g.box[None], parts)[0].max()) if len(parts) else 0.0 for g in mine]
        found = sum(g.id in row.structure_score.matched for g in mine)
        out.append(f"{name} {found}/{len(mine)} (IoU {', '.join(f'{b:.2f}' for b in best)})")
    walls = sum(o.class_name == "wall" for o in row.structure)
    floors = sum(o.class_name == "floor" for o in row.structure)
    return f"{'; '.join(out)}; false {row.structure_score.n_false}; walls {walls}, floor {floors}"


def _score(everything: list, truth) -> tuple[int, MapScore, MapScore, AgnosticScore]:
    """The published named objects' count and scores, and the class-agnostic score of all published."""
    objects = [o for o in everything if o.class_name != UNKNOWN_CLASS]
    boxes = np.array([o.box for o in objects]).reshape(-1, 9)
    names = [o.class_name for o in objects]
    scores = np.array([o.score for o in objects])
    agnostic = score_class_agnostic(np.array([o.box for o in everything]).reshape(-1, 9),
                                    np.array([o.score for o in everything]), truth)
    return (len(objects), score_object_map(boxes, names, scores, truth, MatchMode.IOU),
            score_object_map(boxes, names, scores, truth, MatchMode.CENTRE), agnostic)


def _found(row: Row, truth, name: str) -> str:
    """'found/annotated' of one structure class in a row."""
    mine = [g for g in truth if g.class_name == name]
    return f"{sum(g.id in row.structure_score.matched for g in mine)}/{len(mine)}"


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


def _only_in(a: list, b: list) -> list[str]:
    """Objects of map ``a`` that map ``b`` has no object of (same class, IoU >= 0.25 or centres within 0.3 m)."""
    out = []
    for o in a:
        same = [p for p in b if p.class_name == o.class_name]
        if same:
            boxes = np.array([p.box for p in same])
            iou = box_iou_3d(o.box[None], boxes)[0]
            near = np.linalg.norm(boxes[:, :3] - o.box[:3], axis=1)
            if np.any(iou >= 0.25) or np.any(near <= 0.3):
                continue
        out.append(f"{o.class_name} #{o.id}")
    return out


def _rates(rows: list[Row]) -> list[str]:
    """Per detector and memory, the objects that the stride walks (sN) do not all publish."""
    lines = []
    groups: dict[tuple[str, str], dict[str, Row]] = defaultdict(dict)
    for r in rows:
        if _STRIDE.fullmatch(r.walk):
            groups[(r.detector, r.memory)][r.walk] = r
    for (detector, memory), walks in groups.items():
        names = sorted(walks, key=lambda w: int(_STRIDE.fullmatch(w).group(1)))
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                ab, ba = _only_in(walks[a].objects, walks[b].objects), _only_in(walks[b].objects, walks[a].objects)
                lines.append(f"{detector:24s} {memory:9s} {a:>5s} vs {b:5s}: {len(ab)} only in {a} "
                             f"({', '.join(ab) or '-'}); {len(ba)} only in {b} ({', '.join(ba) or '-'})")
    return lines


def _summary(rows: list[Row]) -> list[dict]:
    """Each row's figures, for the before / after table."""
    return [{"detector": r.detector, "walk": r.walk, "memory": r.memory, "frames": r.n_frames,
             "precision": r.iou.precision, "recall": r.iou.recall, "found": len(r.agnostic.found),
             "agnostic": r.agnostic.recall, "unknown": sum(o.class_name == UNKNOWN_CLASS for o in r.objects),
             "spurious": r.agnostic.count("spurious", [o.class_name for o in r.objects], UNKNOWN_CLASS),
             "discovery": r.ms["discovery"], "keyframe": r.ms["keyframe"], "memory_ms": r.ms["memory"]}
            for r in rows]


def _baseline(ref: str, data: Path) -> list[dict]:
    """This benchmark, with the same arguments, on ``ref``'s package (its pictures under ``--out``/baseline)."""
    argv, skip = [], False
    for a in sys.argv[1:]:
        if skip or a.split("=")[0] in ("--baseline", "--stream-baseline", "--data"):
            skip = a in ("--baseline", "--stream-baseline", "--data")
            continue
        # a scene or truth given by path, as the child sees it (it runs in the ref's tree)
        by_path = argv[-1:] == ["--truth"] or (argv[-1:] == ["--scene"] and not (data / a).is_dir())
        argv.append(str(Path(a).resolve()) if by_path and Path(a).exists() else a)
    if "--out" in argv:
        at = argv.index("--out") + 1
        argv[at] = str(Path(argv[at]) / "baseline")
    with tempfile.TemporaryDirectory() as tmp:
        code = baseline_tree(ref, Path(tmp))
        print(f"baseline {ref}: running ...", flush=True)
        # the data named outright: the ref's default (../shared/data beside its code) is not beside a temporary tree
        return run_child(code, __file__, [*argv, "--data", str(data.resolve()), "--result"])  # type: ignore[return-value]


def _before_after(before: list[dict], after: list[dict], ref: str) -> None:
    """One line per row: named precision / recall, found as anything, unknown, spurious, discovery ms (per frame,
    per keyframe), before (``ref``) and after (this code)."""
    print(f"\nbefore ({ref}) -> after (this code): named prec/rec | found as anything | unknown (spurious) | "
          "discovery ms/frame (ms/keyframe)")
    old = {(b["detector"], b["walk"], b["memory"]): b for b in before}
    for a in after:
        b = old.get((a["detector"], a["walk"], a["memory"]))
        if b is None:
            continue
        print(f"{a['detector']:14s} {a['walk']:6s} {a['memory']:6s} {b['precision']:.2f}/{b['recall']:.2f} -> "
              f"{a['precision']:.2f}/{a['recall']:.2f} | {b['found']:2d} ({b['agnostic']:.2f}) -> {a['found']:2d} "
              f"({a['agnostic']:.2f}) | {b['unknown']:2d} ({b['spurious']}) -> {a['unknown']:2d} ({a['spurious']}) | "
              f"{b['discovery']:.1f} ({b['keyframe']:.1f}) -> {a['discovery']:.1f} ({a['keyframe']:.1f})")


def _baseline_row(args: argparse.Namespace, detector: str, walk: str, name: str, overrides: dict, truth,
                  scene: Path) -> Row:
    """One walk replayed with ``--baseline``'s object map (replay_stream.py in a fresh interpreter)."""
    if not hasattr(args, "baseline_code") and Path(args.stream_baseline, "embodied_ros").is_dir():
        args.stream_baseline_code = Path(args.stream_baseline).resolve()  # a tree already extracted (git archive REF)
    elif not hasattr(args, "baseline_code"):
        args.stream_baseline_tmp = tempfile.TemporaryDirectory(prefix="bench_real_map_")
        args.stream_baseline_code = baseline_tree(args.stream_baseline, Path(args.stream_baseline_tmp.name))
    steps = _walk(walk, len(_frame_numbers(scene)))
    cache = args.cache / f"{detector}_{_cache_key(detector, scene, args.registration)}.pkl"
    result = run_child(args.stream_baseline_code, str(Path(__file__).with_name("replay_stream.py")), [
        "--scene", str(scene.resolve()), "--detections", str(cache.resolve()), "--registration", args.registration,
        "--walk", f"{steps.start}:{steps.stop}:{steps.step}",
        "--memory", json.dumps({**MEMORIES[name], **overrides})])
    stream = result["snapshots"]
    objects = [SceneObject(o[0], o[1], o[3], np.array(o[2]), (), 0, 0, 0, 0, 0, confidence=o[4])
               for o in (stream[-1][2] if stream else [])]
    n, iou, centre, agnostic = _score(objects, truth)
    nan = float("nan")
    ms = {"detect": nan, "lift": nan, "memory": result.get("memory_ms", nan),
          "discovery": result.get("discovery_ms", nan), "structure": nan,
          "keyframe": nan}
    return Row(detector, walk, f"{name}@{Path(args.stream_baseline).name}", len(stream), n, iou, centre, ms, agnostic,
               objects, [iou], [], _score_structure([], truth), stream)


def main() -> None:
    data = default_data_dir()
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=data, help="shared data folder (default: %(default)s)")
    p.add_argument("--scene", default="redkitchen_walk",
                   help="folder under --data with ground_truth.json, or the path of a posed RGB-D folder")
    p.add_argument("--truth", type=Path, default=None,
                   help="ground-truth file (default: the scene folder's ground_truth.json)")
    p.add_argument("--walks", default="s1,s3,s10,s100,s200,first,last", help="walks made of the scene's frames")
    p.add_argument("--detectors", default="yolox-nano")
    p.add_argument("--memories", default="full")
    p.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                   help="a MemoryConfig field for every memory variant (repeatable), e.g. --set min_observations=1")
    p.add_argument("--passes", type=int, default=1, help="replay each walk this many times")
    p.add_argument("--registration", default="auto", choices=[r.value for r in Registration])
    p.add_argument("--cache", type=Path, default=None, help="keep the lifted detections here between runs")
    p.add_argument("--out", type=Path, default=None, help="write each combination's pictures here")
    p.add_argument("--per-class", action="store_true", help="matches per ground-truth class")
    p.add_argument("--baseline", default="", metavar="REF",
                   help="also run this benchmark on git REF's package, on the same detections: before / after")
    p.add_argument("--result", action="store_true", help=argparse.SUPPRESS)  # a baseline child's summary line
    p.add_argument("--stream-baseline", default="", metavar="REF",
                   help="git ref (or a folder of its git archive): also replay every walk with its object map and "
                        "score every published map of both (needs --cache)")
    p.add_argument("--true-boxes", action="store_true", help="each true object's box over time")
    args = p.parse_args()
    if args.stream_baseline and args.cache is None:
        p.error("--stream-baseline needs --cache (its replay reads the lifted detections from there)")
    before = _baseline(args.baseline, args.data) if args.baseline else None
    scene = args.data / args.scene
    if not scene.is_dir() and Path(args.scene).is_dir():
        scene = Path(args.scene)
    overrides = {k: json.loads(v) for k, v in (item.split("=", 1) for item in args.set)}
    truth = load_ground_truth(args.truth or scene / "ground_truth.json")
    numbers = _frame_numbers(scene)
    try:
        walks = {w: list(_walk(w, len(numbers))) for w in args.walks.split(",")}
    except ValueError as err:
        p.error(f"--walks: {err}")
    wanted = {k for ks in walks.values() for k in ks}
    frames = _frames(scene, args.registration, wanted)
    required = [g for g in truth if not g.optional]
    print(f"{args.scene}: {len(numbers)} frames ({len(frames)} used), registration {args.registration}; ground "
          f"truth: {len(required)} required objects ({sum(g.easy for g in required)} easy)")
    rows: list[Row] = []
    ceilings: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
    for detector in args.detectors.split(","):
        perceptions, ms = _perceptions(detector, args.data, frames, args.cache,
                                       _cache_key(detector, scene, args.registration))
        ceilings[detector] = _ceiling(list(perceptions.values()), truth)
        for walk, name in ((walk, name) for walk in walks for name in args.memories.split(",")):
            steps = [perceptions[k] for k in walks[walk] if k in perceptions]
            memory = SceneMemory(**{**MEMORIES[name], **overrides})
            stream: list = []
            views, t_memory, t_discovery, t_structure, t_keyframe, t_changes, scores = _replay(
                steps, memory, args.passes, truth, stream)
            n, iou, centre, agnostic = scores[-1]
            objects = memory.published_objects()
            parts = _structure(memory)
            if args.stream_baseline:
                rows.append(_baseline_row(args, detector, walk, name, overrides, truth, scene))
            rows.append(Row(detector, walk, name, len(steps), n, iou, centre,
                            {**ms, "memory": 1e3 * float(np.mean(t_memory)),
                             "discovery": 1e3 * float(np.mean(t_discovery)),
                             "structure": 1e3 * float(np.mean(t_structure)),
                             "keyframe": 1e3 * float(np.mean(t_keyframe)) if t_keyframe else 0.0,
                             "changes": 1e3 * float(np.mean(t_changes))}, agnostic, objects,
                            [s[1] for s in scores], parts, _score_structure(parts, truth), stream,
                            _change_events(memory)))
            if args.out is not None:
                args.out.mkdir(parents=True, exist_ok=True)
                tag = f"{detector}_{name}_{walk}"
                save_contact_sheet(args.out / f"objects_{tag}.png", objects + parts, views,
                                   title=f"{detector}, memory {name}, walk {walk}: {iou.summary()}")
                cams = np.array([s.frame.T_world_camera[:3, 3] for s in steps])
                save_top_down_map(args.out / f"top_down_{tag}.png", objects + parts, None, cams,
                                  title=f"{detector}, {name}, {walk}")
    print(f"\n{'detector':24s} {'walk':6s} {'frames':>6s} {'memory':14s} {'pub':>4s} | named, IoU>=0.25: {'prec':>5s} "
          f"{'rec':>5s} easy dup false (mislab) | centre<=0.3m: prec   rec | class-agnostic: found  unk spur "
          f"| structure: ctr cab shf false | ms/frame detect lift memory discovery (a keyframe of it) structure "
          f"(changes) | changes")
    for r in rows:
        i, c, a = r.iou, r.centre, r.agnostic
        unknown = sum(o.class_name == UNKNOWN_CLASS for o in r.objects)
        names = [o.class_name for o in r.objects]
        print(f"{r.detector:24s} {r.walk:6s} {r.n_frames:6d} {r.memory:14s} {r.n:4d} | {i.precision:23.2f} "
              f"{i.recall:5.2f} {len(i.easy_matched):2d}/{i.n_easy} {i.n_duplicates:3d} {i.n_false:5d} "
              f"({i.n_mislabelled:2d})    | {c.precision:17.2f} {c.recall:5.2f} | {a.recall:19.2f} "
              f"({len(a.found):2d}) {unknown:3d} {a.count('spurious', names, UNKNOWN_CLASS):4d} | "
              f"{_found(r, truth, 'counter'):>14s} {_found(r, truth, 'cabinet'):>3s} {_found(r, truth, 'shelf'):>3s} "
              f"{r.structure_score.n_false:5d} | {r.ms['detect']:13.1f} {r.ms['lift']:4.1f} {r.ms['memory']:6.1f} "
              f"{r.ms['discovery']:9.1f} ({r.ms['keyframe']:.1f}) {r.ms['structure']:9.1f} "
              f"({r.ms.get('changes', float('nan')):.2f}) | {len(r.changes):7d}")
    if args.result:
        print_result(_summary(rows))
    if before is not None:
        _before_after(before, _summary(rows), args.baseline)
    rates = _rates(rows)
    if rates:
        print("\nthe same map at any rate: published objects one stride walk has and another has not")
        print("\n".join(rates))
    if args.passes > 1:
        print(f"\nafter each of {args.passes} passes: precision / recall (easy), IoU >= 0.25")
        for r in rows:
            print(f"{r.detector:24s} {r.walk:6s} {r.memory:9s} " + "  ".join(
                f"{s.precision:.2f}/{s.recall:.2f} ({len(s.easy_matched)})" for s in r.passes))
    print("\nceiling: required objects that at least one single lifted detection fits (any frame of the walks, "
          "any score the detector passes)")
    n = len(required)
    for detector, (by_iou, by_centre) in ceilings.items():
        print(f"{detector:24s} IoU>=0.25 {len(by_iou):2d}/{n}   centre<=0.3m {len(by_centre):2d}/{n}")
    if args.per_class:
        print()
        for r in rows:
            print(f"{r.detector} / {r.walk} / {r.memory}: {_per_class(r, truth)}")
        print()
        for detector, (by_iou, _) in ceilings.items():
            outside = sorted(f"{g.class_name} {g.id}" for g in required if g.id not in by_iou)
            print(f"{detector}: no single detection fits (IoU): {', '.join(outside)}")
    print()
    for r in rows:
        named = [o for o in r.objects if o.class_name != UNKNOWN_CLASS]
        false = [f"{o.class_name} #{o.id}" for o, res in zip(named, r.iou.results, strict=True)
                 if res.outcome.value in ("false", "duplicate")]
        print(f"{r.detector} / {r.walk} / {r.memory}: false or duplicate: {', '.join(false) or '-'}")
        unknown = [f"#{o.id} {outcome}" for o, outcome in zip(r.objects, r.agnostic.outcomes, strict=True)
                   if o.class_name == UNKNOWN_CLASS]
        if unknown:
            print(f"{r.detector} / {r.walk} / {r.memory}: unknown objects: {', '.join(unknown)}")
        missed = [f"{g.class_name} {g.id}" for g in truth if not g.optional and g.id not in r.agnostic.found]
        print(f"{r.detector} / {r.walk} / {r.memory}: not found as anything: {', '.join(missed)}")
        print(f"{r.detector} / {r.walk} / {r.memory}: structure: {_structure_line(r, truth)}")
        if r.changes:  # the room is still: every change event is a false alarm
            print(f"{r.detector} / {r.walk} / {r.memory}: change events: {'; '.join(r.changes)}")
    if not args.result:  # a --baseline child runs on a ref's package, which may not have the streaming score
        _print_streams(rows, truth, args.true_boxes)


def _print_streams(rows: list[Row], truth, true_boxes: bool) -> None:
    """The streaming score of every row, and (with a baseline) this code's publication delay against it."""
    from stream_report import print_delays, print_stream_table, print_true_boxes, score_rows  # this code's metrics

    scored = {(r.detector, r.walk, r.memory): score_rows(r.stream, truth) for r in rows}
    runs = [(f"{d} {w} {m}", s) for (d, w, m), s in scored.items()]
    print_stream_table(runs, truth)
    if true_boxes:
        print_true_boxes(runs, truth)
    pairs = [(f"{d} {w} {m} against {m2}", before, after) for (d, w, m), after in scored.items()
             for (d2, w2, m2), before in scored.items() if (d2, w2) == (d, w) and m2.startswith(m + "@")]
    if pairs:
        print_delays(pairs, truth)


if __name__ == "__main__":
    main()
