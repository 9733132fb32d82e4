"""The Embodied Perceptron's weights file as inference reads it: the network's state dict and the model section
of the config that trained it.

training/trainer.py's ``save_weights`` writes the file (``state_dict``, ``config_yaml``: the whole TrainConfig,
``head_state_dict`` when it has a grounding head); training reads the whole config back, inference only
what builds the network, so running a model never imports the training code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from ..config_mapping import from_mapping, yaml_mapping
from .perceptron import EmbodiedPerceptron, PerceptronConfig


def read_weights(path: Path) -> dict[str, Any]:
    """The file's tensors and saved config, on the CPU (``torch.load`` without pickled code)."""
    return torch.load(path, map_location="cpu", weights_only=True)


def _unnamed_vocabulary_model() -> PerceptronConfig:
    """What a file whose saved config names no vocabulary (written before vocabularies were saved) was trained on:
    the synthetic world's (training/config.py's ``synthetic_model``)."""
    from ..classes import OBJECT_CLASSES, OCCUPANCY_CLASSES  # only for such old files

    return PerceptronConfig(classes=OBJECT_CLASSES, occupancy_classes=OCCUPANCY_CLASSES)


def model_config_from_yaml(text: str, where: str = "config") -> PerceptronConfig:
    """The network's config from a weights file's saved config (its ``model`` section; missing keys: defaults).

    Raises:
        ConfigError: bad YAML, or unknown keys or bad values in the model section.
    """
    section = yaml_mapping(text, where).get("model")
    named = isinstance(section, dict) and "classes" in section and "occupancy_classes" in section
    base = PerceptronConfig() if named else _unnamed_vocabulary_model()
    return from_mapping(base, section, f"{where}.model")


def perceptron_from(blob: dict[str, Any], config: PerceptronConfig) -> EmbodiedPerceptron:
    """The network ``config`` describes with the file's weights, in eval mode."""
    model = EmbodiedPerceptron(config)
    model.load_state_dict(blob["state_dict"])
    return model.eval()


def load_perceptron(path: Path) -> tuple[EmbodiedPerceptron, PerceptronConfig]:
    """A model (eval mode) and its config from a weights file; its labels are the vocabulary saved in the file."""
    blob = read_weights(path)
    config = model_config_from_yaml(blob["config_yaml"], path.name)
    return perceptron_from(blob, config), config
