"""`embodied-ros train`, `calibrate` and `export`: the commands that make a model, fit its size correction and
convert it for a runtime."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import InputError, ModelError


def add_train_parser(sub: Any) -> None:
    """The ``train`` subcommand."""
    p_train = sub.add_parser("train", help="train the Embodied Perceptron on synthetic scenes (torchrun for DDP)")
    p_train.add_argument("--config", type=Path, required=True, help="YAML training config (see config/train_*.yaml)")
    p_train.add_argument("--out", type=Path, required=True, help="run folder (checkpoints, weights, history, plot)")
    p_train.add_argument("--resume", action="store_true", help="continue from the run folder's checkpoint")
    p_train.add_argument("--no-progress", action="store_true", help="no progress bars (logs only)")
    p_train.set_defaults(func=cmd_train)


def add_calibrate_parser(sub: Any) -> None:
    """The ``calibrate`` subcommand."""
    p_cal = sub.add_parser("calibrate", help="fit the Embodied Perceptron's per-class box size correction "
                                             "on synthetic training scenes")
    p_cal.add_argument("--weights", type=Path, default=None,
                       help="weights file (default: models/embodied_perceptron.pt)")
    p_cal.add_argument("--seeds", type=int, nargs=2, default=(0, 24), metavar=("FIRST", "LAST"),
                       help="[FIRST, LAST) training scene seeds (default: 0 24)")
    p_cal.add_argument("--frames", type=int, default=12, help="keyframes per scene (default: %(default)s)")
    p_cal.add_argument("--out", type=Path, default=None,
                       help="output JSON (default: <weights stem>.sizes.json beside the weights)")
    p_cal.add_argument("--no-progress", action="store_true", help="no progress bar")
    p_cal.set_defaults(func=cmd_calibrate)


def add_export_parser(sub: Any) -> None:
    """The ``export`` subcommand (network/export_command.py)."""
    from ..network.export_command import add_export_arguments, cmd_export

    p_export = sub.add_parser("export", help="export a network to ONNX (and a TensorRT engine on a GPU machine)")
    add_export_arguments(p_export)
    p_export.set_defaults(func=cmd_export)


def cmd_train(args: argparse.Namespace) -> int:
    from ..training.config import load_config
    from ..training.trainer import train

    result = train(load_config(args.config), args.out, resume=args.resume, progress=not args.no_progress)
    if result is not None:  # rank 0
        evals = [h for h in result.history if "map25_frame" in h]
        last = evals[-1] if evals else {}
        print(f"trained {result.steps} steps in {result.seconds / 60:.1f} min; weights: {result.weights}")
        if last:
            print(f"held-out: mAP@0.25 per frame {last['map25_frame']:.3f}, accumulated {last['map25_scene']:.3f}, "
                  f"occupancy mIoU {last['miou']:.3f}"
                  + (f" (in view {last['miou_view']:.3f})" if "miou_view" in last else ""))
    return 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from ..network.perceptron_perceptor import torch_runner
    from ..network.registry import find_perceptron_weights
    from ..network.size_calibration import calibration_path
    from ..runtime.engine_cache import sha256_file
    from ..training.calibrate import calibrate_sizes
    from ..training.trainer import load_weights

    if args.weights is not None and not args.weights.exists():
        raise ModelError(f"--weights {args.weights}: no such file or folder")
    weights = find_perceptron_weights(args.weights)
    if weights is None:
        raise ModelError("no Embodied Perceptron weights found; pass --weights PATH")
    first, last = args.seeds
    if not 0 <= first < last:
        raise InputError(f"--seeds {first} {last}: need 0 <= FIRST < LAST")
    model, config = load_weights(weights)
    val = range(*config.data.val_seeds)
    if first < val.stop and val.start < last:
        raise InputError(f"--seeds {first} {last} overlap the held-out seeds {val.start}..{val.stop - 1}: "
                         "calibrate on training seeds")
    sizes = calibrate_sizes(torch_runner(model), config.model, config.data, range(first, last), args.frames,
                            source=f"{weights.name}, seeds {first}..{last - 1}, {args.frames} keyframes each",
                            progress=not args.no_progress, weights_sha256=sha256_file(weights))
    out = args.out or calibration_path(weights)
    sizes.save(out)
    for name, (h, a) in sizes.factors.items():
        print(f"  {name:10s} height x{h:.2f}  footprint x{a:.2f}  ({sizes.samples[name]} detections)")
    print(f"size calibration of {len(sizes.factors)} classes written to {out}")
    return 0
