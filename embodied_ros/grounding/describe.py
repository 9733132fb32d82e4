"""Referring expressions: for each object, a short phrase that picks it out in the current map.

The generator speaks the grounder's language, so its phrases can be checked by grounding them:
for an object i of class noun, with the other confident objects the same noun names as
distractors, candidates are tried from the shortest ("the cup") through colour ("the white
cup"), support and proximity ("the cup on the table", "the cup next to the keyboard"), sizes and
heights ("the largest table"), two relations ("the cup on the table next to the keyboard"),
"between", and, with a viewpoint, viewer-centred words ("the leftmost chair"). A candidate is
proposed only when its relations hold for i and not, or clearly less, for every distractor
(scored with ``relations.py``, as the grounder scores them); with ``verify`` (the default) it is
accepted only when the grounder, given the phrase, answers i, clearly ahead of the runner-up.
Grounding is all-or-nothing (every relation and colour of the phrase must hold for its answer), so a
checked description is also true. An object with no accepted candidate keeps the first candidate that
is still true of it (the grounder counts it among the objects that fit), else the bare class ("the
chair"), marked not unique.

Colours are said as people say them (``colour_words.spoken_colour``): wooden furniture is brown, never the
grey of a shadowed measurement; an object whose colour was never seen gets no colour word.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..memory.scene_object import MemorySnapshot
from .colour_words import object_colours, spoken_colour
from .engine import Grounder
from .phrases import Relation
from .relations import SceneGeometry, Supports, between_scores, pair_scores, satisfied_threshold, supports
from .viewpoint import Viewpoint, viewer_scores
from .vocabulary import canonical_label

__all__ = ["Description", "check_description", "describe_objects"]

MARGIN = 1.25  # the described object's grounding score must beat the runner-up's by this factor
CLEAR = 1.5  # a relation tells i apart from a distractor when it scores this many times higher for i
MAX_CANDIDATES = 24  # phrases tried per object (each is one grounding call when verifying)
NEAR_ANCHORS = 8  # anchors considered per object: the nearest ones
# Relations used, in the order tried, and how they are said.
_WORDS = {Relation.ON: "on", Relation.NEXT_TO: "next to", Relation.NEAR: "near", Relation.UNDER: "under",
          Relation.ABOVE: "above", Relation.BELOW: "below"}


@dataclass(frozen=True)
class Description:
    """A referring expression of one object.

    Attributes:
        object_id: the object's id.
        text: the phrase, e.g. "the white cup on the table".
        unique: whether grounding ``text`` gives back this object, clearly ahead of any other (with
            ``verify=False``: whether the generator expected so).
        score: the object's grounding score for ``text`` (0 when not verified).
        true: whether everything ``text`` says holds for the object: grounding it counts the object
            among those that fit (with ``verify=False``: not checked, True).
    """

    object_id: int
    text: str
    unique: bool
    score: float = 0.0
    true: bool = True


def _noun(class_name: str) -> str:
    """The word a description uses for a class ('diningtable' -> 'table', 'tvmonitor' -> 'monitor')."""
    return canonical_label(class_name)


def _clear(own: float, others: np.ndarray, threshold: float) -> bool:
    """Whether a score holds for the object (own) and not, or clearly less, for each distractor."""
    return own >= threshold and bool(np.all((others < threshold) | (own >= CLEAR * others)))


def _candidates(i: int, distractors: np.ndarray, near: np.ndarray, anchors: np.ndarray, snapshot: MemorySnapshot,
                g: SceneGeometry, viewpoint: Viewpoint | None, supporters: Supports) -> list[str]:
    """Phrases that should pick out object i (index) among its distractors, shortest first.

    ``near``: the anchors near i that phrases may name; ``anchors``: every possible anchor (a
    distractor may be next to another cup than i's, far from i, and the grounder will see it)."""
    noun = _noun(snapshot.class_names[i])
    group = np.concatenate([[i], distractors]).astype(np.int64)
    if len(distractors) == 0:
        return [f"the {noun}"]
    out: list[str] = []
    said = [spoken_colour(snapshot.class_names[k], snapshot.objects[k].colour_lab, snapshot.objects[k].colour_name)
            for k in range(len(snapshot))]
    colour = said[i]
    if colour is not None and all(colour not in object_colours(snapshot.class_names[d], snapshot.objects[d].colour_lab)
                                  and snapshot.objects[d].colour_lab is not None for d in distractors):
        out.append(f"the {colour} {noun}")
    # Single relations to each anchor class (or to those of its objects that have one colour: "next to
    # the red cup"): the best anchor of that kind for i, against the distractors' best.
    singles: list[tuple[float, str]] = []
    names = np.array([_noun(n) for n in snapshot.class_names])
    colours = np.array([str(said[a]) for a in anchors])
    close = np.isin(anchors, near)
    kinds = [(name, "") for name in dict.fromkeys(names[anchors[close]])]
    kinds += [(name, c) for name, c in dict.fromkeys(zip(names[anchors[close]], colours[close], strict=True))
              if c != "None" and np.count_nonzero(names[anchors] == name) > 1]
    for relation, word in _WORDS.items():
        s = pair_scores(relation, g, group, anchors, supporters)  # (1 + D, A), as the grounder scores them
        for name, c in kinds:
            cols = (names[anchors] == name) & ((colours == c) if c else True)
            best = s[:, cols].max(axis=1)
            if name != noun and _clear(best[0], best[1:], satisfied_threshold(relation)):
                lead = best[0] - (best[1:].max() if len(best) > 1 else 0.0)
                singles.append((lead - 0.01 * bool(c), f"{word} the {c + ' ' if c else ''}{name}"))
    singles.sort(key=lambda x: -x[0])
    out += [f"the {noun} {text}" for _, text in singles]
    for kind, sign, word in (("volume", 1, "largest"), ("volume", -1, "smallest"), ("z", 1, "highest"),
                             ("z", -1, "lowest")):
        if kind == "volume":  # clearly the largest (smallest): 1.3 times the next one
            v = g.volume[group]
            clear = v[0] >= 1.3 * v[1:].max() if sign > 0 else 1.3 * v[0] <= v[1:].min()
        else:  # clearly the highest (lowest): 15 cm above (below) the next one
            z = g.centers[group, 2]
            clear = z[0] - z[1:].max() >= 0.15 if sign > 0 else z[1:].min() - z[0] >= 0.15
        if clear:
            out.append(f"the {word} {noun}")
    if colour is not None and singles:
        out += [f"the {colour} {noun} {text}" for _, text in singles[:3]]
    # Two relations: a support with a proximity, or the two best.
    for (_, a), (_, b) in ((x, y) for k, x in enumerate(singles[:4]) for y in singles[k + 1:4]):
        out.append(f"the {noun} {a} {b}")
    # Between two anchors of other classes.
    if len(near) >= 2:
        s3 = between_scores(g, group, anchors, anchors)  # (1 + D, A, A)
        own = np.where(close[:, None] & close[None, :], s3[0], 0.0)
        for ja, jb in zip(*np.unravel_index(np.argsort(-own, axis=None)[:6], own.shape), strict=True):
            na, nb = names[anchors[ja]], names[anchors[jb]]
            if na == noun or nb == noun or own[ja, jb] < 0.5:
                continue
            others = s3[1:][:, (names[anchors] == na)][:, :, names[anchors] == nb].reshape(len(distractors), -1)
            if _clear(own[ja, jb], others.max(axis=1, initial=0.0), 0.5):
                out.append(f"the {noun} between the {na} and the {nb}")
    if viewpoint is not None:
        d = viewpoint.distances(g.centers[group], g.half_local[group], g.axes[group])
        for kind, sign, word in (("lateral", -2, "leftmost"), ("lateral", 2, "rightmost"), ("distance", -2, "nearest"),
                                 ("distance", 2, "farthest")):
            s = viewer_scores(kind, sign, viewpoint, g.centers[group], d)
            if s[0] >= 0.99 and np.all(s[1:] < 0.5):
                out.append(f"the {word} {noun}")
    out.append(f"the {noun}")  # nothing else: the bare class, not unique
    return list(dict.fromkeys(out))[:MAX_CANDIDATES]


def describe_objects(grounder: Grounder, snapshot: MemorySnapshot, ids: list[int] | None = None, *,
                     viewpoint: Viewpoint | None = None, vocabulary: tuple[str, ...] = (),
                     min_observations: int = 2, verify: bool = True) -> list[Description]:
    """Referring expressions of objects of a memory snapshot.

    Args:
        grounder: the grounding engine (its relations and confidence rule; it checks each phrase).
        snapshot: the memory.
        ids: the objects to describe; None: every confident object seen ``min_observations`` times.
        viewpoint: where "leftmost"/"nearest" are meant from; None: no viewer-centred words.
        vocabulary: the detector's classes (passed to the grounder).
        min_observations: objects seen fewer times are neither described nor distractors/anchors.
        verify: accept a phrase only when grounding it returns the object; False: trust the
            generator (its first proposal), for measuring how often the two agree.

    Returns:
        One description per described object, in the order of ``ids`` (ids not in the memory are skipped).
    """
    if len(snapshot) == 0:
        return []
    g = SceneGeometry.from_boxes(snapshot.boxes, snapshot.class_names)
    usable = np.array([o.confidence >= grounder.config.min_confidence and o.n_observations >= min_observations
                       for o in snapshot.objects], dtype=bool)
    index = {int(obj_id): k for k, obj_id in enumerate(snapshot.ids)}
    wanted = [index[int(i)] for i in ids if int(i) in index] if ids is not None else list(np.flatnonzero(usable))
    nouns = np.array([_noun(n) for n in snapshot.class_names])
    held = supports(g, np.flatnonzero(usable))  # what each object rests on, as the grounder reads "on"
    out = []
    for i in wanted:
        others = np.flatnonzero(usable & (np.arange(len(snapshot)) != i))
        distractors = others[nouns[others] == nouns[i]]
        anchors = others[nouns[others] != nouns[i]]
        near = anchors[np.argsort(np.linalg.norm(g.centers[anchors, :2] - g.centers[i, :2], axis=1))[:NEAR_ANCHORS]]
        candidates = _candidates(i, distractors, near, anchors, snapshot, g, viewpoint, held)
        obj_id = int(snapshot.ids[i])
        if not verify:
            out.append(Description(obj_id, candidates[0], len(distractors) == 0 or candidates[0] != candidates[-1]))
            continue
        fallback: Description | None = None
        for text in candidates:
            checked = check_description(grounder, snapshot, obj_id, text, viewpoint=viewpoint, vocabulary=vocabulary)
            if checked.unique:
                out.append(checked)
                break
            if fallback is None and checked.true:  # true of it, though not only of it
                fallback = checked
        else:
            out.append(fallback or Description(obj_id, f"the {_noun(snapshot.class_names[i])}", False, 0.0,
                                               _holds(grounder, snapshot, i, viewpoint, vocabulary)))
    return out


def check_description(grounder: Grounder, snapshot: MemorySnapshot, object_id: int, text: str, *,
                      viewpoint: Viewpoint | None = None, vocabulary: tuple[str, ...] = ()) -> Description:
    """Check a description of an object by grounding it: ``true`` when the grounder counts the object among
    those that fit every word (relations, colours and names hold for it: grounding is all-or-nothing),
    ``unique`` when it is the answer, clearly ahead of the runner-up (``MARGIN``)."""
    r = grounder.ground(text, snapshot, viewpoint=viewpoint, vocabulary=vocabulary)
    if not r.success or r.best is None:
        return Description(object_id, text, False, 0.0, False)
    fitting = {r.best.object.id: r.best.score, **{a.object.id: a.score for a in r.alternatives}}
    runner_up = r.alternatives[0].score if r.alternatives else 0.0
    unique = r.best.object.id == object_id and r.best.score >= MARGIN * runner_up
    return Description(object_id, text, unique, fitting.get(object_id, 0.0), object_id in fitting)


def _holds(grounder: Grounder, snapshot: MemorySnapshot, i: int, viewpoint: Viewpoint | None,
           vocabulary: tuple[str, ...]) -> bool:
    """Whether the bare class ("the chair") is true of object i: the grounder reads it as i's class."""
    r = grounder.ground(f"the {_noun(snapshot.class_names[i])}", snapshot, viewpoint=viewpoint, vocabulary=vocabulary)
    ids = {r.best.object.id, *(a.object.id for a in r.alternatives)} if r.best is not None else set()
    return int(snapshot.ids[i]) in ids or r.success
