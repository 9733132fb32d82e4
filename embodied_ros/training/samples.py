"""Training samples from synthetic scenes: graph inputs + box targets + occupancy labels per keyframe."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from ..geometry.boxes import transform_boxes
from ..geometry.transforms import invert_transform
from ..network.perceptron import PerceptronConfig
from ..network.perceptron_perceptor import GraphInputs, graph_inputs
from ..network.perceptron_targets import BoxTargets, box_targets
from ..synthetic.scene import SceneConfig, SyntheticScene, generate_scene
from .config import DataConfig


@dataclass(frozen=True)
class PromptSample:
    """A grounding prompt whose target and anchors are all among a sample's proposals.

    Attributes:
        tokens: (T, D) float16 token states of the phrase (TextEncoder.encode_tokens).
        target: index of the named object among the sample's proposals.
        text: the phrase (for logs).
    """

    tokens: np.ndarray
    target: int
    text: str


@dataclass(frozen=True)
class TrainingSample:
    """One keyframe ready for the network and the loss.

    Attributes:
        inputs: the graph inputs (with the grid pose they refer to).
        targets: box targets on the box head's voxels (grid frame).
        occupancy: (X, Y, Z) int64 occupancy labels; the config's empty_label for empty.
        visible_ids: instance ids of the scene objects that are targets in this frame; they are
            also the grounding proposals, in this order.
        proposal_boxes: (K, 9) their boxes in the grid frame.
        prompts: grounding prompts answerable among these proposals.
        scene_seed, frame_index: where it came from.
        pixel_labels: (V, S/2, S/2) uint8 pixel classes for the pixel head (object class index, or
            the number of classes for any other surface), or None when the data has none.
    """

    inputs: GraphInputs
    targets: BoxTargets
    occupancy: np.ndarray
    visible_ids: np.ndarray
    proposal_boxes: np.ndarray
    prompts: tuple[PromptSample, ...]
    scene_seed: int
    frame_index: int
    pixel_labels: np.ndarray | None = None


def scene_config(data: DataConfig) -> SceneConfig:
    return SceneConfig(width=data.image_width, height=data.image_height)


def _prompt_samples(scene: SyntheticScene, ids: np.ndarray, encoder: object | None,
                    limit: int) -> tuple[PromptSample, ...]:
    if encoder is None or limit <= 0:
        return ()
    position = {int(i): k for k, i in enumerate(ids)}
    usable = [p for p in scene.prompts if p.target_id in position and all(a in position for a in p.anchor_ids)]
    return tuple(PromptSample(encoder.encode_tokens(p.text).astype(np.float16), position[p.target_id], p.text)  # type: ignore[attr-defined]
                 for p in usable[:limit])


def scene_sample(scene: SyntheticScene, index: int, model: PerceptronConfig, data: DataConfig,
                 encoder: object | None = None) -> TrainingSample:
    """The training sample of frame ``index`` of a synthetic scene (floor at z = 0, as generated).

    ``encoder`` (grounding.TextEncoder) turns the scene's prompts into token states; None: no prompts.
    """
    rendered = scene.render(index)
    inputs = graph_inputs(rendered.frame, model, floor_z=0.0)
    visible = scene.visible_objects(rendered, min_fraction=data.min_visibility)
    boxes_grid = transform_boxes(scene.boxes[visible], invert_transform(inputs.T_world_grid))
    extent = np.asarray(model.grid_shape) * model.voxel_size
    inside = np.all((boxes_grid[:, :3] >= 0) & (boxes_grid[:, :3] <= extent), axis=1)
    targets = box_targets(model.box_voxel_centres(), boxes_grid[inside], scene.labels[visible][inside],
                          centre_cell=data.centre_cell_positives, margin=model.face_margin)
    occ = scene.surface.occupancy(inputs.T_world_grid, model.grid_spec()).labels.astype(np.int64)
    occ[occ < 0] = model.empty_label
    ids = visible[inside]
    prompts = _prompt_samples(scene, ids, encoder, data.prompts_per_sample)
    pixels = pixel_labels(rendered.class_id, model) if model.pixel_head else None
    return TrainingSample(inputs, targets, occ, ids, boxes_grid[inside], prompts, scene.seed, index, pixels)


def pixel_labels(class_id: np.ndarray, model: PerceptronConfig) -> np.ndarray:
    """(1, S/2, S/2) uint8 pixel-head labels from a class render (classes.ALL_CLASSES indices, -1 = no hit).

    Object classes keep their index; structure and no hit become ``num_classes`` (other). Nearest
    neighbour resampling keeps every label a real one (no blend of two classes).
    """
    n = model.num_classes
    labels = np.where((class_id >= 0) & (class_id < n), class_id, n).astype(np.uint8)
    size = model.image_size // 2
    return cv2.resize(labels, (size, size), interpolation=cv2.INTER_NEAREST)[None]


def frame_indices(n_frames: int, wanted: int) -> np.ndarray:
    """``wanted`` keyframes spread over a trajectory of ``n_frames``."""
    return np.unique(np.linspace(0, n_frames - 1, num=min(wanted, n_frames)).round().astype(int))


def generate_samples(seeds: range, model: PerceptronConfig, data: DataConfig, frames_per_scene: int,
                     progress: bool = False, encoder: object | None = None) -> list[TrainingSample]:
    """Render the samples of several scenes (kept in memory: about 1 MB each)."""
    from tqdm import tqdm

    samples = []
    for seed in tqdm(seeds, desc="rendering scenes", unit="scene", disable=not progress):
        scene = generate_scene(int(seed), scene_config(data))
        for i in frame_indices(len(scene), frames_per_scene):
            samples.append(scene_sample(scene, int(i), model, data, encoder))
    return samples
