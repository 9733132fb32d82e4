"""The team's phrases about redkitchen (tests/data/redkitchen_phrases.json), scored against a run's memory.

Shared by tests/test_grounding_redkitchen.py and benchmarks/eval_grounding_redkitchen.py. Every
expected answer names ground-truth objects of ``redkitchen/ground_truth.json`` (the answer's centre
within ``gt_tolerance_m`` of one of those boxes; ``[]``: nothing in the kitchen fits, so no answer is
right); ``first_set`` marks the phrases written first (see the file's note).
Viewer-centred phrases are seen from the camera of their ``viewpoint_frame`` (the number in the
frame's file name, frame-000460).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

PHRASES = Path(__file__).parent / "data" / "redkitchen_phrases.json"


@dataclass(frozen=True)
class Outcome:
    """How one phrase went."""

    phrase: str
    kind: str  # relation, class, viewer, colour, material, negation, absent
    first_set: bool  # one of the phrases written first
    ok: bool
    success: bool  # whether the engine answered at all
    line: str
    set: str = ""  # the phrase set ("issue31", "issue45": the phrases written for that issue), "" for the earlier ones
    parser: str = ""  # which parser read the phrase ("rules", "spaCy ..."; "" when it was refused before parsing)

    @property
    def verdict(self) -> str:
        """"right" (the right object, or no answer where nothing fits), "false" (an answer with the wrong
        object, or one where nothing fits) or "not found" (no answer where something fits)."""
        if self.ok:
            return "right"
        return "false" if self.success else "not found"


def load_phrases() -> dict[str, Any]:
    return json.loads(PHRASES.read_text())


def ground_truth_boxes(kitchen: Path) -> dict[int, np.ndarray]:
    """Ground-truth id -> 9-DoF box (the file's 7 values, gravity-aligned)."""
    doc = json.loads((kitchen / "ground_truth.json").read_text())
    out = {}
    for o in doc["objects"]:
        box = np.zeros(9)
        box[:7] = o["box"]
        out[int(o["id"])] = box
    return out


def distance_to_box(point: np.ndarray, box: np.ndarray) -> float:
    """Distance from a point to a yaw-only box (0 inside), metres."""
    c, s = np.cos(box[6]), np.sin(box[6])
    rel = np.asarray(point, dtype=np.float64)[:3] - box[:3]
    local = np.array([c * rel[0] + s * rel[1], -s * rel[0] + c * rel[1], rel[2]])
    return float(np.linalg.norm(np.maximum(np.abs(local) - 0.5 * box[3:6], 0.0)))


def viewpoint_poses(kitchen: Path, frames: set[int]) -> dict[int, tuple[np.ndarray, np.ndarray, int]]:
    """frame number (file name) -> (T_world_camera, K, width) as the project's source reads it."""
    from embodied_ros.recordings import open_source

    out = {}
    with open_source(kitchen) as source:
        for frame in source.frames():
            if isinstance(frame, Exception):
                continue
            number = int(Path(frame.source_name).name.split("-")[1].split(".")[0])
            if number in frames:
                out[number] = (frame.T_world_camera, frame.K, frame.width)
    return out


def _parser(result: Any) -> str:
    """The parser that read the phrase, as the result names it ("" for a phrase refused before parsing)."""
    parsed = getattr(result, "parsed", None)
    return str(getattr(parsed, "parser", "")) if parsed is not None and getattr(parsed, "target", None) and \
        not parsed.target.empty else ""


def evaluate(ground: Callable[[str, Any], Any], kitchen: Path,
             make_viewpoint: Callable[[np.ndarray, np.ndarray, int, int], Any] | None) -> list[Outcome]:
    """Ground every phrase and score it.

    Args:
        ground: (phrase, viewpoint or None) -> GroundingResult.
        kitchen: the redkitchen folder (ground truth, poses).
        make_viewpoint: (T_world_camera, K, width, frame number) -> the engine's viewpoint; None when
            the engine has none (older code: viewer-centred phrases are grounded without one).
    """
    doc = load_phrases()
    gt_tol = float(doc["gt_tolerance_m"])
    gt = ground_truth_boxes(kitchen)
    wanted = {int(p["viewpoint_frame"]) for p in doc["phrases"] if p.get("viewpoint_frame") is not None}
    poses = viewpoint_poses(kitchen, wanted) if make_viewpoint is not None and wanted else {}
    out = []
    for item in doc["phrases"]:
        frame = item.get("viewpoint_frame")
        viewpoint = None
        if frame is not None and make_viewpoint is not None:
            T, K, width = poses[int(frame)]
            viewpoint = make_viewpoint(T, K, width, int(frame))
        r = ground(item["phrase"], viewpoint)
        want = [gt[i] for i in item["expected_gt"]]
        ok = (not r.success) if not want else (
            r.success and min(distance_to_box(r.best.object.box[:3], b) for b in want) <= gt_tol)
        kind = item["kind"]
        verdict = "ok   " if ok else "FALSE" if r.success else "NOTFD"
        out.append(Outcome(item["phrase"], kind, bool(item.get("first_set", False)), bool(ok), bool(r.success),
                           f"{verdict} [{kind}] {item['phrase']!r} -> {r.message}", str(item.get("set", "")),
                           _parser(r)))
    return out
