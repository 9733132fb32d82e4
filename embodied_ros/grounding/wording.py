"""How answers are worded: objects' names, notes, and why no object can answer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..memory.scene_object import MemorySnapshot
from .unnamed_shapes import UNNAMED_CLASS

__all__ = ["label_note", "no_target", "note_suffix", "object_name"]


def object_name(snapshot: MemorySnapshot, i: int) -> str:
    """'cup #7', or 'unnamed object #95' for a thing the map holds without knowing what it is."""
    name = snapshot.class_names[i]
    if name == UNNAMED_CLASS:
        return f"unnamed object #{int(snapshot.ids[i])}"
    return f"{name} #{int(snapshot.ids[i])}"


def note_suffix(notes: list[str]) -> str:
    return f" (note: {'; '.join(notes)})" if notes else ""


def label_note(noun: str, by_label: dict[str, float]) -> str:
    """Say how a word was read when it was not an exact or synonym match."""
    soft = {k: v for k, v in by_label.items() if v < 1.0}
    if not soft or len(by_label) > 3:
        return ""
    return " (read '" + noun + "' as " + ", ".join(f"{k} {v:.2f}" for k, v in soft.items()) + ")"


def no_target(noun: str, conf: np.ndarray, snapshot: MemorySnapshot, prior: np.ndarray, confident: np.ndarray,
              vocabulary: tuple[str, ...], matcher: Any, config: Any, label_holds: float) -> str:
    """Why no object can answer ``noun``: none of the class, none confident, or a class the detector does not
    know (``conf``: (N,) each object's label confidence for the noun; ``prior``, ``confident``: the grounder's
    per-object prior and confidence test; ``config``: its ``GrounderConfig``)."""
    named = np.flatnonzero(conf >= label_holds)
    weak = np.flatnonzero((conf > 0) & (conf < label_holds) & confident)
    if len(named) == 0 and len(weak):
        k = int(weak[np.argmax(conf[weak])])
        return (f"no {noun} in the map: {object_name(snapshot, k)} was seen as one at times, too rarely to say "
                f"it is one ({conf[k]:.2f}; an answer needs {label_holds:.2f})")
    if len(named):
        candidates = named[prior[named] > 0]
        if len(candidates) == 0:
            return f"no {noun} seen often enough yet (at least {config.min_observations} times)"
        best = int(candidates[np.argmax([snapshot.objects[i].confidence for i in candidates])])
        return (f"no confident {noun}: the likeliest, {object_name(snapshot, best)}, exists with confidence "
                f"{snapshot.objects[best].confidence:.2f} (an answer needs {config.min_confidence:.2f})")
    if vocabulary:
        known = matcher.match(noun, vocabulary)
        if known:
            label = max(known, key=lambda k: (known[k], len(k)))  # "teddy bear" before "bear"
            return f"no {noun} in the scene memory: the detector can see {label} but has found none here"
        shown = ", ".join(vocabulary[:12]) + (", ..." if len(vocabulary) > 12 else "")
        return f"the detector does not know '{noun}': it detects {len(vocabulary)} classes ({shown})"
    return f"unknown target '{noun}': no object in the memory is of a class with that name"
