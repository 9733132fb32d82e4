"""What changed, scored on synthetic rooms visited twice: removed / new / moved, recall and precision per kind.

Each seed's room (synthetic/revisit.py) is walked once, changed (things moved, taken away, added), and
walked again on another path a minute later; the frames go through the real memory as one recording, the
detections coming from the truth's 2D boxes lifted through the depth (``LiftedGroundTruthPerceptor``: the
memory keeps points and surfaces as on real data; ``--miss-rate`` drops detections, so a detector's misses
are part of the test). The events left in the history (a move replaces the halves told before it) are
matched to the truth per kind: same class, IoU >= 0.25 of the boxes (a move: both its boxes).

A change can only be told if the robot saw it: a truth counts as *observable* when its place was in view in
at least ``--min-looks`` looks of the pass that must show it (removed: the object seen in the first pass and
its empty place in the second; new: its place in the first and the object in the second; moved: both).
Recall is over observable changes; the unobservable ones are listed. *Looks to tell*: for each change found,
the looks (place of the camera, 0.5 m, and visit) in the second pass that had its place in view, up to the
frame that told it (a move: of its place seen second).

    .venv/bin/python benchmarks/bench_changes.py [--seeds 0-19] [--miss-rate 0.0] [--frames 60] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from embodied_ros.geometry.boxes import box_rotations
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.change_events import ChangeEvent
from embodied_ros.memory.existence import place_of
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.synthetic import LiftedGroundTruthPerceptor, SceneConfig, TrueChange, generate_scene, revisit

KINDS = ("removed", "new", "moved")
IOU = 0.25
CENTRE_M = 0.3  # the second, looser place rule: box centres within this (as bench_real_map's centre mode)


def _face_points(box: np.ndarray, n: int = 6) -> np.ndarray:
    """(6 n^2, 3) points on the six faces of a box (an n x n grid on each)."""
    R = box_rotations(box[None])[0]
    g = np.linspace(-0.5, 0.5, n)
    a, b = (m.ravel() for m in np.meshgrid(g, g))
    faces = []
    for axis in range(3):
        for side in (-0.5, 0.5):
            p = np.zeros((len(a), 3))
            p[:, axis] = side
            p[:, (axis + 1) % 3], p[:, (axis + 2) % 3] = a, b
            faces.append(p)
    return box[:3] + (np.concatenate(faces) * box[3:6]) @ R.T


def _place_in_view(points: np.ndarray, frame, depth_clean: np.ndarray) -> bool:
    """Whether at least half of ``points`` lie in the image, within 4 m, not hidden behind something nearer."""
    T = frame.T_world_camera
    cam = (points - T[:3, 3]) @ T[:3, :3]
    z = cam[:, 2]
    H, W = depth_clean.shape
    with np.errstate(divide="ignore", invalid="ignore"):
        u = frame.K[0, 0] * cam[:, 0] / z + frame.K[0, 2]
        v = frame.K[1, 1] * cam[:, 1] / z + frame.K[1, 2]
    ok = (z > 0.1) & (z < 4.0) & (u >= 0) & (u < W) & (v >= 0) & (v < H)
    d = np.zeros(len(points))
    d[ok] = depth_clean[v[ok].astype(int), u[ok].astype(int)]
    ok &= (d <= 0) | (d >= z - 0.05)
    return ok.mean() >= 0.5


def _seen_object(box: np.ndarray, truth, min_pixels: int) -> bool:
    """Whether the object of ``box`` shows with at least ``min_pixels`` pixels in this truth frame."""
    scene_boxes = truth.frame.extras.get("boxes")
    counts = np.bincount(truth.instance.reshape(-1), minlength=len(scene_boxes) + 1)[1:]
    same = [k for k, b in enumerate(scene_boxes) if np.allclose(b, box)]
    return bool(same) and counts[same[0]] >= min_pixels


def run_seed(seed: int, miss_rate: float, frames: int, min_looks: int, masks: bool = False) -> dict:
    """One room visited twice: the events, the truth, their matches and the cost of the change step."""
    config = SceneConfig()
    config = replace(config, trajectory=replace(config.trajectory, n_frames=frames))
    visit = revisit(generate_scene(seed, config))
    perceptor = LiftedGroundTruthPerceptor(miss_rate=miss_rate, seed=seed, masks=masks)
    memory = SceneMemory()
    step, cost = memory.changes.step, []

    def timed(*args, **kwargs):
        t = time.perf_counter()
        out = step(*args, **kwargs)
        cost.append(time.perf_counter() - t)
        return out

    memory.changes.step = timed
    n1 = len(visit.first)
    looks: dict[int, dict[str, Any]] = defaultdict(lambda: {"before": set(), "after": [], "new_place_before": set()})
    told_at: dict[int, int] = {}
    for i in range(len(visit)):
        truth = visit.render(i)
        frame = truth.frame
        place = place_of(frame.T_world_camera[:3, 3], 0.5)
        for k, change in enumerate(visit.changes):
            looks[k]  # noqa: B018 - made for every change
            if i < n1:
                box = change.old_box if change.old_box is not None else change.new_box
                seen = (_seen_object(box, truth, 150) if change.old_box is not None
                        else _place_in_view(_face_points(box), frame, truth.depth_clean))
                if seen:
                    looks[k]["before"].add(place)
                if change.kind == "moved" and _place_in_view(_face_points(change.new_box), frame, truth.depth_clean):
                    looks[k]["new_place_before"].add(place)
            else:
                parts = []
                if change.old_box is not None:
                    parts.append(("old", _place_in_view(_face_points(change.old_box), frame, truth.depth_clean)))
                if change.new_box is not None:
                    parts.append(("new", _seen_object(change.new_box, truth, 150)))
                for name, seen in parts:
                    if seen:
                        looks[k]["after"].append((i, name, place))
        result = memory.update(perceptor.perceive(frame))
        for event in result.changes:
            told_at[event.seq] = i
    events = memory.changes.log.current()
    return _score(seed, visit.changes, events, looks, told_at, min_looks, n1) | {
        "change_ms": 1e3 * float(np.mean(cost)), "change_ms_max": 1e3 * float(np.max(cost)),
        "let_go": memory.changes.n_let_go}


def _matches(event: ChangeEvent, kind: str, change: TrueChange, by_centre: bool = False) -> bool:
    """Same kind and class, each box at the right place: IoU >= IOU (or, ``by_centre``, centres within CENTRE_M)."""
    if event.kind.value != kind or event.class_name != change.class_name:
        return False
    pairs = ([(event.old_box, change.old_box)] if kind in ("removed", "moved") else []) + \
        ([(event.new_box, change.new_box)] if kind in ("new", "moved") else [])
    if by_centre:
        return all(np.linalg.norm(a[:3] - b[:3]) <= CENTRE_M for a, b in pairs)
    return all(box_iou_3d(a[None], b[None])[0, 0] >= IOU for a, b in pairs)


def _observable(change: TrueChange, before: int, after: dict[str, int], min_looks: int) -> str | None:
    """What the robot could tell of a change: its kind, or for a move of which it saw one half only, that half
    (the old place seen empty: removed; the new place, seen empty in the first pass: new); None: nothing."""
    old = change.old_box is not None and after["old"] >= min_looks
    new = change.new_box is not None and after["new"] >= min_looks
    if change.kind == "removed":
        return "removed" if before >= min_looks and old else None
    if change.kind == "new":
        return "new" if before >= 1 and new else None
    seen_first = before >= min_looks  # a moved thing: seen where it stood in the first pass
    if seen_first and old and new:
        return "moved"
    return "removed" if seen_first and old else "new" if new and after.get("new_place_before", 0) >= 1 else None


def _score(seed: int, truths: list[TrueChange], events: list[ChangeEvent], looks: dict, told_at: dict[int, int],
           min_looks: int, n1: int) -> dict:
    rows = []
    used: set[int] = set()
    near_used: set[int] = set()
    for k, change in enumerate(truths):
        before = len(looks[k]["before"])
        after = {name: len({p for _, n, p in looks[k]["after"] if n == name}) for name in ("old", "new")}
        after["new_place_before"] = len(looks[k]["new_place_before"])
        kind = _observable(change, before, after, min_looks)
        hit = next((e for e in events if e.seq not in used and _matches(e, kind or change.kind, change)), None)
        near = next((e for e in events if e.seq not in near_used and _matches(e, kind or change.kind, change, True)),
                    None)
        if near is not None:
            near_used.add(near.seq)
        latency = None
        if hit is not None:
            used.add(hit.seq)
            at = told_at.get(hit.seq, 10**9)
            parts = {"removed": ("old",), "new": ("new",), "moved": ("old", "new")}[hit.kind.value]
            latency = min(len({p for i, n, p in looks[k]["after"] if n == name and i <= at}) for name in parts)
        rows.append({"seed": seed, "kind": change.kind, "told_as": kind, "class": change.class_name,
                     "observable": kind is not None, "found": hit is not None, "found_near": near is not None,
                     "looks_to_tell": latency,
                     "looks_before": before, "looks_after": after})
    false = [{"seed": seed, "kind": e.kind.value, "class": e.class_name, "summary": e.summary()}
             for e in events if e.seq not in used]
    false_near = [{"seed": seed, "kind": e.kind.value} for e in events if e.seq not in near_used]
    return {"truths": rows, "false": false, "false_near": false_near, "events": [e.summary() for e in events]}


def _table(results: list[dict]) -> str:
    lines = [f"{'kind':8s} {'observable':>10s} | IoU >= {IOU}: {'found':>5s} {'recall':>6s} {'events':>6s} "
             f"{'false':>5s} {'prec':>5s} | centres <= {CENTRE_M} m: recall  prec | looks to tell: count of 0, 1, 2, "
             "... (max)"]
    for kind in KINDS:
        obs = [t for r in results for t in r["truths"] if t["told_as"] == kind]
        found = [t for t in obs if t["found"]]
        false = [f for r in results for f in r["false"] if f["kind"] == kind]
        near = [t for t in obs if t["found_near"]]
        false_near = [f for r in results for f in r["false_near"] if f["kind"] == kind]
        n_events = len(found) + len(false)
        lat = [t["looks_to_tell"] for t in found if t["looks_to_tell"] is not None]

        def ratio(a: int, b: int) -> float:
            return a / b if b else float("nan")

        lines.append(f"{kind:8s} {len(obs):10d} | {'':13s}{len(found):5d} {ratio(len(found), len(obs)):6.2f} "
                     f"{n_events:6d} {len(false):5d} {ratio(len(found), n_events):5.2f} | {'':17s}"
                     f"{ratio(len(near), len(obs)):6.2f} {ratio(len(near), len(near) + len(false_near)):5.2f} | "
                     f"{np.bincount(lat).tolist() if lat else '-'} ({max(lat) if lat else '-'})")
    rows = [t for r in results for t in r["truths"]]
    by_kind = ", ".join(f"{sum(t['kind'] == k for t in rows)} {k}" for k in KINDS)
    halves = sum(t["kind"] == "moved" and t["told_as"] in ("removed", "new") for t in rows)
    lines.append(f"truth: {len(rows)} changes ({by_kind}); {sum(not t['observable'] for t in rows)} not observable, "
                 f"{halves} moves of which one half was seen (scored as that half)")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="0-19", help="FIRST-LAST (inclusive) or a comma list")
    p.add_argument("--miss-rate", type=float, default=0.0, help="fraction of detections the detector drops")
    p.add_argument("--frames", type=int, default=60, help="frames per pass")
    p.add_argument("--masks", action="store_true",
                   help="a perfect segmenting detector (each object's own depth points) instead of 2D boxes lifted")
    p.add_argument("--min-looks", type=int, default=2, help="looks that make a change observable")
    p.add_argument("--json", type=Path, default=None, help="write every seed's rows here")
    args = p.parse_args()
    if "-" in args.seeds:
        first, last = (int(s) for s in args.seeds.split("-"))
        seeds = list(range(first, last + 1))
    else:
        seeds = [int(s) for s in args.seeds.split(",")]
    results = []
    for seed in seeds:
        t = time.time()
        r = run_seed(seed, args.miss_rate, args.frames, args.min_looks, args.masks)
        results.append(r)
        found = sum(t["found"] for t in r["truths"])
        print(f"seed {seed}: {len(r['truths'])} truths, {found} found, {len(r['false'])} false, change step "
              f"{r['change_ms']:.2f} ms/frame (max {r['change_ms_max']:.1f}), {time.time() - t:.0f} s", flush=True)
        for f in r["false"]:
            print(f"   false: {f['summary']}")
        for row in r["truths"]:
            if not row["found"]:
                told = f" (observable as {row['told_as']})" if row["told_as"] not in (None, row["kind"]) else ""
                print(f"   missed{' (not observable)' if not row['observable'] else told}: {row['kind']} "
                      f"{row['class']} (looks before {row['looks_before']}, after {row['looks_after']})")
    detector = "instance masks (own depth points)" if args.masks else "2D boxes lifted through depth"
    print(f"\n{len(seeds)} seeds, detector: truth as {detector}, miss rate {args.miss_rate}, {args.frames} frames a "
          f"pass; IoU >= {IOU}, same class")
    print(_table(results))
    print(f"change step: mean {np.mean([r['change_ms'] for r in results]):.2f} ms a frame, "
          f"max {max(r['change_ms_max'] for r in results):.1f} ms")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
