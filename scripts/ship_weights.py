#!/usr/bin/env python3
"""Copy a finished training run's weights into models/ and export both graphs to ONNX beside them.

Usage: .venv/bin/python scripts/ship_weights.py runs/NAME [--models models]
Writes embodied_perceptron.pt, embodied_perceptron.onnx, embodied_perceptron_grounding_head.onnx and
embodied_perceptron.sizes.json (the per-class size calibration, fitted on training seeds 0..23 as
`embodied-ros calibrate` does; a few minutes). The model card, MODEL_CARD.md, is written by hand from
benchmarks/bench_perceptron.py's figures.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from embodied_ros.cli import main as cli_main
from embodied_ros.network.grounding_head import HEAD_INPUTS, HEAD_OUTPUTS, head_example_inputs
from embodied_ros.network.onnx_export import check_tensorrt_compatible, export_onnx
from embodied_ros.network.perceptron import INPUT_NAMES, example_inputs, output_names
from embodied_ros.network.registry import PERCEPTRON_FILE
from embodied_ros.training.trainer import WEIGHTS, load_head, load_weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--models", type=Path, default=Path(__file__).resolve().parents[1] / "models")
    args = parser.parse_args()
    weights = args.models / PERCEPTRON_FILE
    args.models.mkdir(exist_ok=True)
    shutil.copy(args.run / WEIGHTS, weights)
    model, config = load_weights(weights)
    graph = export_onnx(model, example_inputs(config.model), weights.with_suffix(".onnx"),
                        input_names=INPUT_NAMES, output_names=output_names(config.model))
    print(f"{weights.with_suffix('.onnx')}: TensorRT check {check_tensorrt_compatible(graph) or 'clean'}")
    head = load_head(weights)
    if head is not None:
        path = weights.with_name(weights.stem + "_grounding_head.onnx")
        graph = export_onnx(head, head_example_inputs(head.config), path, input_names=HEAD_INPUTS,
                            output_names=HEAD_OUTPUTS)
        print(f"{path}: TensorRT check {check_tensorrt_compatible(graph) or 'clean'}")
    cli_main(["calibrate", "--weights", str(weights)])  # never leave an old calibration beside new weights
    for p in sorted(args.models.glob("embodied_perceptron*")):
        print(f"{p.name}: {p.stat().st_size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
