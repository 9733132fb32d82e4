"""Grounding on the team's redkitchen phrases (tests/data/redkitchen_phrases.json) against a run: right, false and
not-found answers by kind of phrase.

Run: .venv/bin/python benchmarks/eval_grounding_redkitchen.py RUN_DIR [--show] [--all-objects] [--parser rules]

RUN_DIR is the output of ``embodied-ros run ../shared/data/redkitchen --weights ../shared/data --out RUN_DIR``
(its memory.json). Each phrase's answer is one of:

* right: the answer is one of the phrase's ground-truth objects, or there is no answer where nothing in the
  kitchen fits;
* false: an answer (success) with the wrong object, or with any object where nothing fits: what a robot
  must never be told;
* not found: no answer where something fits (honest, and usually the map's fault: the object is not in it).

Phrases are grounded among the objects the run published (what RViz showed; ``--all-objects``: every object
of the memory, as the grounding CLI did before). It also runs against older code
(``PYTHONPATH=<a copy of main>``): the engine's newer arguments are then left out, so before/after figures
come from one memory and one phrase file.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from redkitchen_phrases import evaluate  # noqa: E402

from embodied_ros.grounding import Grounder  # noqa: E402
from embodied_ros.memory import SceneMemory  # noqa: E402

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
VERDICTS = ("right", "false", "not found")


def _table(outcomes: list, key) -> list[str]:
    groups: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        groups[key(o)][o.verdict] += 1
    lines = []
    for name, c in groups.items():
        n = sum(c.values())
        lines.append(f"  {name:22s} {n:4d}  " + "  ".join(f"{v} {c[v]:3d}" for v in VERDICTS))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--show", action="store_true", help="print every phrase and its answer")
    parser.add_argument("--all-objects", action="store_true", help="ground among every object of the memory")
    parser.add_argument("--parser", choices=("auto", "spacy", "rules"), default="auto",
                        help="which parser reads the phrases (rules: the fallback where spaCy is not installed)")
    args = parser.parse_args()
    memory = SceneMemory.load(args.run_dir / "memory.json")
    snapshot = memory.snapshot()
    if not args.all_objects:
        try:
            from embodied_ros.grounding.map_view import published_snapshot
        except ImportError:  # older code: the same rule, spelt out here
            from dataclasses import replace

            import numpy as np

            keep = {o.id for o in snapshot.published(memory.config.max_per_class, memory.config.min_observations,
                                                     memory.config.publish_confidence)}
            rows = np.array([o.id in keep for o in snapshot.objects], dtype=bool)
            snapshot = replace(snapshot, objects=tuple(o for o in snapshot.objects if o.id in keep),
                               ids=snapshot.ids[rows], boxes=snapshot.boxes[rows], scores=snapshot.scores[rows],
                               class_names=tuple(n for n, k in zip(snapshot.class_names, rows, strict=True) if k))
        else:
            snapshot = published_snapshot(memory)
    grounder = Grounder(min_observations=memory.config.min_observations,
                        **({"parser": args.parser} if args.parser != "auto" else {}))
    print(f"{len(snapshot)} objects grounded among ({'all' if args.all_objects else 'published'}); "
          f"engine {sys.modules[Grounder.__module__].__file__}")
    try:
        from embodied_ros.grounding.viewpoint import Viewpoint
    except ImportError:  # older code: no viewpoints, no vocabulary
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
    if args.show:
        print("\n".join(o.line for o in outcomes))
    sets = dict.fromkeys(o.set for o in outcomes)
    titles = {"": "earlier phrases", "issue31": "issue31 phrases (written before any answer was seen)",
              "issue45": "issue45 phrases (with / from / counts, half-mapped superlatives, materials; written before "
                         "any answer was seen)",
              "issue39": "issue39 phrases (the room's structure; written before any answer was seen)"}
    for name in sets:
        print(f"{titles.get(name, name)}:")
        print("\n".join(_table([o for o in outcomes if o.set == name], lambda o: o.kind)))
    print("all phrases:")
    print("\n".join(_table(outcomes, lambda o: "all")))
    print("by the parser that answered:")
    print("\n".join(_table(outcomes, lambda o: o.parser or "none (refused before parsing)")))
    n = len(outcomes)
    false = sum(o.verdict == "false" for o in outcomes)
    print(f"false answers {false}/{n} = {false / max(n, 1):.1%}; {n} phrases in {seconds:.1f} s")


if __name__ == "__main__":
    main()
