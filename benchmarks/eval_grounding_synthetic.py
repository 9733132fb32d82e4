"""Grounding accuracy on the synthetic world's generated prompts (held-out seeds), on ground-truth boxes.

Run: .venv/bin/python benchmarks/eval_grounding_synthetic.py [--seeds 100:130]

Each seed draws a room (``synthetic.generate_scene``) and its prompts, made with EmbodiedScan's
five relation templates and the rule that the prompt names its target uniquely. The memory holds
the scene's ground-truth 9-DoF boxes and classes (perfect perception), so the figures measure
the grounding engine alone: the parser, the label matching and the relation geometry. Prints
Acc@0.25/0.50 (top-1 box), split unique/multiple and by relation type, and Dist@0.1/0.3/0.5 m,
and the failed prompts with the engine's answer (--show-misses).

``--runs DIR ...`` scores predicted memories instead: each DIR is the output of
``embodied-ros run synthetic:seed=S,frames=40 --model embodied-perceptron --out DIR`` (its memory.json
and the seed in its objects.json), so the figures include perception; a prompt is right when the
answer's box has IoU > 0.25 with the target's. With ``PYTHONPATH=<a checkout of main>`` the same
memories measure main's engine (before/after in one run).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

import numpy as np

from embodied_ros.grounding import Grounder
from embodied_ros.memory import MemorySnapshot, SceneObject
from embodied_ros.metrics import GroundingQuery, evaluate_grounding


def oracle_snapshot(objects) -> MemorySnapshot:
    """A memory snapshot holding a synthetic scene's objects with their true boxes (ids = instance ids)."""
    objs = tuple(SceneObject(o.instance_id, o.class_name, 1.0, o.box, ((o.class_name, 1.0),), 10, 0, 1, 0, 1)
                 for o in objects)
    return MemorySnapshot(objs, np.array([o.id for o in objs], dtype=np.int64), np.stack([o.box for o in objs]),
                          np.ones(len(objs)), tuple(o.class_name for o in objs), "world")


def evaluate_seeds(seeds: range, grounder: Grounder) -> tuple[list[GroundingQuery], list[str], Counter]:
    """Ground every prompt of every seed; return metric queries, lines for misses, and hits per predicate."""
    from embodied_ros.synthetic import generate_scene

    queries, misses, hits = [], [], Counter()
    for seed in seeds:
        scene = generate_scene(seed)
        snap = oracle_snapshot(scene.objects)
        for p in scene.prompts:
            r = grounder.ground(p.text, snap)
            target = scene.objects[p.target_id].box
            queries.append(GroundingQuery(r.best.object.box if r.success else None, target, p.unique,
                                          (p.relation.value,)))
            right = r.success and r.best.object.id == p.target_id
            hits[(p.predicate, right)] += 1
            if not right:
                misses.append(f"seed {seed}: {p.text!r} -> want {p.target_class} #{p.target_id}; got: {r.message}")
    return queries, misses, hits


def evaluate_runs(runs: list[Path], grounder: Grounder) -> tuple[list[GroundingQuery], list[str], Counter]:
    """Ground every prompt of each run's scene on the run's own (predicted) memory."""
    import json

    from embodied_ros.geometry.iou import box_iou_3d
    from embodied_ros.memory import SceneMemory
    from embodied_ros.synthetic import generate_scene

    queries, misses, hits = [], [], Counter()
    for run in runs:
        seed = int(json.loads((run / "objects.json").read_text())["source"].split("seed=")[1].split(",")[0])
        scene = generate_scene(seed)
        memory = SceneMemory.load(run / "memory.json")
        snap = memory.snapshot()
        for p in scene.prompts:
            r = grounder.ground(p.text, snap)
            target = scene.objects[p.target_id].box
            queries.append(GroundingQuery(r.best.object.box if r.success else None, target, p.unique,
                                          (p.relation.value,)))
            right = r.success and box_iou_3d(r.best.object.box[None], target[None])[0, 0] > 0.25
            hits[(p.predicate, right)] += 1
            if not right:
                misses.append(f"seed {seed}: {p.text!r} -> want {p.target_class} #{p.target_id}; got: {r.message}")
    return queries, misses, hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="100:130", help="seed range START:STOP (held out from training)")
    parser.add_argument("--runs", type=Path, nargs="*", default=None, help="runs' folders: predicted memories")
    parser.add_argument("--show-misses", type=int, default=15, help="print at most this many failed prompts")
    args = parser.parse_args()
    if args.runs:
        queries, misses, hits = evaluate_runs(args.runs, Grounder())
        print(f"{len(queries)} prompts of {len(args.runs)} runs (their predicted memories)")
    else:
        start, stop = (int(v) for v in args.seeds.split(":"))
        queries, misses, hits = evaluate_seeds(range(start, stop), Grounder())
        print(f"{len(queries)} prompts from seeds {start}..{stop - 1} (ground-truth boxes as the memory)")
    print(evaluate_grounding(queries).table())
    preds = sorted({p for p, _ in hits})
    print("per predicate: " + ", ".join(f"{p} {hits[(p, True)]}/{hits[(p, True)] + hits[(p, False)]}" for p in preds))
    for line in misses[: args.show_misses]:
        print("  miss " + line)


if __name__ == "__main__":
    main()
