"""`embodied-ros demo`: the shipped Embodied Perceptron on a held-out synthetic scene (the demo itself:
embodied_ros/demo.py), or, without its weights, `run` on the redkitchen recording."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..network.weights import DEFAULT_MODEL
from .options import default_data_dir, positive_int
from .run import cmd_run

log = logging.getLogger("embodied_ros")


def add_demo_parser(sub: Any) -> None:
    """The ``demo`` subcommand."""
    p_demo = sub.add_parser("demo", help="run on the built-in scene")
    p_demo.add_argument("--out", type=Path, default=Path("out/demo"), help="output folder (default: %(default)s)")
    p_demo.add_argument("--max-frames", type=positive_int, default=None,
                        help="frames of the scene (default: 40) or recording")
    p_demo.add_argument("--weights", type=Path, default=None,
                        help="Embodied Perceptron weights (default: models/embodied_perceptron.pt)")
    p_demo.add_argument("--seed", type=int, default=None, help="synthetic scene seed (default: a held-out one)")
    p_demo.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    from ..network.registry import PERCEPTRON_FILE, find_perceptron_weights
    from . import build_parser  # the redkitchen fallback is `run`, parsed as typed

    weights = args.weights or find_perceptron_weights()
    if weights is not None:
        return _synthetic_demo(args, weights)
    log.info("no trained %s in models/: running the lifted COCO detector on the redkitchen recording", PERCEPTRON_FILE)
    data = default_data_dir()
    scene, weights = data / "redkitchen", data
    if not scene.is_dir():
        raise InputError(
            f"the demo needs the redkitchen recording and the {DEFAULT_MODEL} weights in {data} "
            "(set EMBODIED_ROS_DATA to their folder), or the Embodied Perceptron's weights in models/"
        )
    argv = ["run", str(scene), "--out", str(args.out), "--weights", str(weights), "--overwrite", "--backend",
            "onnxruntime"]
    if args.max_frames is not None:
        argv += ["--max-frames", str(args.max_frames)]
    run_args = build_parser().parse_args(argv)
    return cmd_run(run_args)


def _synthetic_demo(args: argparse.Namespace, weights: Path) -> int:
    from ..demo import DEMO_SEED, run_demo
    from ..outputs.run_folder import RunFolder

    with RunFolder(args.out, overwrite=True) as folder:
        result = run_demo(folder.path, weights, seed=args.seed if args.seed is not None else DEMO_SEED,
                          frames=args.max_frames or 40)
        s = result.summary
        folder.commit(source=f"synthetic scene, seed {args.seed if args.seed is not None else DEMO_SEED}",
                      frames_processed=s.frames_processed)
    print(f"synthetic scene (seed {args.seed if args.seed is not None else DEMO_SEED}, never trained on): "
          f"{s.frames_processed} frames, {len(s.objects)} objects published")
    print("objects: " + ", ".join(f"{k} x{v}" for k, v in s.class_counts().items()))
    print(f"accumulated detection vs ground truth: mAP@0.25 {result.map25:.3f}, mAP@0.50 {result.map50:.3f}")
    print(f"world occupancy map vs ground truth, voxels in the frames' view: {result.occupancy.summary()}")
    print(f"grounding: {result.grounding_correct}/{result.grounding_total} of the scene's prompts right (Acc@0.25)")
    for line in result.examples:
        print("  " + line)
    print(f"outputs in {args.out}: " + ", ".join(p.name for p in s.outputs) + ", demo_metrics.json")
    return 0
