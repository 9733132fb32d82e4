"""A model's labels travel with the model: the Embodied Perceptron's class names come from its weights
file (old files without them still load), and training refuses a vocabulary its data does not use."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml

from embodied_ros.errors import ConfigError
from embodied_ros.network.perceptron import EmbodiedPerceptron, PerceptronConfig
from embodied_ros.network.registry import build_perceptron
from embodied_ros.synthetic.classes import OBJECT_CLASSES, OCCUPANCY_CLASSES
from embodied_ros.training.config import DataConfig, OptimConfig, TrainConfig, config_from_yaml, synthetic_model
from embodied_ros.training.trainer import save_weights, train

SMALL = replace(synthetic_model(), image_size=64, grid_shape=(8, 8, 4), voxel_size=0.4, grid_origin=(-1.6, -1.6, -0.8))
# Another vocabulary of the same size: two classes renamed (the pixel head's classes kept).
RENAMED = tuple({"chair": "stool", "sofa": "couch"}.get(c, c) for c in OBJECT_CLASSES)


def _weights(tmp_path: Path, model_config: PerceptronConfig) -> Path:
    path = tmp_path / "net.pt"
    save_weights(EmbodiedPerceptron(model_config), TrainConfig(model=model_config), path)
    return path


def test_labels_come_from_the_weights_file(tmp_path: Path) -> None:
    path = _weights(tmp_path, replace(SMALL, classes=RENAMED))
    perceptor = build_perceptron(path, backend="torch")
    assert perceptor.class_names == RENAMED
    assert perceptor.network.contract is not None


def test_an_old_weights_file_without_a_vocabulary_loads_with_the_synthetic_one(tmp_path: Path) -> None:
    path = _weights(tmp_path, SMALL)
    blob = torch.load(path, weights_only=True)
    saved = yaml.safe_load(blob["config_yaml"])
    del saved["model"]["classes"], saved["model"]["occupancy_classes"]
    blob["config_yaml"] = yaml.safe_dump(saved)
    torch.save(blob, path)
    assert config_from_yaml(blob["config_yaml"]).model.image_size == 64  # the rest of the section is kept
    perceptor = build_perceptron(path, backend="torch")
    assert perceptor.class_names == OBJECT_CLASSES
    assert perceptor.config.occupancy_classes == OCCUPANCY_CLASSES


def test_a_network_needs_a_vocabulary_and_training_needs_its_datas(tmp_path: Path) -> None:
    assert PerceptronConfig().classes == ()  # the network module knows no vocabulary of its own
    with pytest.raises(ConfigError, match="vocabularies"):
        EmbodiedPerceptron(PerceptronConfig())
    tiny = TrainConfig(model=replace(SMALL, classes=RENAMED), optim=OptimConfig(steps=1, accumulate=1),
                       data=DataConfig(train_seeds=(0, 1), val_seeds=(10_000, 10_001), frames_per_scene=1,
                                       val_frames_per_scene=1, prompts_per_sample=0, image_width=64, image_height=64))
    with pytest.raises(ConfigError, match="synthetic world's"):
        train(tiny, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
