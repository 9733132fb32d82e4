"""Held-out evaluation: per-frame and accumulated detection mAP, occupancy mIoU (the seeds' metrics)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..geometry.grid import voxels_in_view
from ..mapper import PipelineConfig, SceneMapper
from ..memory.config import MemoryConfig
from ..metrics.detection import BoxSet, DetectionMetrics, evaluate_detection
from ..metrics.occupancy import EMPTY_LABEL, OccupancyAccumulator, OccupancyMetrics
from ..metrics.scene_bootstrap import Interval, scene_interval
from ..network.perceptron import PerceptronConfig
from ..network.perceptron_perceptor import PerceptronPerceptor, RunGraph
from ..network.pixel_detections import PixelDecodeParams
from ..network.size_calibration import SizeCalibration
from ..occupancy.config import OccupancyConfig
from ..synthetic.scene import generate_scene
from .config import DataConfig, TrainConfig
from .samples import frame_indices, scene_config, scene_sample


@dataclass(frozen=True)
class EvalResult:
    """Metrics on held-out scenes.

    Attributes:
        per_frame: detection of each frame alone against the objects visible in it.
        accumulated: the scene memory after the whole trajectory against every object seen.
        occupancy: per-frame local occupancy against the whole ground-truth grids (the grid is
            centred on the camera, so about 85 % of it lies outside the view and must be guessed).
        occupancy_in_view: the same on the voxels in each frame's view frustum only
            (geometry.grid.voxels_in_view; SSCNet's NYU practice).
        occupancy_map: the world occupancy map after the whole trajectory (depth rays, network
            grids and detections fused as the system fuses them), sampled on every keyframe's grid
            and scored on that keyframe's in-view voxels; occupied voxels without a class vote
            count as empty.
        occupancy_map_grid: the same map scored on every keyframe's whole grid: accumulation's
            answer to the 85 % of a grid one frame cannot see (parts no frame saw count as empty).
        n_scenes, n_frames: how much was evaluated.
        intervals: bootstrap intervals over scenes (``evaluate(resamples=...)``) of the accumulated
            mAP@0.25 ("accumulated_map25") and of the world map's mIoU in view and on whole grids
            ("map_in_view", "map_whole_grids"); empty when not asked for.
    """

    per_frame: DetectionMetrics
    accumulated: DetectionMetrics
    occupancy: OccupancyMetrics
    occupancy_in_view: OccupancyMetrics
    occupancy_map: OccupancyMetrics
    occupancy_map_grid: OccupancyMetrics
    n_scenes: int
    n_frames: int
    intervals: dict[str, Interval] = field(default_factory=dict)

    def summary(self) -> str:
        return (f"per-frame {self.per_frame.summary()} | accumulated {self.accumulated.summary()} | "
                f"{self.occupancy.summary()} | in view: {self.occupancy_in_view.summary()} | "
                f"accumulated map: {self.occupancy_map.summary()} | on whole grids: "
                f"{self.occupancy_map_grid.summary()} "
                f"({self.n_scenes} scenes, {self.n_frames} frames)")


def evaluate(run_graph: RunGraph, model: PerceptronConfig, data: DataConfig, seeds: range | None = None,
             frames_per_scene: int | None = None, memory_kwargs: dict | None = None,
             sizes: SizeCalibration | None = None, occupancy_kwargs: dict | None = None,
             resamples: int = 0, pixels: PixelDecodeParams | None = None) -> EvalResult:
    """Run the network frame by frame over held-out synthetic scenes and score it.

    Accumulation uses the real SceneMemory with the project's rules (score 0.075, IoU 0.15);
    every object the memory holds is scored with its own box (min_observations=1, publish_confidence=0,
    settle_boxes=False: mAP ranks them all by score; what a robot is shown while the map is built, only
    boxes two looks agreed on, is a choice on top), so the scene metric sees all of them.
    ``sizes``: the weights' size calibration, applied as the shipped perceptor applies it.
    ``memory_kwargs``, ``occupancy_kwargs``: parameters of the SceneMemory and the world OccupancyMap.
    ``resamples``: bootstrap resamples over scenes for ``EvalResult.intervals`` (0: none).
    ``pixels``: which classes a pixel head answers for (None: the perceptor's default).
    """
    seeds = range(*data.val_seeds) if seeds is None else seeds
    n_frames = frames_per_scene or data.val_frames_per_scene
    perceptor = PerceptronPerceptor(run_graph, model, floor_z=0.0, sizes=sizes, pixels=pixels)  # floors at z = 0
    config = PipelineConfig(
        memory=MemoryConfig(**{"min_observations": 1, "publish_confidence": 0.0, "settle_boxes": False,
                                **(memory_kwargs or {})}),
        occupancy=OccupancyConfig(**(occupancy_kwargs or {})))
    frame_preds, frame_gts, scene_preds, scene_gts = [], [], [], []
    occ = OccupancyAccumulator(model.occupancy_classes)
    occ_view = OccupancyAccumulator(model.occupancy_classes)
    in_view_maps: list[OccupancyAccumulator] = []  # per scene: the world map on its keyframes' in-view voxels
    whole_maps: list[OccupancyAccumulator] = []  # per scene: the same on the keyframes' whole grids
    count = 0
    for seed in seeds:
        scene = generate_scene(int(seed), scene_config(data))
        mapper = SceneMapper(config, perceptor)
        views: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (T_world_grid, in view, truth)
        seen: set[int] = set()
        for i in frame_indices(len(scene), n_frames):
            rendered = scene.render(int(i))
            result = mapper.step(rendered.frame).perception
            visible = scene.visible_objects(rendered, min_fraction=data.min_visibility)
            seen.update(int(v) for v in visible)
            frame_preds.append(BoxSet.from_detections(result.detections))
            frame_gts.append(scene.ground_truth(visible))
            assert result.occupancy is not None
            truth = scene.surface.occupancy(result.occupancy.T_world_grid, model.grid_spec())
            occ.add(result.occupancy.labels, truth.labels)
            frame = rendered.frame
            in_view = voxels_in_view(result.occupancy.T_world_grid, frame.T_world_camera, frame.K, frame.width,
                                     frame.height, model.grid_spec())
            occ_view.add(result.occupancy.labels, truth.labels, valid=in_view)
            views.append((result.occupancy.T_world_grid, in_view, truth.labels))
            count += 1
        in_view_maps.append(OccupancyAccumulator(model.occupancy_classes))
        whole_maps.append(OccupancyAccumulator(model.occupancy_classes))
        world = mapper.occupancy
        for T_world_grid, in_view, truth_labels in views:
            labels = world.class_grid(T_world_grid, model.occupancy_classes, model.grid_shape, model.voxel_size)
            in_view_maps[-1].add(labels, truth_labels, valid=in_view)
            whole_maps[-1].add(labels, truth_labels)
        objects = mapper.memory.published_objects()
        scene_preds.append(BoxSet(np.array([o.box for o in objects]).reshape(-1, 9),
                                  tuple(o.class_name for o in objects), np.array([o.score for o in objects])))
        scene_gts.append(scene.ground_truth(np.array(sorted(seen), dtype=np.int64)))
    classes, names = model.classes, model.occupancy_classes

    def scene_map25(scenes: np.ndarray) -> float:
        picked = evaluate_detection([scene_preds[i] for i in scenes], [scene_gts[i] for i in scenes],
                                    iou_thresholds=(0.25,), classes=classes)
        return picked.mean_ap[0.25]

    n = len(scene_preds)
    intervals = {} if resamples <= 0 or n == 0 else {
        "accumulated_map25": scene_interval(scene_map25, n, resamples),
        "map_in_view": scene_interval(lambda s: _summed(in_view_maps, s, names).miou, n, resamples),
        "map_whole_grids": scene_interval(lambda s: _summed(whole_maps, s, names).miou, n, resamples),
    }
    return EvalResult(evaluate_detection(frame_preds, frame_gts, classes=classes),
                      evaluate_detection(scene_preds, scene_gts, classes=classes), occ.result(), occ_view.result(),
                      _summed(in_view_maps, np.arange(n), names), _summed(whole_maps, np.arange(n), names),
                      len(seeds), count, intervals)


def _summed(per_scene: list[OccupancyAccumulator], scenes: np.ndarray, names: tuple[str, ...]) -> OccupancyMetrics:
    """Occupancy metrics of the chosen scenes' counts together (scenes may repeat: a bootstrap draw)."""
    total = OccupancyAccumulator(names)
    for i in scenes:
        total.extend(per_scene[int(i)])
    return total.result()


def evaluate_grounding_head(model: object, head: object, config: TrainConfig, encoder: object) -> float:
    """Top-1 accuracy of the grounding head on held-out frames' prompts (proposals: the objects seen).

    Isolates the head from detection errors: proposals are the frame's true boxes, features come
    from the network run on that frame.
    """
    import torch

    from .grounding_loss import grounding_loss

    correct = total = 0
    for seed in range(*config.data.val_seeds):
        scene = generate_scene(int(seed), scene_config(config.data))
        for i in frame_indices(len(scene), config.data.val_frames_per_scene):
            sample = scene_sample(scene, int(i), config.model, config.data, encoder)
            x = sample.inputs
            with torch.no_grad():
                outputs = model(torch.from_numpy(x.images), torch.from_numpy(x.projections),  # type: ignore[operator]
                                torch.from_numpy(x.depth_volume))
                _, c, t = grounding_loss(outputs[5], sample, head, config.model)  # type: ignore[arg-type]
            correct, total = correct + c, total + t
    return correct / total if total else float("nan")


def evaluate_pixel_head(model: object, config: TrainConfig) -> dict[str, float]:
    """IoU per object class of the pixel head's argmax on held-out frames (classes never seen: absent).

    Returns:
        {class name: IoU} and "mean" (over the classes present), on the head's S/2 x S/2 pixels.
    """
    import torch

    n = config.model.num_classes
    scores = OccupancyAccumulator(config.model.classes)  # the same per-class IoU, "other" as empty
    for seed in range(*config.data.val_seeds):
        scene = generate_scene(int(seed), scene_config(config.data))
        for i in frame_indices(len(scene), config.data.val_frames_per_scene):
            sample = scene_sample(scene, int(i), config.model, config.data)
            with torch.no_grad():
                logits = model.pixel_logits(torch.from_numpy(sample.inputs.images))  # type: ignore[attr-defined]
            pred = logits.argmax(dim=1).numpy().astype(np.int64)
            truth = sample.pixel_labels.astype(np.int64)  # type: ignore[union-attr]
            scores.add(np.where(pred == n, EMPTY_LABEL, pred), np.where(truth == n, EMPTY_LABEL, truth))
    result = scores.result()
    ious = {c: float(v) for c, v in zip(result.class_names, result.iou, strict=True) if v == v}
    return {**ious, "mean": result.miou}
