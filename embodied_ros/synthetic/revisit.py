"""A room visited twice, changed in between: some objects moved, some gone, some new, with the truth of each.

``revisit(scene)`` keeps the first scene as the first pass and draws a second state of the same room
from the scene's seed: movable things (cups, bottles, books, boxes, chairs, bins, plants, lamps with
nothing resting on them) are moved to another support or another spot of the floor (at least
``min_move`` from where they stood, never overlapping it), others are taken away, and new things are
put on supports or the floor. Structure (walls, doors, windows, tables, cabinets, shelves, sofas, beds)
stays. The things changed are of different classes, and a new thing of a class no changed thing has, so
the truth says which halves are one move and which are not (a removed cup and a new cup of the same
colour would be a move to anyone). The robot's second pass follows a new path through the changed room,
``gap_s`` after the first pass ended; frames of both passes are numbered and stamped on, one recording.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import FrameError
from ..frame import Frame
from ..geometry.iou import box_iou_3d
from ..sources.base import FrameSource
from .layout import LayoutConfig, place_more
from .objects import ObjectTemplate
from .scene import SyntheticFrame, SyntheticScene
from .scene_objects import SUPPORT_FLOOR, SyntheticObject
from .trajectory import make_trajectory

_STREAM_REVISIT = 7  # the scene seed's stream for its second state (scene.py uses 0..4)
MOVABLE = ("cup", "bottle", "book", "box", "chair", "bin", "plant", "lamp")
_SUPPORTS = ("table", "cabinet", "shelf")
_NEW_IDS = 100_000  # instance ids of new things until renumbered (the placer numbers by list length)


@dataclass(frozen=True)
class RevisitConfig:
    """How the room changes between the passes."""

    moved: tuple[int, int] = (1, 2)  # objects moved, inclusive range
    removed: tuple[int, int] = (1, 2)  # objects taken away
    added: tuple[int, int] = (1, 2)  # new objects
    min_move: float = 0.5  # metres between a moved object's old and new centre
    gap_s: float = 60.0  # between the end of the first pass and the start of the second
    movable: tuple[str, ...] = MOVABLE


@dataclass(frozen=True, eq=False)
class TrueChange:
    """One change of the room's truth: its kind ("moved", "removed", "new"), class and boxes."""

    kind: str
    class_name: str
    old_box: np.ndarray | None
    new_box: np.ndarray | None


@dataclass(eq=False)
class Revisit:
    """The two passes of a changed room and what changed.

    Attributes:
        first, second: the room before and after, each with its own camera path.
        changes: the truth of each change.
        gap_ns: time between the end of the first pass and the start of the second.
    """

    first: SyntheticScene
    second: SyntheticScene
    changes: list[TrueChange] = field(default_factory=list)
    gap_ns: int = 0

    def __len__(self) -> int:
        return len(self.first) + len(self.second)

    def pass_of(self, index: int) -> tuple[SyntheticScene, int, int]:
        """(scene, frame index in it, stamp offset in ns) of recording frame ``index``."""
        if index < len(self.first):
            return self.first, index, 0
        period = self.first.config.frame_period_ns
        return self.second, index - len(self.first), len(self.first) * period + self.gap_ns

    def render(self, index: int) -> SyntheticFrame:
        """Frame ``index`` of the recording and its truth (no visibility counts: ``frame.extras`` carries
        the instance image and the class of each instance, for the ground-truth detector)."""
        if not 0 <= index < len(self):
            raise IndexError(f"frame {index} outside 0..{len(self) - 1}")
        scene, k, offset = self.pass_of(index)
        truth = scene.render(k, visibility=False)
        f = truth.frame
        extras = {"instance": truth.instance, "classes": tuple(o.class_name for o in scene.objects),
                  "boxes": tuple(o.box for o in scene.objects)}
        frame = replace(f, stamp_ns=f.stamp_ns + offset, index=index,
                        source_name=f"synthetic revisit:seed={scene.seed}", extras=extras)
        return replace(truth, frame=frame)


class RevisitSource(FrameSource):
    """The two passes as one recording (``embodied-ros``'s sources interface)."""

    gravity_aligned = True
    gravity_note = "the generator's world is z-up"
    layout = "synthetic scene visited twice"
    poses_need_check = False

    def __init__(self, visit: Revisit) -> None:
        self.visit = visit
        self.name = f"synthetic revisit:seed={visit.first.seed}"

    def __len__(self) -> int:
        return len(self.visit)

    def read(self, index: int) -> Frame:
        try:
            return self.visit.render(index).frame
        except IndexError as err:
            raise FrameError(str(err)) from None


