"""A noun phrase's attributes over its candidates: sizes and heights, observed colours, materials and
viewer-centred words, each a score per candidate and whether it holds (answers are all or nothing)."""

from __future__ import annotations

import numpy as np

from ..memory.object_colour import colour_similarity
from ..memory.scene_object import MemorySnapshot
from .colour_words import colour_fits
from .materials import material_holds
from .phrases import Attribute, NounPhrase
from .relations import SceneGeometry
from .viewpoint import Viewpoint, viewer_scores

__all__ = ["COLOUR_NEAR_SCORE", "VIEWER_HOLDS", "attribute_scores", "viewer_distances"]

COLOUR_NEAR_SCORE = 0.6  # a colour word that fits within measurement error, not the measured name
# A viewer-centred word holds for a candidate scoring at least this: "behind me" for nothing in front.
VIEWER_HOLDS = 0.2


def _size_scores(attr: Attribute, g: SceneGeometry, t: np.ndarray) -> np.ndarray | None:
    """(T,) score of a size/height attribute over the candidates, or None for other kinds."""
    if attr.kind == "volume":
        v = np.maximum(g.volume[t], 1e-9)
        ratio = v / v.max() if attr.sign > 0 else v.min() / v
    elif attr.kind == "height":
        h = np.maximum(g.top[t] - g.bottom[t], 1e-6)
        ratio = h / h.max() if attr.sign > 0 else h.min() / h
    elif attr.kind == "z":
        z = g.centers[t, 2]
        ratio = np.exp(-(z.max() - z) / 0.2) if attr.sign > 0 else np.exp(-(z - z.min()) / 0.2)
    else:
        return None
    return ratio ** (2.0 if abs(attr.sign) >= 2 else 0.5)  # superlatives pick one; adjectives only lean


def viewer_distances(g: SceneGeometry, idx: np.ndarray, viewpoint: Viewpoint) -> np.ndarray:
    """(T,) horizontal distances from the viewpoint to the candidates (``Viewpoint.distances``)."""
    return viewpoint.distances(g.centers[idx], g.half_local[idx], g.axes[idx])


def attribute_scores(noun: NounPhrase, idx: np.ndarray, snapshot: MemorySnapshot, g: SceneGeometry,
                     viewpoint: Viewpoint | None, coloured: bool,
                     notes: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Over a noun phrase's candidates ``idx``: (score: product of its attribute scores, ordinals excluded;
    holds: whether every checkable attribute holds; why an attribute cannot be checked at all). Notes for the
    answer (a material taken as usual, not checked) are added to ``notes``."""
    out = np.ones(len(idx))
    holds = np.ones(len(idx), dtype=bool)
    cannot: list[str] = []
    for attr in noun.attributes:
        if attr.rank:
            continue  # an ordinal picks from the ranking, it does not score
        if attr.kind == "colour":
            if not coloured:
                cannot.append(f"colour '{attr.word}' cannot be checked: the map observes no colours")
                continue
            objs = [snapshot.objects[i] for i in idx]
            fits = np.array([colour_fits(attr.colour, o.colour_lab, o.class_name) for o in objs], dtype=bool)
            exact = np.array([colour_similarity(attr.colour, o.colour_name) >= 1.0 for o in objs])
            out *= np.where(exact, 1.0, np.where(fits, COLOUR_NEAR_SCORE, 0.0))
            holds &= fits
        elif attr.kind == "material":
            verdicts = [material_holds(attr.word, snapshot.class_names[i], snapshot.objects[i].colour_lab,
                                       snapshot.boxes[i], noun.text) for i in idx]
            if verdicts and all(v is None for v, _ in verdicts):
                cannot.append(f"'{attr.word}' cannot be checked: {verdicts[0][1]}")
            holds &= np.array([v is True for v, _ in verdicts], dtype=bool)
            notes += [why for v, why in verdicts if v is True and why][:1]
        elif attr.viewer:
            assert viewpoint is not None  # refused before
            s = viewer_scores(attr.kind, attr.sign, viewpoint, g.centers[idx], viewer_distances(g, idx, viewpoint))
            out *= s
            holds &= s >= VIEWER_HOLDS
        else:
            s = _size_scores(attr, g, idx)
            if s is not None:
                out *= s
    return out, holds, cannot
