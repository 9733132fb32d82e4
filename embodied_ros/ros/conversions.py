"""rosbags dataclass messages (built by outputs/scene_messages.py) -> rclpy messages, field by field.

Used where a few small messages are needed as rclpy objects (service answers, the test harness's
inputs); the node's scene outputs are serialised from numpy arrays instead (scene_publisher.py,
cdr.py), and the tests check both give the same messages. The conversion walks the rclpy class's fields
(``get_fields_and_field_types``), so it follows whatever the installed ROS distro defines: fields
that Jazzy added (Marker.texture, mesh_file, ...) are simply dropped on Humble, and fields the
core does not fill keep the rclpy default. Numeric arrays go in as ``array.array`` (rclpy's fast
path) or numpy arrays of the field's type.
"""

from __future__ import annotations

import array
import importlib
import re
from functools import cache
from typing import Any

import numpy as np

# ROS IDL basic type -> (array.array typecode, numpy dtype)
_NUMERIC: dict[str, tuple[str, str]] = {
    "float": ("f", "<f4"), "double": ("d", "<f8"),
    "int8": ("b", "i1"), "uint8": ("B", "u1"), "octet": ("B", "u1"),
    "int16": ("h", "<i2"), "uint16": ("H", "<u2"),
    "int32": ("i", "<i4"), "uint32": ("I", "<u4"),
    "int64": ("q", "<i8"), "uint64": ("Q", "<u8"),
}
_SEQUENCE = re.compile(r"^sequence<([\w/]+)(?:, \d+)?>$")
_FIXED = re.compile(r"^([\w/]+)\[(\d+)\]$")


@cache
def rclpy_class(msgtype: str) -> type:
    """The rclpy message class of ``"pkg/msg/Name"`` (ImportError when the package is not installed)."""
    pkg, kind, name = msgtype.split("/")
    return getattr(importlib.import_module(f"{pkg}.{kind}"), name)


def _nested_class(type_name: str) -> type:
    pkg, name = type_name.split("/")
    return rclpy_class(f"{pkg}/msg/{name}")


@cache
def _flat_float_fields(cls: type) -> tuple[str, ...]:
    """Field names of a message made of float/double fields only (else empty)."""
    fields = cls.get_fields_and_field_types()
    return tuple(fields) if all(t in ("float", "double") for t in fields.values()) else ()


def _convert_value(value: Any, type_name: str) -> Any:
    seq = _SEQUENCE.match(type_name)
    fixed = _FIXED.match(type_name)
    element = seq.group(1) if seq else fixed.group(1) if fixed else None
    if element is not None:
        if element in _NUMERIC:
            code, dtype = _NUMERIC[element]
            data = np.asarray(value, dtype=dtype).reshape(-1)
            return data if fixed else array.array(code, data.tobytes())
        if "/" in element:
            cls = _nested_class(element)
            flat = _flat_float_fields(cls)
            if flat:  # Point, ColorRGBA, ...: thousands per occupancy marker, so skip the generic walk
                return [cls(**{n: float(getattr(v, n)) for n in flat}) for v in value]
            return [to_rclpy(v, cls) for v in value]
        return list(value)
    if "/" in type_name:
        return to_rclpy(value, _nested_class(type_name))
    if type_name in ("float", "double"):
        return float(value)
    if type_name in _NUMERIC:
        return int(value)
    if type_name == "boolean":
        return bool(value)
    return value


def to_rclpy(msg: Any, cls: type | None = None) -> Any:
    """Convert a rosbags dataclass message into an rclpy message.

    Args:
        msg: a rosbags message (has ``__msgtype__``), e.g. from ``scene_messages.marker_array``.
        cls: the rclpy class; looked up from ``msg.__msgtype__`` when None.

    Raises:
        ImportError: the message's package is not installed (e.g. vision_msgs).
    """
    cls = cls or rclpy_class(msg.__msgtype__)
    out = cls()
    for name, type_name in cls.get_fields_and_field_types().items():
        if hasattr(msg, name):
            setattr(out, name, _convert_value(getattr(msg, name), type_name))
    return out
