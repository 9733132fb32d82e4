"""Fit a weights file's per-class size calibration on synthetic training scenes (never held-out seeds)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from tqdm import tqdm

from ..geometry.iou import box_iou_3d
from ..network.perceptron import PerceptronConfig
from ..network.perceptron_perceptor import PerceptronPerceptor, RunGraph
from ..network.pixel_detections import PixelDecodeParams
from ..network.size_calibration import MIN_SAMPLES, SizeCalibration, fit_size_calibration
from ..synthetic.scene import generate_scene
from .config import DataConfig
from .samples import frame_indices, scene_config

MATCH_IOU = 0.05  # a detection belongs to the same-class true box it overlaps most, from this IoU...
MATCH_CENTRE_M = 0.3  # ...or, overlapping none, to the nearest one within this distance (small objects)


def match_detections(boxes: np.ndarray, labels: np.ndarray, true_boxes: np.ndarray,
                     true_labels: np.ndarray) -> np.ndarray:
    """(N,) index of the true box each detection describes, -1 for none (same class only)."""
    out = np.full(len(boxes), -1, dtype=np.int64)
    if len(boxes) == 0 or len(true_boxes) == 0:
        return out
    same = np.asarray(labels)[:, None] == np.asarray(true_labels)[None, :]  # (N, M)
    iou = np.where(same, box_iou_3d(boxes, true_boxes), -1.0)
    dist = np.where(same, np.linalg.norm(boxes[:, None, :3] - true_boxes[None, :, :3], axis=2), np.inf)
    rows = np.arange(len(boxes))
    by_iou, by_dist = iou.argmax(axis=1), dist.argmin(axis=1)
    out[iou[rows, by_iou] >= MATCH_IOU] = by_iou[iou[rows, by_iou] >= MATCH_IOU]
    near = (out < 0) & (dist[rows, by_dist] <= MATCH_CENTRE_M)
    out[near] = by_dist[near]
    return out


def calibrate_sizes(run_graph: RunGraph, model: PerceptronConfig, data: DataConfig, seeds: range,
                    frames_per_scene: int = 12, min_samples: int = MIN_SAMPLES, source: str = "",
                    progress: bool = True, weights_sha256: str = "") -> SizeCalibration:
    """Run the network (uncorrected) over synthetic scenes and fit its size factors.

    Args:
        run_graph: the network on a backend.
        model, data: the weights' configuration (vocabulary, scene generator settings).
        seeds: scene seeds; use training seeds, so the held-out figures stay held out.
        frames_per_scene: keyframes per scene, spread over its trajectory.
        min_samples: matched detections a class needs to get factors.
        source: a note stored with the result.
        progress: show a progress bar.
        weights_sha256: the weights' sha256, stored so a calibration is never applied to other weights.
    """
    # Synthetic floors are at z = 0. The box head alone: the factors correct it, never pixel-lifted boxes.
    perceptor = PerceptronPerceptor(run_graph, model, floor_z=0.0, pixels=PixelDecodeParams(classes=()))
    predicted, truth, names = [], [], []
    for seed in tqdm(seeds, desc="calibrating sizes", unit="scene", disable=not progress):
        scene = generate_scene(int(seed), scene_config(data))
        for i in frame_indices(len(scene), frames_per_scene):
            det = perceptor.perceive(scene.frame(int(i))).detections
            match = match_detections(det.boxes, det.labels, scene.boxes, scene.labels)
            ok = match >= 0
            predicted.append(det.boxes[ok])
            truth.append(scene.boxes[match[ok]])
            names += [det.class_names[k] for k in det.labels[ok]]
    fitted = fit_size_calibration(np.concatenate(predicted).reshape(-1, 9), np.concatenate(truth).reshape(-1, 9),
                                  names, min_samples=min_samples, source=source)
    return replace(fitted, weights_sha256=weights_sha256)
