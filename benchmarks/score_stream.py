"""Score a run's map at every moment: each /embodied/objects message of its bag against a ground truth.

A run (``embodied-ros run ... --out RUN``) writes the published map of every frame into RUN/scene.mcap. This
reads those messages back (with the bag's own message definitions, so runs of older versions read too), the
camera positions from /tf where the bag holds the inputs, and prints the streaming score (metrics/streaming.py,
stream_report.py): time-averaged named precision, the messages holding a false object, the longest-lived false
objects, and with ``--true-boxes`` each true object's box over time. Given two runs of one recording (before,
after), it also prints the publication delay of the second against the first.

    .venv/bin/python benchmarks/score_stream.py RUN [RUN2] [--truth FILE] [--true-boxes]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rosbags.highlevel import AnyReader
from stream_report import print_delays, print_stream_table, print_true_boxes, score_rows

from embodied_ros.cli import default_data_dir
from embodied_ros.errors import InputError
from embodied_ros.messages.types import typestore
from embodied_ros.metrics.object_map import load_ground_truth

OBJECTS = "/embodied/objects"
TF = "/tf"


def bag_rows(run: Path) -> list[list]:
    """Every published map of a run's bag as replay_stream's rows (camera positions from /tf, or None)."""
    with AnyReader([run], default_typestore=typestore()) as reader:
        wanted = [c for c in reader.connections if c.topic in (OBJECTS, TF)]
        if not any(c.topic == OBJECTS for c in wanted):
            raise InputError(f"{run}: the bag has no {OBJECTS} messages")
        eyes: dict[int, list[float]] = {}
        maps: list[tuple[int, list]] = []
        for conn, stamp, raw in reader.messages(connections=wanted):
            msg = reader.deserialize(raw, conn.msgtype)
            if conn.topic == TF:
                for t in msg.transforms:
                    v = t.transform.translation
                    eyes[int(stamp)] = [float(v.x), float(v.y), float(v.z)]
                continue
            objects = [[int(o.id), str(o.class_name), [float(v) for v in o.box], float(o.score),
                        float(getattr(o, "confidence", 1.0)),
                        None if not hasattr(o, "settled") else bool(o.settled)]
                       for o in [*msg.objects, *msg.unknown_objects]]
            maps.append((int(stamp), objects))
    return [[stamp, eyes.get(stamp), objects] for stamp, objects in maps]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", type=Path, nargs="+", help="run folders (embodied-ros run --out), at most two")
    p.add_argument("--truth", type=Path, default=default_data_dir() / "redkitchen" / "ground_truth.json",
                   help="ground_truth.json in the runs' world frame (default: %(default)s)")
    p.add_argument("--true-boxes", action="store_true", help="each true object's box over time")
    args = p.parse_args()
    if len(args.runs) > 2:
        p.error("give one run, or two runs of one recording (before, after)")
    try:
        truth = load_ground_truth(args.truth)
        scores = [(str(run), score_rows(bag_rows(run), truth)) for run in args.runs]
    except (InputError, OSError) as err:
        print(f"score_stream: error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    looks = "camera positions from /tf" if any(s.n_looks > 1 for _, s in scores) else "none (no /tf in the bag)"
    print(f"{len(truth)} annotated objects ({args.truth}); messages of {OBJECTS} scored at IoU >= 0.25, "
          f"named objects; looks: {looks}")
    print_stream_table(scores, truth)
    if args.true_boxes:
        print_true_boxes(scores, truth)
    if len(scores) == 2:
        print_delays([(f"{scores[1][0]} against {scores[0][0]}", scores[0][1], scores[1][1])], truth)


if __name__ == "__main__":
    main()
