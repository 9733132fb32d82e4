"""Grounding predictions in the ScanRefer benchmark's submission form (``pred.json``), and dense captions
in the Scan2Cap benchmark's (``benchmark_<split>.json``).

The file is a JSON list with one record per (scene, object, annotation):
``{"scene_id": "scene0011_00", "object_id": "7", "ann_id": "0", "bbox": [[x, y, z] x 8]}``,
ids as strings as in the ScanRefer annotation files, the box as its 8 corners in metres in the
scene's (axis-aligned ScanNet) frame. ScanRefer's own ``predict.py`` also writes
``unique_multiple`` (0 unique, 1 multiple) and ``others`` (1 when the target is of class
"others"); they are written here when known. Corners follow this project's order (see
``geometry.boxes``); ScanRefer's evaluator reduces the corners to their axis-aligned extent, so
the order does not change its result.

Scan2Cap (dense captioning on ScanRefer) takes one JSON object per file: scene id -> list of
``{"caption": "sos the white cup on the table eos", "box": [[x, y, z] x 8], "sem_prob": [18 floats],
"obj_prob": [p(not an object), p(object)]}``, captions wrapped in its "sos"/"eos" tokens, ``sem_prob``
over ScanNet's 18 benchmark classes (``SCANNET18``; this project's classes mapped onto them, the rest
"others").
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..geometry.boxes import BOX_DIM, box_corners

__all__ = [
    "SCANNET18", "ScanReferPrediction", "dense_caption_record", "read_scanrefer_predictions", "scanrefer_record",
    "write_dense_captions", "write_scanrefer_predictions",
]

SCANNET18 = ("cabinet", "bed", "chair", "sofa", "table", "door", "window", "bookshelf", "picture", "counter", "desk",
             "curtain", "refrigerator", "shower curtain", "toilet", "sink", "bathtub", "others")
"""Scan2Cap's semantic classes (ScanNet's 18 benchmark classes, in its order)."""
_TO_SCANNET18 = {
    "cabinet": "cabinet", "cupboard": "cabinet", "bed": "bed", "chair": "chair", "sofa": "sofa", "couch": "sofa",
    "table": "table", "diningtable": "table", "dining table": "table", "door": "door", "window": "window",
    "shelf": "bookshelf", "bookshelf": "bookshelf", "bookcase": "bookshelf", "picture": "picture",
    "counter": "counter", "desk": "desk", "curtain": "curtain", "refrigerator": "refrigerator", "toilet": "toilet",
    "sink": "sink", "bathtub": "bathtub",
}


@dataclass(frozen=True)
class ScanReferPrediction:
    """One predicted box for one referring annotation.

    Attributes:
        scene_id: ScanNet scene id, e.g. "scene0011_00".
        object_id: the annotated object's id (ScanRefer "object_id").
        ann_id: the annotation's id among that object's descriptions (ScanRefer "ann_id").
        box: (9,) predicted 9-DoF box, metres/radians, in the scene's frame.
        unique_multiple: 0 when the target is unique of its class in the scene, 1 otherwise; None if unknown.
        others: 1 when the target is of ScanRefer's "others" class, 0 if not; None if unknown.
    """

    scene_id: str
    object_id: str | int
    ann_id: str | int
    box: np.ndarray
    unique_multiple: int | None = None
    others: int | None = None

    def __post_init__(self) -> None:
        box = np.asarray(self.box, dtype=np.float64).reshape(BOX_DIM)
        if not np.isfinite(box).all():
            raise InputError(f"ScanRefer prediction {self.scene_id}/{self.object_id}/{self.ann_id}: non-finite box")
        object.__setattr__(self, "box", box)


def scanrefer_record(pred: ScanReferPrediction) -> dict[str, Any]:
    """The JSON record of one prediction (``bbox``: 8 corners x [x, y, z], metres)."""
    record: dict[str, Any] = {
        "scene_id": str(pred.scene_id), "object_id": str(pred.object_id), "ann_id": str(pred.ann_id),
        "bbox": [[float(v) for v in corner] for corner in box_corners(pred.box)[0]],
    }
    if pred.unique_multiple is not None:
        record["unique_multiple"] = int(pred.unique_multiple)
    if pred.others is not None:
        record["others"] = int(pred.others)
    return record


def write_scanrefer_predictions(path: str | os.PathLike[str], predictions: Iterable[ScanReferPrediction]) -> int:
    """Write predictions as a ScanRefer ``pred.json``; returns the number of records.

    Raises:
        InputError: if two predictions share (scene_id, object_id, ann_id).
    """
    records, seen = [], set()
    for pred in predictions:
        record = scanrefer_record(pred)
        key = (record["scene_id"], record["object_id"], record["ann_id"])
        if key in seen:
            raise InputError(f"duplicate ScanRefer prediction for scene {key[0]}, object {key[1]}, ann {key[2]}")
        seen.add(key)
        records.append(record)
    Path(path).write_text(json.dumps(records))
    return len(records)


def read_scanrefer_predictions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a ``pred.json`` back, checking its form (for tests and for checking a file before submitting).

    Raises:
        InputError: if the file is not a list of records with string ids and 8x3 finite corners.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read ScanRefer predictions {path}: {exc}") from exc
    if not isinstance(data, list):
        raise InputError(f"{path}: a ScanRefer pred.json is a JSON list")
    for i, rec in enumerate(data):
        ids = ("scene_id", "object_id", "ann_id")
        if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in ids):
            raise InputError(f"{path}: record {i} lacks string scene_id/object_id/ann_id")
        bbox = np.asarray(rec.get("bbox"), dtype=np.float64) if isinstance(rec.get("bbox"), list) else None
        if bbox is None or bbox.shape != (8, 3) or not np.isfinite(bbox).all():
            raise InputError(f"{path}: record {i} bbox is not 8x3 finite corners")
    return data


def dense_caption_record(caption: str, obj: Any) -> dict[str, Any]:
    """One Scan2Cap prediction: a caption and a scene object (``memory.SceneObject``).

    ``sem_prob`` spreads the object's class evidence over ``SCANNET18``; ``obj_prob`` is
    (1 - p, p) with p = the object's existence confidence times its detection score.
    """
    sem = np.zeros(len(SCANNET18))
    for name, evidence in obj.class_scores:
        sem[SCANNET18.index(_TO_SCANNET18.get(str(name).lower(), "others"))] += max(float(evidence), 0.0)
    sem = sem / sem.sum() if sem.sum() > 0 else np.eye(len(SCANNET18))[-1]
    p = float(np.clip(obj.confidence * obj.score, 0.0, 1.0))
    words = " ".join(str(caption).lower().split())
    return {"caption": f"sos {words} eos", "box": [[float(v) for v in corner] for corner in box_corners(obj.box)[0]],
            "sem_prob": [float(v) for v in sem], "obj_prob": [1.0 - p, p]}


def write_dense_captions(path: str | os.PathLike[str], scene_id: str, captions: Iterable[tuple[str, Any]]) -> int:
    """Write (caption, scene object) pairs of one scene as a Scan2Cap submission file; returns their number."""
    records = [dense_caption_record(text, obj) for text, obj in captions]
    Path(path).write_text(json.dumps({str(scene_id): records}))
    return len(records)
