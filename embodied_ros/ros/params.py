"""ROS parameters declared from the frozen config dataclasses (one source of names, defaults and descriptions).

Each dataclass field becomes a parameter ``<prefix><field>`` with the field's default and, as its
description, the comment lines written above the field in the dataclass source. Enums are string
parameters; an optional tuple (``OccupancyConfig.bounds``) is a double array, unset = None.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import typing
from functools import cache
from typing import Any, TypeVar

from ..errors import ConfigError

T = TypeVar("T")


@cache
def field_comments(cls: type) -> dict[str, str]:
    """{field name: the comment lines directly above it in ``cls``'s source}."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("# "))
            continue
        match = re.match(r"(\w+)\s*:", stripped)
        if match and pending:
            comments[match.group(1)] = " ".join(pending)
        pending = []
    return comments


def _ros_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return [float(v) for v in value]
    return value


def declare_config(node: Any, cls: type[T], prefix: str = "") -> T:
    """Declare one parameter per field of ``cls`` on ``node`` and build ``cls`` from their values.

    Args:
        node: an rclpy Node.
        cls: a frozen config dataclass (NodeConfig, MemoryConfig, OccupancyConfig).
        prefix: parameter name prefix, e.g. "memory.".

    Raises:
        ConfigError: a value ``cls`` rejects (its message names the field).
    """
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.parameter import Parameter

    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        ros_default = _ros_default(default)
        descriptor = ParameterDescriptor(description=comments.get(f.name, ""))
        if default is None:  # typed but unset: rclpy cannot infer a type from an empty list
            ros_default = Parameter.Type.DOUBLE_ARRAY
        try:
            value = node.declare_parameter(prefix + f.name, ros_default, descriptor).value
        except Exception as err:  # noqa: BLE001 - rclpy's type errors: a YAML "1" for a float field, ...
            raise ConfigError(f"parameter {prefix}{f.name}: {err}") from None
        if default is None or isinstance(default, tuple):
            value = tuple(float(v) for v in value) if value is not None and len(value) else None
        elif isinstance(hints.get(f.name), type) and issubclass(hints[f.name], enum.Enum):
            value = str(value)
        values[f.name] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"parameters {prefix}*: {err}") from None
