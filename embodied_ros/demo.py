"""`embodied-ros demo`: the shipped Embodied Perceptron on a synthetic scene it never saw, scored.

A held-out scene is generated (seeded, offline), run frame by frame through the network on ONNX
Runtime, accumulated with the 0.075 / 0.15 rules, a few of the scene's own grounding prompts are
answered, the outputs of `embodied-ros run` are written, and the metrics against the scene's
ground truth are printed and saved to demo_metrics.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .geometry.grid import aligned_grid_pose, voxels_in_view
from .geometry.iou import box_iou_3d
from .mapper import SceneMapper
from .memory.scene_object import MemorySnapshot
from .metrics.detection import BoxSet, evaluate_detection
from .metrics.occupancy import OccupancyAccumulator, OccupancyMetrics
from .network.perceptron import PerceptronConfig
from .network.registry import build_perceptron
from .occupancy.voxel_map import OccupancyMap
from .pipeline import RunSummary, run
from .synthetic.source import SyntheticSource

DEMO_SEED = 20_000
"""Held out: the shipped weights trained on seeds 0..99 and were validated on 10000..10003."""


@dataclass(frozen=True)
class DemoResult:
    """What the demo measured."""

    summary: RunSummary
    map25: float  # accumulated detection mAP@0.25 against every object seen in the processed frames
    map50: float
    occupancy: OccupancyMetrics  # the world map after the run, on each frame's grid, voxels in view
    grounding_correct: int  # prompts whose top-1 box has IoU > 0.25 with the target
    grounding_total: int
    examples: tuple[str, ...]  # every prompt: right or not, what was expected, what was answered, and why not


def _score_frames(source: SyntheticSource, world: OccupancyMap, config: PerceptronConfig,
                  min_fraction: float = 0.1) -> tuple[np.ndarray, OccupancyMetrics]:
    """Objects seen in the source's frames, and the world map's occupancy in each frame's view."""
    scene = source.scene
    seen: set[int] = set()
    occupancy = OccupancyAccumulator(config.occupancy_classes)
    spec = config.grid_spec()
    for i in range(len(source)):
        rendered = scene.render(i)
        seen.update(int(v) for v in scene.visible_objects(rendered, min_fraction=min_fraction))
        frame = rendered.frame
        T_world_grid = aligned_grid_pose(frame.T_world_camera, spec, floor_z=0.0)
        in_view = voxels_in_view(T_world_grid, frame.T_world_camera, frame.K, frame.width, frame.height, spec)
        predicted = world.class_grid(T_world_grid, config.occupancy_classes, spec.shape, spec.voxel_size)
        occupancy.add(predicted, scene.surface.occupancy(T_world_grid, spec).labels, valid=in_view)
    return np.array(sorted(seen), dtype=np.int64), occupancy.result()


def run_demo(out_dir: Path, weights: Path | None = None, seed: int = DEMO_SEED, frames: int = 40,
             n_prompts: int = 8, progress: bool = True) -> DemoResult:
    """Run the demo and write its outputs into ``out_dir``."""
    from tqdm import tqdm

    source = SyntheticSource.from_spec(f"synthetic:seed={seed},frames={frames}")
    perceptor = build_perceptron(weights, backend="onnxruntime", floor_z=0.0)  # the generated floor is z = 0
    mapper = SceneMapper(perceptor=perceptor)
    summary = run(source, mapper, out_dir,
                  progress=(lambda it: tqdm(it, total=len(source), unit="frame", desc="demo")) if progress else None)
    published = mapper.memory.published_objects()
    seen, occupancy = _score_frames(source, mapper.occupancy, perceptor.config)
    prediction = BoxSet(np.array([o.box for o in published]).reshape(-1, 9), tuple(o.class_name for o in published),
                        np.array([o.score for o in published]))
    metrics = evaluate_detection([prediction], [source.scene.ground_truth(seen)], classes=perceptor.class_names)

    grounder = mapper.grounder  # among every object the memory holds (not only the published), no viewpoint
    snapshot = mapper.snapshot()
    prompts = [p for p in source.scene.prompts if p.target_id in set(seen.tolist())][:n_prompts]
    correct, examples = 0, []
    for prompt in prompts:
        answer = grounder.ground(prompt.text, snapshot)
        hit, line = check_prompt(prompt.text, prompt.target_id, answer, snapshot, source.scene)
        correct += int(hit)
        examples.append(line)
    result = DemoResult(summary, float(metrics.mean_ap[0.25]), float(metrics.mean_ap[0.5]), occupancy, correct,
                        len(prompts), tuple(examples))
    (out_dir / "demo_metrics.json").write_text(json.dumps({
        "seed": seed, "frames": summary.frames_processed, "objects_seen": int(len(seen)),
        "objects_published": len(published), "map25_accumulated": result.map25, "map50_accumulated": result.map50,
        "occupancy_miou_in_view": occupancy.miou, "occupancy_occupied_iou_in_view": occupancy.occupied_iou,
        "grounding_acc25": correct / max(len(prompts), 1), "grounding_prompts": len(prompts),
        "examples": list(examples)}, indent=1))
    return result


