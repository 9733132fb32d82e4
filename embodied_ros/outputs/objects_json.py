"""objects.json: the scene's objects for people and scripts (read back by `embodied-ros ground`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..geometry import boxes as box_convention

FORMAT_VERSION = 1


def objects_document(objects: Sequence[Any], frame_id: str, extra: dict[str, Any] | None = None,
                     structure: Sequence[Any] = ()) -> dict[str, Any]:
    """The JSON document for a list of scene objects (memory.SceneObject) and the room's structure.

    Each object (and each part of the structure, in its own list ``structure``: floor, wall, counter, shelf,
    cabinet): id, class, score, confidence (that it exists), box (9-DoF), class_scores, first/last seen
    frame and stamp, number of detections and of independent looks (places it was seen from), whether its box
    is settled (two looks agreed on it and nothing changed it since: memory/settling.py), colour word (None
    when never sampled).
    """
    return {
        "format_version": FORMAT_VERSION,
        "frame_id": frame_id,
        "box_convention": "x y z dx dy dz alpha beta gamma; metres, radians; "
        f"R = Rz(alpha) Rx(beta) Ry(gamma) (intrinsic {box_convention.EULER_ORDER})",
        "objects": [_entry(o) for o in objects],
        "structure": [_entry(o) for o in structure],
        **(extra or {}),
    }


def _entry(o: Any) -> dict[str, Any]:
    return {
        "id": int(o.id),
        "class": o.class_name,
        "score": round(float(o.score), 4),
        "confidence": round(float(getattr(o, "confidence", 1.0)), 4),
        "box": [round(float(v), 5) for v in o.box],
        "class_scores": {k: round(float(v), 4) for k, v in dict(o.class_scores).items()},
        "first_seen_frame": int(o.first_seen_frame),
        "last_seen_frame": int(o.last_seen_frame),
        "first_seen_ns": int(o.first_seen_ns),
        "last_seen_ns": int(o.last_seen_ns),
        "n_observations": int(o.n_observations),
        "n_looks": int(getattr(o, "n_looks", o.n_observations)),
        "settled": bool(getattr(o, "settled", True)),
        "colour": o.colour_name,
    }


def write_objects_json(path: Path, objects: Sequence[Any], frame_id: str, extra: dict[str, Any] | None = None,
                       structure: Sequence[Any] = ()) -> None:
    path.write_text(json.dumps(objects_document(objects, frame_id, extra, structure), indent=1))
