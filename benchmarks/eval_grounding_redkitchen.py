"""Grounding accuracy on the team's redkitchen phrases (tests/data/redkitchen_phrases.json) against a run.

Run: .venv/bin/python benchmarks/eval_grounding_redkitchen.py RUN_DIR [--show]

RUN_DIR is the output of ``embodied-ros run ../shared/data/redkitchen --weights ../shared/data/yolox_nano
--out RUN_DIR`` (its memory.json). Prints the accuracy per kind of phrase (the old run's answers;
viewer-centred, colour, material, negation and absent-object phrases answered by ground-truth
objects) and, with --show, every phrase with the engine's answer. It also runs against older
code (``PYTHONPATH=<a checkout of main>``): the engine's newer arguments (viewpoint, vocabulary) are
then left out, so before/after figures come from one memory and one phrase file.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from redkitchen_phrases import evaluate  # noqa: E402

from embodied_ros.grounding import Grounder  # noqa: E402
from embodied_ros.memory import SceneMemory  # noqa: E402

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--show", action="store_true", help="print every phrase and its answer")
    args = parser.parse_args()
    memory = SceneMemory.load(args.run_dir / "memory.json")
    snapshot = memory.snapshot()
    grounder = Grounder(min_observations=memory.config.min_observations)
    try:
        from embodied_ros.grounding.viewpoint import Viewpoint
    except ImportError:  # older code: no viewpoints, no vocabulary
        print(f"engine without viewpoints ({Grounder.__module__})")

        def ground(phrase, viewpoint):
            return grounder.ground(phrase, snapshot)

        make = None
    else:
        def ground(phrase, viewpoint):
            return grounder.ground(phrase, snapshot, viewpoint=viewpoint, vocabulary=memory.vocabulary)

        def make(T, K, width, number):
            return Viewpoint(T, f"the camera of frame-{number:06d}", math.atan2(0.5 * width, float(K[0, 0])))
    start = time.perf_counter()
    outcomes = evaluate(ground, DATA / "redkitchen", make)
    seconds = time.perf_counter() - start
    by_kind = defaultdict(list)
    for o in outcomes:
        by_kind[o.kind].append(o.ok)
        if args.show:
            print(o.line)
    for kind, oks in by_kind.items():
        print(f"{kind:9s} {sum(oks):3d}/{len(oks):3d}")
    first = [o.ok for o in outcomes if o.first_set]
    later = [o.ok for o in outcomes if not o.first_set]
    print(f"all      {sum(o.ok for o in outcomes):3d}/{len(outcomes):3d}   (first set {sum(first)}/{len(first)}, "
          f"later phrases {sum(later)}/{len(later)}; {len(outcomes)} phrases in {seconds:.1f} s)")


if __name__ == "__main__":
    main()