def revisit(scene: SyntheticScene, config: RevisitConfig = RevisitConfig()) -> Revisit:
    """The scene as the first pass and a changed room, drawn from the scene's seed, as the second."""
    rng = np.random.default_rng([scene.seed, _STREAM_REVISIT])
    objects = list(scene.objects)
    carries = {o.support for o in objects}
    candidates = [o for o in objects if o.class_name in config.movable and o.instance_id not in carries]
    rng.shuffle(candidates)
    n_moved, n_removed = (int(rng.integers(lo, hi + 1)) for lo, hi in (config.moved, config.removed))
    picked: list[SyntheticObject] = []
    for o in candidates:  # one thing of a class at most: which halves are one move is then the truth's to say
        if len(picked) < n_moved + n_removed and all(p.class_name != o.class_name for p in picked):
            picked.append(o)
    moving, going = picked[:n_moved], picked[n_moved:]
    changes = [TrueChange("removed", o.class_name, o.box.copy(), None) for o in going]
    kept = [o for o in objects if o not in going]
    placer = place_more(rng, scene.room, [o for o in kept if o not in moving], LayoutConfig())
    supports = [o for o in kept if o.class_name in _SUPPORTS and o.surfaces]
    for old in moving:
        new = _put(placer, old.class_name, supports, rng, old, config.min_move)
        if new is None:  # nowhere else to go: it stays (and is no change)
            placer.objects.append(old)
            continue
        placer.objects[-1] = replace(new, color=old.color, instance_id=old.instance_id)  # the same thing, moved
        changes.append(TrueChange("moved", old.class_name, old.box.copy(), new.box.copy()))
    taken = {c.class_name for c in changes} | {o.class_name for o in going}
    fresh = [c for c in config.movable if c not in taken]
    for _ in range(int(rng.integers(config.added[0], config.added[1] + 1)) if fresh else 0):
        name = fresh[int(rng.integers(len(fresh)))]
        new = _put(placer, name, supports, rng, None, 0.0)
        if new is not None:
            placer.objects[-1] = new = replace(new, instance_id=_NEW_IDS + len(changes))  # clear of every id
            changes.append(TrueChange("new", name, None, new.box.copy()))
    after = _renumbered(placer.objects)
    poses = make_trajectory(scene.room, after, rng, scene.config.trajectory)
    second = SyntheticScene(scene.seed, scene.config, scene.room, after, poses)
    return Revisit(scene, second, changes, int(config.gap_s * 1e9))


def _put(placer, name: str, supports: list[SyntheticObject], rng: np.random.Generator,
         old: SyntheticObject | None, min_move: float) -> SyntheticObject | None:
    """Place ``name`` (the template of ``old`` when given) on a support or the floor, away from ``old``."""
    tmpl = None if old is None else ObjectTemplate(tuple(float(v) for v in old.box[3:6]), old.parts, old.surfaces)
    on_floor = name in ("chair", "bin", "box", "plant", "lamp") if old is None else old.support == SUPPORT_FLOOR
    for _ in range(12):
        if on_floor or not supports:
            new = placer.free(name, tmpl)
        else:
            angles = None if old is None else (float(rng.uniform(-np.pi, np.pi)), float(old.box[7]), float(old.box[8]))
            new = placer.on_surface(name, supports[int(rng.integers(len(supports)))], tmpl=tmpl, angles=angles)
        if new is None:
            continue
        far = old is None or (np.linalg.norm(new.box[:3] - old.box[:3]) >= min_move
                              and box_iou_3d(new.box[None], old.box[None])[0, 0] == 0.0)
        if far:
            return new
        placer.objects.pop()
    return None


def _renumbered(objects: list[SyntheticObject]) -> list[SyntheticObject]:
    """Instance ids 0..N-1 in list order, supports following their objects."""
    ids: dict[int, int] = {}
    for k, o in enumerate(objects):  # the room's own objects come first and keep their supports
        ids.setdefault(o.instance_id, k)
    return [replace(o, instance_id=k, support=ids.get(o.support, o.support) if o.support >= 0 else o.support)
            for k, o in enumerate(objects)]
