"""People and animals: movers, published as the camera sees them now and never part of the static map.

A map that keeps a "person" as a landmark keeps a ghost after they leave, and a coat on a chair that a
COCO detector calls "person" becomes a permanent false object. So detections of a mover class
(classes.MOVER_CLASSES) never reach the object map; they are tracked apart, for a short while, as in
Hydra's and Kimera's dynamic scene graphs (agents in their own layer):

* a detection is a mover seen before when their centres lie within ``mover_reach`` metres, plus
  ``mover_speed`` m/s times the time between them (the nearest of its class); otherwise a new one;
* a mover is one, and published, when the evidence a robot has says so: it moved (its centre went
  ``mover_min_move`` metres from where it was first seen: a static thing's lifted box shifts by less
  between views), or a person detection has a person's shape (its points span ``person_min_height``);
  a jacket on boxes is neither, whatever the detector calls it;
* it is published until ``mover_lifetime_s`` after its latest detection (``current``), with the box
  of that detection: where it is now, not a fusion of where it was; forgotten after ``mover_forget_s``.

Ids come from the memory's counter, so a mover never shares an id with a map object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..classes import PERSON_CLASSES
from ..detections import class_key
from .config import MemoryConfig
from .existence import Place, place_of
from .scene_object import SceneObject


@dataclass
class Mover:
    """One person or animal as last seen (mutable; the memory's lock guards it).

    Attributes:
        id: stable id (the memory's counter).
        class_name: the class of its latest detection.
        box: (9,) its latest detection's world box.
        score: its latest detection's score.
        start: (2,) where it was first seen (x, y of the box centre), metres.
        moved: its centre went ``mover_min_move`` from ``start`` at some detection.
        person_shaped: a person detection of it spanned ``person_min_height``.
        places: the places (existence.place_of) it was detected from.
    """

    id: int
    class_name: str
    box: np.ndarray
    score: float
    start: np.ndarray
    first_frame: int
    first_ns: int
    last_frame: int
    last_ns: int
    n_observations: int = 1
    moved: bool = False
    person_shaped: bool = False
    places: set[Place] = field(default_factory=set)

    @property
    def is_mover(self) -> bool:
        """Whether the evidence says it is a person or an animal (it moved, or has a person's shape)."""
        return self.moved or self.person_shaped

    def to_object(self) -> SceneObject:
        return SceneObject(self.id, self.class_name, self.score, self.box, ((self.class_name, self.score),),
                           self.n_observations, self.first_frame, self.last_frame, self.first_ns, self.last_ns,
                           confidence=self.score, n_looks=max(len(self.places), 1))


class Movers:
    """The movers seen lately (not thread-safe: the scene memory serialises calls).

    Args:
        config: the memory's settings (``mover_*``, ``person_min_height``, ``existence_place``).
        new_id: hands out the next id of the memory's counter.
    """

    def __init__(self, config: MemoryConfig, new_id: Callable[[], int]) -> None:
        self.config = config
        self._new_id = new_id
        self._movers: dict[int, Mover] = {}

    def __len__(self) -> int:
        return len(self._movers)

    def observe(self, boxes: np.ndarray, names: list[str], scores: np.ndarray, heights: np.ndarray,
                frame_index: int, stamp_ns: int, viewpoint: np.ndarray | None) -> None:
        """Take one frame's mover detections, best score first.

        Args:
            boxes: (N, 9) world boxes.
            names: their N classes.
            scores: (N,) scores.
            heights: (N,) height (m) their points span (the box's where they carry none).
            frame_index, stamp_ns: the frame's.
            viewpoint: (3,) the camera's position, or None.
        """
        cfg = self.config
        self._forget(stamp_ns)
        place = place_of(viewpoint, cfg.existence_place)
        taken: set[int] = set()
        for k in np.argsort(-np.asarray(scores), kind="stable"):
            box, name = np.asarray(boxes[k], dtype=np.float64), names[k]
            mover = self._nearest(box, name, stamp_ns, taken)
            if mover is None:
                mover = Mover(self._new_id(), name, box, float(scores[k]), box[:2].copy(), frame_index, stamp_ns,
                              frame_index, stamp_ns)
                self._movers[mover.id] = mover
            else:
                mover.box, mover.class_name, mover.score = box, name, float(scores[k])
                mover.last_frame, mover.last_ns = frame_index, stamp_ns
                mover.n_observations += 1
                mover.moved |= bool(np.linalg.norm(box[:2] - mover.start) >= cfg.mover_min_move)
            mover.person_shaped |= class_key(name) in PERSON_CLASSES and float(heights[k]) >= cfg.person_min_height
            if place is not None:
                mover.places.add(place)
            taken.add(mover.id)

    def _nearest(self, box: np.ndarray, name: str, stamp_ns: int, taken: set[int]) -> Mover | None:
        """The mover of this class (not yet taken this frame) nearest the box, within reach of it."""
        cfg = self.config
        best, best_d = None, np.inf
        for mover in self._movers.values():
            if mover.id in taken or class_key(mover.class_name) != class_key(name):
                continue
            d = float(np.linalg.norm(box[:2] - mover.box[:2]))
            reach = cfg.mover_reach + cfg.mover_speed * max(stamp_ns - mover.last_ns, 0) * 1e-9
            if d <= reach and d < best_d:
                best, best_d = mover, d
        return best

    def _forget(self, stamp_ns: int) -> None:
        old = [i for i, m in self._movers.items() if stamp_ns - m.last_ns > self.config.mover_forget_s * 1e9]
        for i in old:
            del self._movers[i]

    def current(self, stamp_ns: int) -> list[SceneObject]:
        """The movers the evidence shows to be people or animals, detected within ``mover_lifetime_s`` of
        ``stamp_ns``, by id."""
        life = self.config.mover_lifetime_s * 1e9
        return [m.to_object() for _, m in sorted(self._movers.items())
                if m.is_mover and 0 <= stamp_ns - m.last_ns <= life]

    def reset(self) -> None:
        self._movers.clear()