def check_prompt(text: str, target_id: int, answer: Any, snapshot: MemorySnapshot, scene: Any) -> tuple[bool, str]:
    """Whether the answer is the target (its box has IoU > 0.25 with the target's), and a line saying what was
    expected, what was answered and, when it is not the target, why: what the answer is in the scene (a false
    object of the map?), and how the map holds the target (not at all, as another class, or as an object that
    fits the phrase and scored lower)."""
    boxes = np.stack(scene.boxes)
    target = boxes[target_id][None]
    want = f"{scene.objects[target_id].class_name} #{target_id} of the scene"
    hit = answer.best is not None and box_iou_3d(answer.best.object.box[None], target)[0, 0] > 0.25
    line = f"{'ok' if hit else 'NO'}  \"{text}\"\n      expected: {want}\n      given:    {answer.message}"
    if hit:
        return True, line
    why = []
    if answer.best is not None:
        iou = box_iou_3d(boxes, answer.best.object.box[None])[:, 0]
        j = int(np.argmax(iou))
        what = (f"the scene's {scene.objects[j].class_name} #{j} (IoU {iou[j]:.2f})" if iou[j] > 0.1
                else "nothing of the scene (IoU <= 0.1 with every object)")
        false = " (a false object of the map)" if scene.objects[j].class_name != answer.best.object.class_name \
            or iou[j] <= 0.25 else ""
        why.append(f"the answer is {what}{false}")
        for aid in answer.best.anchor_ids:  # an anchor the map holds falsely makes a wrong object fit
            anchor = next(o for o in snapshot.objects if o.id == aid)
            iou = box_iou_3d(boxes, anchor.box[None])[:, 0]
            j = int(np.argmax(iou))
            if scene.objects[j].class_name != anchor.class_name or iou[j] <= 0.25:
                why.append(f"its anchor {anchor.class_name} #{aid} is the scene's {scene.objects[j].class_name} "
                           f"#{j} (IoU {iou[j]:.2f}; a false object of the map)")
    mapped = box_iou_3d(snapshot.boxes, target)[:, 0] if len(snapshot) else np.zeros(0)
    if not len(mapped) or mapped.max() <= 0.25:
        why.append(f"the target is not in the map (best IoU {mapped.max() if len(mapped) else 0.0:.2f})")
    else:
        k = int(np.argmax(mapped))
        obj = snapshot.objects[k]
        ranked = {a.object.id: a.score for a in answer.alternatives}
        if obj.class_name != scene.objects[target_id].class_name:
            why.append(f"the target is mapped as {obj.class_name} #{obj.id} (IoU {mapped[k]:.2f})")
        elif obj.id in ranked and answer.best is not None:
            why.append(f"the target is mapped as {obj.class_name} #{obj.id} (IoU {mapped[k]:.2f}), which fits the "
                       f"phrase too and scores {ranked[obj.id]:.2f} against the answer's {answer.best.score:.2f}")
        else:
            why.append(f"the target is mapped as {obj.class_name} #{obj.id} (IoU {mapped[k]:.2f}), which does not "
                       "fit the phrase as the map holds it")
    return False, line + "\n      why NO:   " + "; ".join(why)
