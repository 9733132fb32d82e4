"""Benchmark: the 2D detectors side by side on the redkitchen frames: detect() time on 2 CPU threads,
detections per score threshold, classes found, and a picture of their boxes on four frames.

Run: .venv/bin/python benchmarks/bench_detectors.py [--models yolo-fastest-1.1-xl yolox-nano nanodet-plus-m-416]
         [--threads 2] [--picture detectors.png] [--json out.json]

Every model runs on ONNX Runtime (CPU, ``--threads`` intra-op threads, one inter-op thread; OpenCV
and numpy limited to the same) in this one process, frame by frame in turn (the order rotates every
frame), so machine noise falls on all alike; the first 3 frames are warm-up and not timed. The time
is one ``detect()`` call: preprocessing, the network, the head decode and NMS. Counts: detections at
or above each score threshold over all frames (greedy per-class NMS keeps the same boxes above a
threshold whichever lower threshold it ran at, so one run at the lowest serves all).
``ensemble-yolox-nanodet`` runs its own YOLOX-Nano and NanoDet-Plus and fuses their boxes (weighted
box fusion: a box only one of the two saw keeps half its score); its members run at the lowest
threshold, so its counts are those of the ensemble as the registry builds it at that threshold.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
FOLDERS = {"yolo-fastest-1.1-xl": "yolo_fastest", "yolo-fastest-1.1": "yolo_fastest", "yolox-nano": "yolox_nano",
           "nanodet-plus-m-416": "nanodet_plus", "ensemble-yolox-nanodet": "", "ensemble-yolox-nanodet-map": ""}
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5)
PICTURE_FRAMES = (0, 300, 600, 900)
PICTURE_SCORE = 0.3
WARMUP = 3


def _detectors(names: list[str], threads: int, cache: Path) -> dict:
    """name -> detector; an ensemble gets its own member detectors (registry.ENSEMBLES)."""
    from embodied_ros.network.ensemble import EnsembleDetector2D
    from embodied_ros.network.registry import ENSEMBLES, build_detector
    from embodied_ros.network.weights import resolve_known_model
    from embodied_ros.runtime.config import RuntimeConfig

    def build(name: str):
        if name in ENSEMBLES:
            models, method = ENSEMBLES[name]
            return EnsembleDetector2D([build(m) for m in models], method=method, score_threshold=min(THRESHOLDS))
        files = resolve_known_model(name, search_dirs=[DATA / FOLDERS[name]])
        return build_detector(files, RuntimeConfig(backend="onnxruntime", intra_op_threads=threads, inter_op_threads=1),
                              cache=cache, score_threshold=min(THRESHOLDS))

    return {name: build(name) for name in names}


def _draw(image: np.ndarray, dets, title: str, scale: float = 0.75) -> np.ndarray:
    import cv2

    tile = cv2.resize(image[:, :, ::-1], None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA)  # BGR for cv2
    keep = dets.scores >= PICTURE_SCORE
    for box, label, score in zip(dets.boxes_xyxy[keep] * scale, dets.labels[keep], dets.scores[keep], strict=True):
        colour = tuple(int(c) for c in np.random.default_rng(int(label)).integers(60, 255, 3))
        x0, y0, x1, y1 = (int(round(v)) for v in box)
        cv2.rectangle(tile, (x0, y0), (x1, y1), colour, 2)
        text = f"{dets.class_names[label]} {score:.2f}"
        cv2.putText(tile, text, (x0 + 2, max(y0 + 14, 14)), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 3)
        cv2.putText(tile, text, (x0 + 2, max(y0 + 14, 14)), cv2.FONT_HERSHEY_SIMPLEX, 0.45, colour, 1)
    cv2.rectangle(tile, (0, tile.shape[0] - 28), (tile.shape[1], tile.shape[0]), (0, 0, 0), -1)
    cv2.putText(tile, title, (6, tile.shape[0] - 9), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (255, 255, 255), 1)
    return tile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["yolo-fastest-1.1-xl", "yolox-nano", "nanodet-plus-m-416"],
                        choices=sorted(FOLDERS))
    parser.add_argument("--threads", type=int, default=2, help="CPU threads for ONNX Runtime, OpenCV and numpy")
    parser.add_argument("--picture", type=Path, default=None, help="write the models' boxes on four frames here")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    import cv2
    from PIL import Image
    from threadpoolctl import threadpool_limits

    frames = sorted((DATA / "redkitchen").glob("frame-*.color.jpg"))
    if not frames:
        raise SystemExit(f"no redkitchen frames in {DATA}")
    cv2.setNumThreads(args.threads)
    with threadpool_limits(args.threads), tempfile.TemporaryDirectory() as work:
        detectors = _detectors(args.models, args.threads, Path(work))
        times = {n: [] for n in args.models}
        scores = {n: [] for n in args.models}
        classes = {n: Counter() for n in args.models}
        tiles = {}
        for i, path in enumerate(frames):
            image = np.asarray(Image.open(path).convert("RGB"))
            index = int(path.name.split("-")[1].split(".")[0])
            order = args.models[i % len(args.models):] + args.models[: i % len(args.models)]
            for name in order:
                t0 = time.perf_counter()
                dets = detectors[name].detect(image)
                if i >= WARMUP:
                    times[name].append(time.perf_counter() - t0)
                scores[name].append(dets.scores)
                classes[name].update(dets.class_names[k] for k in dets.labels[dets.scores >= PICTURE_SCORE])
                if index in PICTURE_FRAMES:
                    tiles[(index, name)] = _draw(image, dets, f"{name}  frame {index}")

    base = args.models[0]
    base_p50 = float(np.median(times[base]))
    print(f"{len(frames)} redkitchen frames, ONNX Runtime on {args.threads} CPU threads; detect() per frame "
          f"({len(frames) - WARMUP} timed)")
    print(f"{'model':<24}{'p50 ms':>8}{'p90 ms':>8}{'mean ms':>9}{'x ' + base:>26}")
    report: dict = {"frames": len(frames), "threads": args.threads, "models": {}}
    for name in args.models:
        t = np.asarray(times[name]) * 1e3
        print(f"{name:<24}{np.median(t):8.1f}{np.percentile(t, 90):8.1f}{t.mean():9.1f}"
              f"{np.median(t) / (base_p50 * 1e3):26.2f}")
        report["models"][name] = {"p50_ms": float(np.median(t)), "p90_ms": float(np.percentile(t, 90)),
                                  "mean_ms": float(t.mean())}
    print("\ndetections over all frames at score >= (mean per frame in brackets)")
    print(f"{'model':<24}" + "".join(f"{t:>14}" for t in THRESHOLDS))
    for name in args.models:
        all_scores = np.concatenate(scores[name])
        counts = [int(np.sum(all_scores >= t)) for t in THRESHOLDS]
        print(f"{name:<24}" + "".join(f"{c:>7} ({c / len(frames):4.1f})" for c in counts))
        report["models"][name]["detections"] = dict(zip(map(str, THRESHOLDS), counts, strict=True))
    print(f"\nclasses at score >= {PICTURE_SCORE} (detections over all frames)")
    for name in args.models:
        print(f"{name:<24}" + ", ".join(f"{c} {k}" for c, k in sorted(((v, k) for k, v in classes[name].items()),
                                                                       reverse=True)))
        report["models"][name]["classes"] = dict(classes[name])
    if args.picture is not None and tiles:
        rows = [np.concatenate([tiles[(f, n)] for n in args.models], axis=1) for f in PICTURE_FRAMES
                if all((f, n) in tiles for n in args.models)]
        args.picture.parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(args.picture), np.concatenate(rows, axis=0))
        print(f"\nwrote {args.picture} (boxes at score >= {PICTURE_SCORE}; one row per frame, one column per model)")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
