"""Print the streaming score (metrics/streaming.py) of runs: one table row per run, the longest-lived false
objects, each true object's box over time, and the publication delay of one run against another.

Shared by bench_real_map (its walks, this code and ``--baseline``) and score_stream (a run's bag). A run's
published maps come as replay_stream's rows: ``[stamp_ns, camera xyz or None, [[id, class, box, score,
confidence, settled], ...]]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from embodied_ros.metrics.object_map import GroundTruthObject
from embodied_ros.metrics.streaming import Snapshot, StreamScore, score_stream


def snapshots_of(rows: Sequence[list]) -> tuple[list[Snapshot], list[np.ndarray | None]]:
    """replay_stream's rows -> the snapshots and the camera position of each."""
    snaps, eyes = [], []
    for stamp, eye, objects in rows:
        settled = [o[5] for o in objects]
        snaps.append(Snapshot(int(stamp), np.array([o[0] for o in objects], dtype=np.int64),
                              tuple(o[1] for o in objects), np.array([o[2] for o in objects]).reshape(-1, 9),
                              np.array([o[3] for o in objects], dtype=np.float64),
                              None if any(s is None for s in settled) else np.array(settled, dtype=bool)))
        eyes.append(None if eye is None else np.asarray(eye, dtype=np.float64))
    return snaps, eyes


def score_rows(rows: Sequence[list], truth: Sequence[GroundTruthObject]) -> StreamScore:
    """The streaming score of one run's rows."""
    snaps, eyes = snapshots_of(rows)
    return score_stream(snaps, truth, eyes)


def _false_line(s: StreamScore, names: dict[int, str], top: int) -> str:
    out = []
    for f in s.false_objects[:top]:
        what = f"badly boxed {names.get(f.best_gt, '?')} (IoU {f.best_iou:.2f})" if f.best_iou > 0 else "false"
        out.append(f"{f.class_name} #{f.id} {what}: {f.snapshots} msgs, {f.seconds:.1f} s, {f.looks} looks")
    return "; ".join(out) or "-"


def print_stream_table(runs: Sequence[tuple[str, StreamScore]], truth: Sequence[GroundTruthObject],
                       top: int = 3) -> None:
    """One row per run: time-averaged named precision, snapshots holding a false object, the longest-lived
    false object's share, and the ``top`` false objects that stayed longest."""
    names = {g.id: f"{g.class_name} {g.id}" for g in truth}
    print(f"\n{'run':40s} {'msgs':>5s} {'looks':>5s} | {'prec(t)':>7s} {'msgs w/ false':>14s} {'longest':>7s} "
          f"{'false ids':>9s} {'true retracted':>14s} | longest-lived false objects")
    for label, s in runs:
        n_false = int(s.has_false.sum())
        print(f"{label:40s} {s.n_snapshots:5d} {s.n_looks:5d} | {s.mean_precision:7.3f} "
              f"{n_false:5d} ({100 * s.false_share:4.1f} %) {100 * s.longest_false_share:5.1f} % "
              f"{len(s.false_objects):9d} {len(s.retracted):14d} | {_false_line(s, names, top)}")


def print_true_boxes(runs: Sequence[tuple[str, StreamScore]], truth: Sequence[GroundTruthObject]) -> None:
    """Each true object's box over time: messages, IoU with its final box (mean, min) and with the
    annotated box (mean, min, last), and the messages in which the annotated IoU was below 0.25."""
    names = {g.id: f"{g.class_name} {g.id}" for g in truth}
    print("\nbox stability of the true objects: msgs | IoU with own final box mean/min | IoU with truth "
          "mean/min/last | msgs below 0.25")
    for label, s in runs:
        parts = []
        for t in s.true_objects:
            fin, gt = np.array(t.iou_final), np.array(t.iou_truth)
            parts.append(f"{t.class_name} #{t.id} ({names.get(t.gt_id, '?')}): {len(gt)} | {fin.mean():.2f}/"
                         f"{fin.min():.2f} | {gt.mean():.2f}/{gt.min():.2f}/{gt[-1]:.2f} | {int((gt < 0.25).sum())}")
        print(f"{label}:\n  " + "\n  ".join(parts or ["-"]))


def print_delays(pairs: Sequence[tuple[str, StreamScore, StreamScore]], truth: Sequence[GroundTruthObject]) -> None:
    """Per pair of runs of one walk (before, after): for each annotated object both found, when it was
    first matched in each (seconds and camera looks from the start), and the mean delay of after."""
    names = {g.id: f"{g.class_name} {g.id}" for g in truth}
    print("\npublication delay: annotated objects both runs found, first matched (s / looks from the start), "
          "before -> after")
    for label, before, after in pairs:
        both = sorted(set(before.first_match_ns) & set(after.first_match_ns))
        if not both:
            print(f"{label}: none found by both")
            continue
        ds = [(after.first_match_ns[g] - after.start_ns - before.first_match_ns[g] + before.start_ns) * 1e-9
              for g in both]
        dl = [after.first_match_looks[g] - before.first_match_looks[g] for g in both]
        each = ", ".join(f"{names[g]} {(before.first_match_ns[g] - before.start_ns) * 1e-9:.1f}/"
                         f"{before.first_match_looks[g]} -> {(after.first_match_ns[g] - after.start_ns) * 1e-9:.1f}/"
                         f"{after.first_match_looks[g]}" for g in both)
        only = sorted(set(before.first_match_ns) ^ set(after.first_match_ns))
        print(f"{label}: mean delay {np.mean(ds):+.2f} s, {np.mean(dl):+.2f} looks (max {max(dl):+d}); {each}"
              + (f"; found by one only: {', '.join(names[g] for g in only)}" if only else ""))
