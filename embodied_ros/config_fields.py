"""Config dataclass fields as text: the node's ROS parameters and `run --set SECTION.FIELD=VALUE` both
reach every field of the PipelineConfig through these, so neither restates a field or a default.

A tuple field holds numbers (``LiftingParams.depth_offset_px``), names (``surface_classes``) or
(name, number) pairs written ``"name:value"`` (``min_horizontal_size``).
"""

from __future__ import annotations

import dataclasses
import enum
import typing
from typing import TYPE_CHECKING, Any

from .errors import ConfigError

if TYPE_CHECKING:
    import argparse

    from .mapper import PipelineConfig


def tuple_kind(hint: Any) -> str:
    """How a tuple field's items are written: "names", "pairs" or "numbers"."""
    args = typing.get_args(hint)
    inner = next((a for a in args if a is not type(None)), hint) if type(None) in args else hint
    item = (typing.get_args(inner) or (float,))[0]
    if item is str:
        return "names"
    if typing.get_origin(item) is tuple:
        return "pairs"
    return "numbers"


def tuple_items(values: Any, kind: str, name: str) -> tuple:
    """A tuple field's value from a list of items (strings "name:value" for pairs)."""
    if kind == "names":
        return tuple(str(v) for v in values)
    if kind == "numbers":
        return tuple(float(v) for v in values)
    pairs = []
    for item in values:
        key, _, number = str(item).rpartition(":")
        try:
            if not key:
                raise ValueError(item)
            pairs.append((key, float(number)))
        except ValueError:
            raise ConfigError(f"{name}: {item!r} is not 'name:value'") from None
    return tuple(pairs)


def _value(text: str, hint: Any, name: str) -> Any:
    """One field's value from its text, by the field's type."""
    if hint is bool:
        if text.lower() not in ("true", "false", "1", "0"):
            raise ConfigError(f"{name}: {text!r} is not true or false")
        return text.lower() in ("true", "1")
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(text)
    if typing.get_origin(hint) is tuple or (typing.get_args(hint) and typing.get_origin(typing.get_args(hint)[0])
                                            is tuple):
        if text.lower() in ("", "none") and type(None) in typing.get_args(hint):
            return None
        return tuple_items([t.strip() for t in text.split(",") if t.strip()], tuple_kind(hint), name)
    try:
        return hint(text) if hint in (int, float, str) else text
    except ValueError:
        raise ConfigError(f"{name}: {text!r} is not {'a whole number' if hint is int else 'a number'}") from None


def with_settings(config: Any, settings: list[str]) -> Any:
    """``config`` (a frozen dataclass of config dataclasses, e.g. PipelineConfig) with "section.field=value"
    settings applied; each is checked by the section's own dataclass.

    Raises:
        ConfigError: an unknown section or field, a value of the wrong type, or one the section rejects.
    """
    changes: dict[str, dict[str, Any]] = {}
    sections = {f.name for f in dataclasses.fields(config)}
    for setting in settings:
        key, eq, text = setting.partition("=")
        section, dot, field = key.strip().partition(".")
        if not eq or not dot or section not in sections:
            raise ConfigError(f"--set {setting!r}: expected SECTION.FIELD=VALUE, SECTION one of {sorted(sections)}")
        part = getattr(config, section)
        hints = typing.get_type_hints(type(part))
        if field not in hints:
            raise ConfigError(f"--set {setting!r}: {type(part).__name__} has no field {field!r} "
                              f"(fields: {', '.join(f.name for f in dataclasses.fields(part))})")
        changes.setdefault(section, {})[field] = _value(text.strip(), hints[field], key)
    try:
        parts = {s: dataclasses.replace(getattr(config, s), **c) for s, c in changes.items()}
    except (TypeError, ValueError) as err:
        raise ConfigError(f"--set: {err}") from None
    return dataclasses.replace(config, **parts)


def pipeline_config(args: argparse.Namespace) -> PipelineConfig:
    """The pipeline's config from `embodied-ros run`'s options (its ``--set`` settings applied last)."""
    from .mapper import ModelChoice, PipelineConfig
    from .memory.config import MemoryConfig
    from .network.lifting import LiftingParams

    return with_settings(PipelineConfig(
        runtime=ModelChoice(model=args.model, weights=str(args.weights or ""), download_weights=args.download_weights,
                            backend=args.backend, allow_fallback=args.allow_fallback, fp16=args.fp16),
        lifting=LiftingParams(depth_scale=args.depth_scale, depth_offset_px=tuple(args.depth_offset)),
        memory=MemoryConfig(
            score_threshold=args.score_threshold, iou_threshold=args.iou_threshold,
            max_per_class=args.max_per_class, containment_threshold=args.containment_threshold,
            min_observations=args.min_observations, publish_confidence=args.publish_confidence,
            class_agnostic=not args.per_class)), args.settings)
