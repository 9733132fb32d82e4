"""Training configuration: frozen dataclasses read from and written to YAML (one file = one run)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..config_mapping import from_mapping, yaml_mapping
from ..errors import ConfigError
from ..network.grounding_head import GroundingHeadConfig
from ..network.perceptron import PerceptronConfig
from ..network.perceptron_loss import LossWeights
from ..synthetic.classes import OBJECT_CLASSES, OCCUPANCY_CLASSES


def synthetic_model() -> PerceptronConfig:
    """The network trained on the synthetic world: its vocabularies are the world's (labels = indices there).

    Also what a weights file whose saved config names no classes (written before they were saved) was
    trained on, so such files still load with their right labels.
    """
    return PerceptronConfig(classes=OBJECT_CLASSES, occupancy_classes=OCCUPANCY_CLASSES)


@dataclass(frozen=True)
class DataConfig:
    """Which synthetic scenes and frames feed training and evaluation."""

    train_seeds: tuple[int, int] = (0, 40)  # [first, last) scene seeds for training
    val_seeds: tuple[int, int] = (10_000, 10_004)  # held-out scene seeds (never trained on)
    frames_per_scene: int = 12  # keyframes rendered per training scene
    val_frames_per_scene: int = 12  # keyframes per held-out scene (accumulated for the scene metric)
    min_visibility: float = 0.1  # an object is a training target in a frame when this much of it shows
    centre_cell_positives: bool = False  # the 2 x 2 x 2 box-head voxels around each box centre are positives too
    prompts_per_sample: int = 4  # grounding prompts per keyframe for the grounding head (0: no head training)
    image_width: int = 480  # rendered frame size (the network resizes to its image_size)
    image_height: int = 480


@dataclass(frozen=True)
class OptimConfig:
    """Optimiser and schedule."""

    steps: int = 2000  # optimiser steps
    lr: float = 2e-3  # peak learning rate (AdamW), cosine decay to 5 % after a linear warm-up
    warmup_steps: int = 100
    weight_decay: float = 1e-4
    accumulate: int = 2  # samples per optimiser step (the graph takes one keyframe at a time)
    grad_clip: float = 5.0  # max gradient norm
    threads: int = 2  # torch intra-op threads per process
    # Train only the parameters under these module names (e.g. [perceptron.pixel_head]); the rest
    # stay frozen, batch norm included. Empty: train everything. Only the pixel head: the 3D part is
    # not even run, so a step costs the 2D encoder alone.
    train_only: tuple[str, ...] = ()


@dataclass(frozen=True)
class TrainConfig:
    """A training run."""

    model: PerceptronConfig = field(default_factory=synthetic_model)
    # The grounding head; its feature_dim is taken from model.box_channels (see head_config).
    head: GroundingHeadConfig = field(default_factory=GroundingHeadConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    loss: LossWeights = field(default_factory=LossWeights)
    seed: int = 0  # torch / sampling seed
    # A weights file (perceptron.pt) whose state dicts start a new run; modules it lacks (a pixel
    # head added to trained weights) keep their fresh initialisation. Empty: start from scratch.
    init_weights: str = ""
    eval_every: int = 500  # steps between held-out evaluations (and at the end)
    checkpoint_every: int = 250  # steps between checkpoints (and at the end)
    log_every: int = 25  # steps between loss records


def head_config(config: TrainConfig) -> GroundingHeadConfig:
    """The grounding head's config, wired to the perceptron's feature width."""
    return dataclasses.replace(config.head, feature_dim=config.model.box_channels)


def load_config(path: str | Path) -> TrainConfig:
    """Read a YAML training config (missing keys take the defaults).

    Raises:
        ConfigError: unreadable file, bad YAML or unknown keys.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise ConfigError(f"{path}: {' '.join(str(err).split())}") from None
    return config_from_yaml(text, path.name)


def config_from_yaml(text: str, where: str = "config") -> TrainConfig:
    """A TrainConfig from YAML text (a file's, or the one saved inside a weights file).

    Raises:
        ConfigError: bad YAML or unknown keys (``where`` names the source in the message).
    """
    return from_mapping(TrainConfig(), yaml_mapping(text, where), where)


def dump_config(config: TrainConfig) -> str:
    """The config as YAML (tuples as lists), readable by load_config."""
    def plain(value: Any) -> Any:
        if isinstance(value, tuple):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value

    return yaml.safe_dump(plain(dataclasses.asdict(config)), sort_keys=False)
