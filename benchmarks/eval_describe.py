"""Describe-then-ground consistency: does grounding each object's generated description return that object?

Run: .venv/bin/python benchmarks/eval_describe.py [--seeds 100:130] [--run RUN_DIR]

For every confident object of each memory, ``describe_objects`` makes a referring expression; the
figures are the share of objects whose description, grounded, gives back the object:

* generator alone (``verify=False``): the first phrase the generator proposes, from the relation
  scores, grounded once afterwards (how far generator and grounder agree);
* checked (``verify=True``, what ``embodied-ros describe`` and ``~/describe`` do): phrases are tried
  until grounding returns the object clearly ahead of the runner-up; the rest keep a phrase marked
  not unique (objects that the grounder's relations cannot tell apart from another).

Synthetic memories hold a generated room's true boxes and classes (``eval_grounding_synthetic.py``);
``--run`` adds a real run's published objects (e.g. redkitchen's).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_grounding_synthetic import oracle_snapshot  # noqa: E402

from embodied_ros.grounding import Grounder  # noqa: E402
from embodied_ros.grounding.describe import describe_objects  # noqa: E402


def rates(grounder: Grounder, snapshots: list, vocabulary: tuple[str, ...] = (), min_observations: int = 2) -> str:
    """One line: objects, generator-alone agreement, checked uniqueness, seconds per object."""
    n = agree = unique = 0
    seconds = 0.0
    for snap in snapshots:
        raw = describe_objects(grounder, snap, vocabulary=vocabulary, min_observations=min_observations, verify=False)
        for d in raw:
            r = grounder.ground(d.text, snap, vocabulary=vocabulary)
            agree += bool(r.success and r.best.object.id == d.object_id)
        start = time.perf_counter()
        checked = describe_objects(grounder, snap, vocabulary=vocabulary, min_observations=min_observations)
        seconds += time.perf_counter() - start
        for d in checked:
            r = grounder.ground(d.text, snap, vocabulary=vocabulary)
            ok = r.success and r.best.object.id == d.object_id
            assert ok or not d.unique, (d, r.message)  # a phrase marked unique grounds back to its object
            unique += d.unique
        n += len(raw)
    return (f"{n} objects: generator alone {agree}/{n} = {agree / max(n, 1):.3f} ground back to their object; "
            f"checked {unique}/{n} = {unique / max(n, 1):.3f} unique; {1000 * seconds / max(n, 1):.1f} ms per object")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100:130", help="synthetic seed range START:STOP")
    parser.add_argument("--run", type=Path, default=None, help="also a real run's folder (memory.json)")
    args = parser.parse_args()
    from embodied_ros.synthetic import generate_scene

    grounder = Grounder()
    start, stop = (int(v) for v in args.seeds.split(":"))
    snaps = [oracle_snapshot(generate_scene(seed).objects) for seed in range(start, stop)]
    print(f"synthetic seeds {start}..{stop - 1} (true boxes): " + rates(grounder, snaps, min_observations=1))
    if args.run is not None:
        from embodied_ros.grounding.map_view import published_snapshot
        from embodied_ros.memory import SceneMemory

        memory = SceneMemory.load(args.run / "memory.json")
        snap = published_snapshot(memory)  # the objects the run published, as `describe` speaks of them
        print(f"{args.run} ({len(snap)} published objects): "
              + rates(grounder, [snap], memory.vocabulary, memory.config.min_observations))


if __name__ == "__main__":
    main()
