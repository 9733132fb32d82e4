"""The Embodied Perceptron's figures on held-out synthetic scenes (issue 3's acceptance list).

Prints: parameters, ONNX size and operators, ONNX Runtime vs PyTorch latency per keyframe (p50/p99,
measured in the same run), detection mAP@0.25/0.50 per frame and after accumulation, occupancy mIoU
(per frame on the whole grid and in view, and of the accumulated world map in view and on the
keyframes' whole grids),
the grounding head's top-1 accuracy, and the whole system's grounding Acc@0.25/0.50 (Grounder over
the accumulated memory) on the scenes' own prompts. Boxes get the size calibration beside the
weights (``<stem>.sizes.json``) as the shipped perceptor does; ``--no-sizes`` scores the raw network.

Usage: .venv/bin/python benchmarks/bench_perceptron.py [--weights models/embodied_perceptron.pt] [--seeds 10000 10004]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.memory.scene_memory import SceneMemory
from embodied_ros.metrics.scene_bootstrap import scene_interval
from embodied_ros.network.onnx_export import export_onnx
from embodied_ros.network.perceptron import INPUT_NAMES, count_parameters, example_inputs, output_names
from embodied_ros.network.perceptron_perceptor import PerceptronPerceptor, graph_inputs, torch_runner
from embodied_ros.network.pixel_detections import PixelDecodeParams
from embodied_ros.network.size_calibration import calibration_for, calibration_path
from embodied_ros.runtime.onnxruntime_backend import OnnxRuntimeBackend
from embodied_ros.synthetic.scene import generate_scene
from embodied_ros.training.evaluate import evaluate, evaluate_grounding_head
from embodied_ros.training.samples import frame_indices, scene_config
from embodied_ros.training.trainer import load_head, load_weights

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_variants import MEMORIES  # noqa: E402


def _latency(run, inputs: dict, n: int) -> tuple[float, float]:
    run(inputs)  # warm-up
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        run(inputs)
        times.append(1000 * (time.perf_counter() - t0))
    return float(np.percentile(times, 50)), float(np.percentile(times, 99))


def _system_grounding(onnx_run, config, seeds: range, frames: int, sizes=None, pixels=None,
                      memory_kwargs: dict | None = None) -> np.ndarray:
    """Grounder over the accumulated memory of each scene vs the scene's prompts.

    Returns:
        (scenes, 3) per scene: prompts right at IoU 0.25, right at 0.50, prompts.
    """
    from embodied_ros.grounding import Grounder

    memory_kwargs = memory_kwargs or {}
    grounder = Grounder()
    counts = []
    for seed in seeds:
        scene = generate_scene(int(seed), scene_config(config.data))
        perceptor = PerceptronPerceptor(onnx_run, config.model, floor_z=0.0, sizes=sizes, pixels=pixels)
        memory = SceneMemory(**memory_kwargs)
        for i in frame_indices(len(scene), frames):
            memory.update(perceptor.perceive(scene.frame(int(i))))
        snapshot = memory.snapshot()
        hit25 = hit50 = 0
        for prompt in scene.prompts:
            answer = grounder.ground(prompt.text, snapshot)
            iou = 0.0
            if answer.best is not None:
                iou = float(box_iou_3d(answer.best.object.box[None], scene.boxes[prompt.target_id][None])[0, 0])
            hit25, hit50 = hit25 + (iou > 0.25), hit50 + (iou > 0.5)
        counts.append((hit25, hit50, len(scene.prompts)))
    return np.array(counts, dtype=np.int64).reshape(-1, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weights", type=Path, default=REPO / "models" / "embodied_perceptron.pt")
    parser.add_argument("--seeds", type=int, nargs=2, default=(10_000, 10_004), help="[first, last) held-out seeds")
    parser.add_argument("--frames", type=int, default=12, help="keyframes per scene")
    parser.add_argument("--runs", type=int, default=20, help="latency samples per backend")
    parser.add_argument("--no-sizes", action="store_true", help="ignore the size calibration beside the weights")
    parser.add_argument("--no-pixels", action="store_true",
                        help="every class from the box head, even with a pixel head (the baseline for it)")
    parser.add_argument("--map-voxel", type=float, default=None, help="world occupancy map voxel (m; default: 0.16)")
    parser.add_argument("--memory", default="full", choices=sorted(MEMORIES),
                        help="scene memory variant (memory_variants.MEMORIES; legacy: before the object map)")
    parser.add_argument("--resamples", type=int, default=300,
                        help="bootstrap resamples over scenes for the 90%% intervals (0: none)")
    args = parser.parse_args()

    model, config = load_weights(args.weights)
    head = load_head(args.weights)
    sizes = None if args.no_sizes else calibration_for(args.weights)
    how = f"calibrated by {calibration_path(args.weights).name}" if sizes else "as the network gives them"
    print(f"box sizes: {how}")
    pixels = PixelDecodeParams(classes=()) if args.no_pixels else PixelDecodeParams()
    if config.model.pixel_head:
        print(f"classes from the pixel head, lifted through depth: {', '.join(pixels.classes) or 'none'}")
    seeds = range(*args.seeds)
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = Path(tmp) / "perceptron.onnx"
        onnx_model = export_onnx(model, example_inputs(config.model), onnx_path, input_names=INPUT_NAMES,
                                 output_names=output_names(config.model))
        size_mb = onnx_path.stat().st_size / 1e6
        ort = OnnxRuntimeBackend(onnx_path)
        scene = generate_scene(seeds[0], scene_config(config.data))
        inputs = graph_inputs(scene.frame(0), config.model, floor_z=0.0).as_dict()
        ort_p50, ort_p99 = _latency(ort.run, inputs, args.runs)
        torch_p50, torch_p99 = _latency(torch_runner(model), inputs, args.runs)
        ops = sorted({node.op_type for node in onnx_model.graph.node})
        print(f"parameters: {count_parameters(model):,} (+ grounding head "
              f"{count_parameters(head) if head is not None else 0:,}); ONNX {size_mb:.2f} MB")
        print(f"ONNX operators ({len(ops)}): {', '.join(ops)}")
        print(f"latency per keyframe (1 view, {config.model.image_size}px, "
              f"{'x'.join(map(str, config.model.grid_shape))} grid): ONNX Runtime p50 {ort_p50:.0f} ms, "
              f"p99 {ort_p99:.0f} ms; PyTorch p50 {torch_p50:.0f} ms, p99 {torch_p99:.0f} ms; "
              f"ratio ORT/PyTorch (p50) {ort_p50 / torch_p50:.2f}")
        if config.model.pixel_head:  # what lifting the pixel classes adds to a whole perceive() on ONNX Runtime
            frame = scene.frame(0)
            boxes_only = PerceptronPerceptor(ort.run, config.model, floor_z=0.0, sizes=sizes,
                                             pixels=PixelDecodeParams(classes=()))
            with_pixels = PerceptronPerceptor(ort.run, config.model, floor_z=0.0, sizes=sizes, pixels=pixels)
            base, _ = _latency(lambda _: boxes_only.perceive(frame), {}, args.runs)
            full, _ = _latency(lambda _: with_pixels.perceive(frame), {}, args.runs)
            print(f"perceive() per keyframe, p50: {full:.0f} ms with the pixel classes lifted, {base:.0f} ms with "
                  f"the box head alone (ratio {full / base:.2f})")
        result = evaluate(ort.run, config.model, config.data, seeds=seeds, frames_per_scene=args.frames, sizes=sizes,
                          occupancy_kwargs=None if args.map_voxel is None else {"voxel_size": args.map_voxel},
                          resamples=args.resamples, pixels=pixels, memory_kwargs=MEMORIES[args.memory])
        print(f"held-out seeds {seeds.start}..{seeds.stop - 1}, {result.n_frames} frames, memory {args.memory}:")
        print(f"  detection per frame:      mAP@0.25 {result.per_frame.mean_ap[0.25]:.3f}  "
              f"mAP@0.50 {result.per_frame.mean_ap[0.5]:.3f}")
        print(f"  detection accumulated:    mAP@0.25 {result.accumulated.mean_ap[0.25]:.3f}  "
              f"mAP@0.50 {result.accumulated.mean_ap[0.5]:.3f}")
        print(f"  whole grid: {result.occupancy.summary()}")
        print(f"  in view:    {result.occupancy_in_view.summary()}")
        print(f"  accumulated world map, in view: {result.occupancy_map.summary()}")
        print(f"  accumulated world map, whole grids: {result.occupancy_map_grid.summary()}")
        view = result.occupancy_in_view
        print("  in-view occupancy IoU per class: "
              + ", ".join(f"{c} {v:.2f}" for c, v in zip(view.class_names, view.iou, strict=True) if v == v))
        ap = result.accumulated.ap[0.25]
        print("  accumulated AP@0.25 per class: " + ", ".join(f"{c} {v:.2f}" for c, v in ap.items() if v == v))
        if head is not None:
            from embodied_ros.grounding.text_encoder import TextEncoder

            acc = evaluate_grounding_head(model, head, config, TextEncoder())
            print(f"  grounding head top-1 on the frames' true objects: {acc:.3f}")
        counts = _system_grounding(ort.run, config, seeds, args.frames, sizes, pixels, MEMORIES[args.memory])
        n = int(counts[:, 2].sum())
        g25, g50 = counts[:, 0].sum() / max(n, 1), counts[:, 1].sum() / max(n, 1)
        print(f"  grounding (Grounder over the accumulated memory), {n} prompts: "
              f"Acc@0.25 {g25:.3f}  Acc@0.50 {g50:.3f}")
        if args.resamples > 0:
            grounding = scene_interval(lambda s: counts[s, 0].sum() / max(counts[s, 2].sum(), 1), len(counts),
                                       args.resamples)
            print("  bootstrap over scenes (the spread another draw of held-out scenes would give):")
            for name, interval in (("detection accumulated mAP@0.25", result.intervals["accumulated_map25"]),
                                   ("world map occupancy mIoU, in view", result.intervals["map_in_view"]),
                                   ("world map occupancy mIoU, whole grids", result.intervals["map_whole_grids"]),
                                   ("grounding Acc@0.25", grounding)):
                print(f"    {name}: {interval}")

if __name__ == "__main__":
    main()
