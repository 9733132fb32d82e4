"""Frozen config dataclasses from YAML text: one reader for training's config files and the config saved in a
weights file (training/config.py reads the whole of it, network/perceptron_file.py its model section)."""

from __future__ import annotations

import dataclasses
from typing import Any

import yaml

from .errors import ConfigError


def yaml_mapping(text: str, where: str) -> dict[str, Any]:
    """The mapping a YAML text holds.

    Raises:
        ConfigError: bad YAML, or not a mapping (``where`` names the source in the message).
    """
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{where}: {' '.join(str(err).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: the config must be a mapping of sections")
    return data


def from_mapping(base: Any, data: dict[str, Any] | None, where: str) -> Any:
    """A (nested) frozen dataclass: ``base`` (the defaults) with a mapping's values; unknown keys are an
    error, lists become tuples. A nested section starts from its parent's default for it.

    Raises:
        ConfigError: an unknown key, or a value the dataclass rejects (``where`` names the section).
    """
    data = dict(data or {})
    cls = type(base)
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(known)}")
    kwargs = {}
    for name, value in data.items():
        default = getattr(base, name)
        if dataclasses.is_dataclass(default):
            kwargs[name] = from_mapping(default, value, f"{where}.{name}")
        elif isinstance(default, tuple) and isinstance(value, list):
            kwargs[name] = tuple(tuple(v) if isinstance(v, list) else v for v in value)
        else:
            kwargs[name] = value
    try:
        return dataclasses.replace(base, **kwargs)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}: {err}") from None
