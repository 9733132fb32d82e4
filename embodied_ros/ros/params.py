"""ROS parameters declared from the frozen config dataclasses (one source of names, defaults and descriptions).

Each dataclass field becomes a parameter ``<prefix><field>`` with the field's default and, as its
description, the comment lines written above the field (or after it, on its line) in the dataclass
source. Enums are string parameters; an optional tuple (``OccupancyConfig.bounds``) is a double array,
unset = None; a tuple of names (``LiftingParams.surface_classes``) is a string array, and a tuple of
(name, value) pairs (``LiftingParams.min_horizontal_size``) a string array of "name:value".
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import re
import typing
from functools import cache
from typing import Any, TypeVar

from ..config_fields import tuple_items, tuple_kind
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
    group = ""  # the comment above a run of fields with no blank line between (``min_depth``, ``max_depth``)
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#"):
            pending.append(stripped.lstrip("# "))
            continue
        match = re.match(r"(\w+)\s*:[^#]*(?:#\s*(.*))?$", stripped)
        if match:
            group = " ".join(pending) if pending else group
            text = " ".join(t for t in (group, match.group(2) or "") if t)
            if text:
                comments[match.group(1)] = text
        else:
            group = ""
        pending = []
    return comments


def _ros_default(value: Any, kind: str) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        if kind == "names":
            return [str(v) for v in value]
        if kind == "pairs":
            return [f"{name}:{number}" for name, number in value]
        return [float(v) for v in value]
    return value


def declare_config(node: Any, cls: type[T], prefix: str = "", skip: frozenset[str] = frozenset()) -> T:
    """Declare one parameter per field of ``cls`` on ``node`` and build ``cls`` from their values.

    Args:
        node: an rclpy Node.
        cls: a frozen config dataclass (NodeConfig, MemoryConfig, OccupancyConfig, LiftingParams, ...).
        prefix: parameter name prefix, e.g. "memory.".
        skip: fields not declared (another parameter sets them): they keep their defaults.

    Raises:
        ConfigError: a value ``cls`` rejects (its message names the field).
    """
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.parameter import Parameter

    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        kind = tuple_kind(hints.get(f.name))
        ros_default = _ros_default(default, kind)
        descriptor = ParameterDescriptor(description=comments.get(f.name, ""))
        if default is None or default == ():  # rclpy cannot infer a type from an empty list
            ros_default = Parameter.Type.DOUBLE_ARRAY if kind == "numbers" else Parameter.Type.STRING_ARRAY
        try:
            value = node.declare_parameter(prefix + f.name, ros_default, descriptor).value
        except Exception as err:  # noqa: BLE001 - rclpy's type errors: a YAML "1" for a float field, ...
            raise ConfigError(f"parameter {prefix}{f.name}: {err}") from None
        if default is None:
            value = tuple_items(value, kind, prefix + f.name) if value is not None and len(value) else None
        elif isinstance(default, tuple):
            value = tuple_items(value if value is not None else (), kind, prefix + f.name)
        elif isinstance(hints.get(f.name), type) and issubclass(hints[f.name], enum.Enum):
            value = str(value)
        values[f.name] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ConfigError(f"parameters {prefix}*: {err}") from None
