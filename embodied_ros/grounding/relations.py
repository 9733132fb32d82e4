"""The geometry of EmbodiedScan's relations, scored in [0, 1] over all (target, anchor) pairs at once.

World frame z up, metres. Each object's box is summarised once per snapshot
(:class:`SceneGeometry`): centre, axis-aligned extent of its footprint, bottom and top heights,
and its own horizontal axes. Scores are soft (products of exponentials/clips), so that a
ranking exists even when no object satisfies a relation exactly; the engine calls a relation
"not satisfied" below ``SATISFIED``.

Conventions:

* horizontal distance between two boxes: the gap between their axis-aligned footprints
  (0 when they overlap) plus a quarter of their centres' distance; "near" decays with it over
  ``NEAR_SCALE_M``.
* "closest" / "farthest" (EmbodiedScan's horizontal proximity) rank by the distance between
  centres, as EmbodiedScan's prompts do, among the candidates for each anchor on its own: every
  anchor has its own closest candidate, and the anchor's weight (a confident detection or a
  weak one) decides between them. Ranking against the closest pair over all anchors let a
  false-positive anchor next to some candidate push the true pair's score to nothing.
* support ("A on B"): A's centre lies over B's (oriented) footprint, A is not lower than B
  and A's bottom is within ``CONTACT_M`` above B's top or ``MAX_OVERLAP_M`` below it (lifted boxes of
  objects on a surface often overlap its top), or A lies inside B's box, raised
  above its floor (on a shelf board, score 0.8); B is A's best support
  (``support_exclusivity``: a cup on a table beside a chair pushed under it is inside the chair's
  box, and not on the chair); and B's footprint is not much smaller than A's
  (lifted boxes of a table top and a remote on it are equally thin and at one height: the
  remote is on the table, not the table on the remote). "A under B": A is beneath B's
  footprint, or B is on A ("the table under the cup"); "A supporting B": B is on A.
* allocentric ("A in front of B"): in B's own box frame, an object's front faces its local -y
  axis (a chair's seat, a monitor's screen, a shelf's open side), so its left is local +x and
  its back +y, seen from the object itself, z up: the project's one convention, that of the
  synthetic world's objects (``geometry.boxes.FRONT_AXIS``) and of its ground-truth prompts.
  The angle from that axis to A's centre decides. Detectors rarely know an object's front (the
  Embodied Perceptron's box loss ignores box symmetries; the lifted COCO detector's yaw comes
  from the footprint's minimum-area rectangle), so the scene memory turns each object's front
  towards where it was seen from (``MemoryConfig.front_from_views``); chairs at a table, seen
  from behind, get it wrong. For objects that stand against walls the grounder reads the front
  from the room instead (``room_frame.py``: on the room's axes, facing its interior).
* end ("A at the end of B"): A lies beyond the outer third of B's long axis (in B's box frame),
  within B's width, and not far past its end.
* inside ("A inside B", "B with A in it"): A's centre within B's box, or A on an inner surface of B.
* hanging ("A hanging from B", "mounted on B"): A's top meets B's bottom under B's footprint, or A's
  footprint touches B's at B's height; and A stands on nothing (off the floor, held up by no object).
* between ("A between B and C"): A's centre projects onto the middle of the segment B-C
  (horizontally; 15% to 85% of the way) and lies within a band around it that widens with
  the segment's length (half score at min(0.6 m, 0.35 x length) off the line).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..classes import SEAT_CLASSES, RelationType
from ..geometry.boxes import FRONT_AXIS, as_boxes, box_rotations
from .phrases import Relation

__all__ = [
    "FRONT_LOCAL", "LEFT_LOCAL", "SATISFIED", "SATISFIED_ALLOCENTRIC", "SATISFIED_NEAR", "SceneGeometry",
    "Supports", "between_scores", "pair_scores", "satisfied_threshold", "support_exclusivity", "supports",
]

# A relation holds for a pair when its score reaches its threshold; an answer needs every relation of the
# phrase to hold (engine.py). Stated per kind of relation:
SATISFIED = 0.2  # next to / closest / farthest (comparative: 1 for the anchor's closest candidate), between
# "near"/"next to": false when far (score 0.05: ~2.4 m apart); people say "next to" of the closest
# object a metre or two away, not across the room ("the gamepad next to the sink", 2.9 m: false).
SATISFIED_NEAR = 0.05
SATISFIED_SUPPORT = 0.5  # on / under / supporting: the mug on the table scored 0.40 "on" the chair beside it
SATISFIED_VERTICAL = 0.2  # above / below
SATISFIED_END = 0.3  # at the end of
# Allocentric scores also decay with distance; the direction is what the relation asserts.
SATISFIED_ALLOCENTRIC = 0.1
NEAR_SCALE_M = 0.8  # "near": score e^-1 at this distance (gap + centre distance / 4)
CONTACT_M = 0.10  # "on": largest gap between the bottom of A and the top of B still counted as contact
MAX_OVERLAP_M = 0.15  # "on": how far A's bottom may reach below B's top (lifted boxes overlap their support)
INNER_SURFACE_M = 0.15  # "on": an object inside B's box at least this far above B's bottom rests on an inner surface
INNER_SUPPORT_SCORE = 0.8  # ...and is "on" B with this score (less than on B's top)
# "A on B" is scaled by (on(A, B) / A's best support by any object) ** this: the supporter is the one it rests on.
EXCLUSIVE_POWER = 4.0
SUPPORT_GAP_SCALE_M = 0.1  # support quality: e^-1 for a bottom this far from the supporter's top
DENSE_PAIRS_MAX = 2000  # maps up to this many objects find support pairs from all distances at once
CHAIN_SUPPORTERS = 3  # "on" through a supporter: its best few supporters are followed one level down
INNER_HEADROOM_M = 0.1  # ... and an inner surface counts fully with this much of the box above the object
FOOTPRINT_MARGIN_M = 0.05  # "on"/"under": A's centre may be this far outside B's footprint
SUPPORT_AREA = 0.5  # "A on B": full score while B's footprint is at least this fraction of A's, less below
# "closest"/"farthest": score e^-1 for a candidate this much farther (nearer) than the anchor's
# closest (farthest) one; metres of sensor error and a detection's confidence outweigh a small lead.
# Tuning seeds 10004..10011 / 10028..10043, grounding Acc@0.25: 0.647 / 0.577 with 2 m, 0.634 / 0.562
# with 1 m, 0.597 / 0.541 with 0.3 m (3..5 m alike before the room's fronts; ranking over all anchors
# at once, the earlier rule: 0.544 at 0.3 m on the first set).
COMPARATIVE_SCALE_M = 2.0
ALLO_SCALE_M = 1.5  # "in front of" etc.: decay with the footprint gap


@dataclass(frozen=True)
class SceneGeometry:
    """Per-object box summaries (all (N, ...) float64, world frame, metres).

    Attributes:
        centers: (N, 3) box centres.
        half_xy: (N, 2) half extents of the axis-aligned footprint.
        bottom: (N,) lowest corner height; top: (N,) highest corner height.
        axes: (N, 2, 2) each box's own x and y axes projected on the floor and normalised
            (rows: local x, local y).
        half_local: (N, 2) half extents along those axes.
        volume: (N,) box volumes, cubic metres.
        seat: (N,) bool: things rest on its seat, not its top (chairs, sofas: a box holds the backrest).
        support_top: (N,) the height things rest on: the top, or the seat (``SEAT_HEIGHT`` of the box).
    """

    centers: np.ndarray
    half_xy: np.ndarray
    bottom: np.ndarray
    top: np.ndarray
    axes: np.ndarray
    half_local: np.ndarray
    volume: np.ndarray
    seat: np.ndarray
    support_top: np.ndarray

    @classmethod
    def from_boxes(cls, boxes: np.ndarray, class_names: tuple[str, ...] | list[str] = ()) -> SceneGeometry:
        """Summarise (N, 9) boxes (of these classes: seats are known by class; none without names)."""
        b = as_boxes(boxes)
        R = box_rotations(b)  # (N, 3, 3), columns = the box's axes in the world
        half_aabb = np.einsum("nij,nj->ni", np.abs(R), 0.5 * np.abs(b[:, 3:6]))  # (N, 3) exact for boxes
        axes = np.transpose(R[:, :2, :2], (0, 2, 1))  # (N, 2 axes, 2 xy)
        norms = np.linalg.norm(axes, axis=2, keepdims=True)
        axes = np.where(norms > 1e-9, axes / np.maximum(norms, 1e-9), np.eye(2)[None])
        z = b[:, 2]
        bottom, top = z - half_aabb[:, 2], z + half_aabb[:, 2]
        seat = np.array([str(n).lower() in SEAT_CLASSES for n in class_names], dtype=bool)
        if len(seat) != len(b):
            seat = np.zeros(len(b), dtype=bool)
        return cls(centers=b[:, 0:3].copy(), half_xy=half_aabb[:, :2], bottom=bottom, top=top, axes=axes,
                   half_local=0.5 * np.abs(b[:, 3:5]), volume=np.prod(np.abs(b[:, 3:6]), axis=1), seat=seat,
                   support_top=np.where(seat, bottom + SEAT_HEIGHT * (top - bottom), top))

    def __len__(self) -> int:
        return len(self.centers)


def _gap_xy(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(T, A) gap between axis-aligned footprints, metres (0 where they overlap)."""
    d = np.abs(g.centers[t, None, :2] - g.centers[None, a, :2]) - g.half_xy[t, None] - g.half_xy[None, a]
    return np.linalg.norm(np.maximum(d, 0.0), axis=2)


def _near_distance(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(T, A) footprint gap plus a quarter of the centre distance, metres: the gap alone is 0 for
    every object touching the anchor, and "next to" should still prefer the closer of those."""
    centre = np.linalg.norm(g.centers[t, None, :2] - g.centers[None, a, :2], axis=2)
    return _gap_xy(g, t, a) + 0.25 * centre


def _local_xy(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(T, A, 2) target centres in each anchor's horizontal box frame (local x, local y)."""
    rel = g.centers[t, None, :2] - g.centers[None, a, :2]  # (T, A, 2)
    return np.einsum("aij,taj->tai", g.axes[a], rel)


def _over_footprint(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(T, A) 1 when the target centre is over the anchor's oriented footprint, decaying outside."""
    out = np.abs(_local_xy(g, t, a)) - g.half_local[None, a] - FOOTPRINT_MARGIN_M
    return np.exp(-np.linalg.norm(np.maximum(out, 0.0), axis=2) / 0.1)


def _on(g: SceneGeometry, t: np.ndarray, a: np.ndarray, quality: bool = False) -> np.ndarray:
    """(T, A) "t on a"; ``quality``: weighted by how closely t's bottom meets a's top (to compare supporters)."""
    return _on_pairs(g, np.repeat(t, len(a)), np.tile(a, len(t)), quality).reshape(len(t), len(a))


def _on_pairs(g: SceneGeometry, t: np.ndarray, a: np.ndarray, quality: bool = False) -> np.ndarray:
    """(P,) "t[p] on a[p]" for pairs of indices (see ``_on``)."""
    gap = g.bottom[t] - g.support_top[a]  # > 0: floating above the anchor's top (or seat)
    # Touching the top: a lifted box may reach into its support a little (MAX_OVERLAP_M), not stand in it
    # (a chair pushed under a table is beside it, not on it).
    contact = np.exp(-np.maximum(gap - CONTACT_M, 0.0) / 0.05) * np.exp(-np.maximum(-gap - MAX_OVERLAP_M, 0.0) / 0.05)
    not_lower = np.exp(-np.maximum(g.centers[a, 2] - g.centers[t, 2], 0.0) / 0.05)
    on_top = contact * not_lower
    # Inside the anchor's box, off its floor and below its top: on an inner surface (a shelf board).
    # What lies on the floor inside a box (a book under a table) is not on it; a chair's surface is its seat.
    raised = g.bottom[t] - g.bottom[a] >= INNER_SURFACE_M
    inside = INNER_SUPPORT_SCORE * (raised & (g.top[t] <= g.top[a] + CONTACT_M) & ~g.seat[a])
    if quality:  # the top meets t's bottom; an inner surface has the box's top well above t
        on_top = on_top * np.exp(-np.abs(gap) / SUPPORT_GAP_SCALE_M)
        inside = inside * np.clip((g.top[a] - g.top[t]) / INNER_HEADROOM_M, 0.2, 1.0)
    area = 4.0 * np.prod(g.half_local, axis=1)
    big_enough = np.clip(area[a] / np.maximum(SUPPORT_AREA * area[t], 1e-9), 0.0, 1.0)
    local = np.einsum("pij,pj->pi", g.axes[a], g.centers[t, :2] - g.centers[a, :2])  # t's centre in a's frame
    out = np.abs(local) - g.half_local[a] - FOOTPRINT_MARGIN_M
    over = np.exp(-np.linalg.norm(np.maximum(out, 0.0), axis=1) / 0.1)
    return np.nan_to_num(over * np.maximum(on_top, inside) * big_enough, nan=0.0)


@dataclass(frozen=True)
class Supports:
    """What each object rests on best (for "on" to hold only of an object's support), from ``supports``.

    Attributes:
        best: (N,) each object's best support quality by any other object of the set (0: none).
        top: (N, CHAIN_SUPPORTERS) indices of its best supporters, best first (-1: none).
        top_quality: (N, CHAIN_SUPPORTERS) their support qualities.
    """

    best: np.ndarray
    top: np.ndarray
    top_quality: np.ndarray


def supports(g: SceneGeometry, members: np.ndarray) -> Supports:
    """Every object's best supporters among ``members`` (indices), from the pairs whose footprints can
    touch (for large maps found with a k-d tree over the centres: the cost grows with those pairs, not N^2)."""
    n = len(g)
    best, top = np.zeros(n), np.full((n, CHAIN_SUPPORTERS), -1, dtype=np.int64)
    quality = np.zeros((n, CHAIN_SUPPORTERS))
    members = np.asarray(members, dtype=np.int64)
    if len(members) < 2:
        return Supports(best, top, quality)
    # A supporter j can hold i only where i's centre may lie over j's footprint: within j's half diagonal,
    # the margin and the decay beyond it.
    radius = np.linalg.norm(g.half_local[members], axis=1) + FOOTPRINT_MARGIN_M + 0.3  # (M,)
    xy = g.centers[members, :2]
    if len(members) > DENSE_PAIRS_MAX:
        from scipy.spatial import cKDTree  # late: 0.5 s to import, worth it only for large maps

        pairs = cKDTree(xy).query_pairs(float(radius.max()), output_type="ndarray")
        pi = np.concatenate([pairs[:, 0], pairs[:, 1]])
        pj = np.concatenate([pairs[:, 1], pairs[:, 0]])
        keep = ((xy[pi] - xy[pj]) ** 2).sum(axis=1) <= radius[pj] ** 2
        pi, pj = pi[keep], pj[keep]
    else:
        d2 = (xy[:, None, 0] - xy[None, :, 0]) ** 2 + (xy[:, None, 1] - xy[None, :, 1]) ** 2  # (M, M)
        close = d2 <= (radius ** 2)[None, :]
        np.fill_diagonal(close, False)
        pi, pj = np.nonzero(close)
    if len(pi) == 0:
        return Supports(best, top, quality)
    i, j = members[pi], members[pj]
    q = _on_pairs(g, i, j, quality=True)
    keep = q > 0
    order = np.lexsort((-q[keep], i[keep]))  # by object, its best supporter first
    i, j, q = i[keep][order], j[keep][order], q[keep][order]
    rank = np.arange(len(i)) - np.searchsorted(i, i, side="left")
    chain = rank < CHAIN_SUPPORTERS
    top[i[chain], rank[chain]] = j[chain]
    quality[i[chain], rank[chain]] = q[chain]
    best[i[rank == 0]] = q[rank == 0]
    return Supports(best, top, quality)


def _support_quality(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(T, A) how well t rests on a: the "on" score, more where t's bottom meets a's top (a cup on a table
    beside a chair's backrest touches both boxes' tops within centimetres; it meets the table's)."""
    return _on(g, t, a, quality=True)


def support_exclusivity(g: SceneGeometry, t: np.ndarray, a: np.ndarray, s: Supports) -> np.ndarray:
    """(T, A) factor of "t on a": 1 when a is t's best support (``s``), or holds that support up (a cup on
    a magazine on the table is on the table), less when t rests better on something else
    ((quality / best quality) ** EXCLUSIVE_POWER)."""
    own = _support_quality(g, t, a)
    if len(t) and len(a):
        b = s.top[t]  # (T, C) each target's best supporters
        valid = b >= 0
        carried = _on(g, np.where(valid, b, 0).reshape(-1), a).reshape(len(t), -1, len(a))  # (T, C, A)
        carried = np.where(valid[:, :, None] & (b[:, :, None] != a[None, None, :]), carried, 0.0)
        own = np.maximum(own, (s.top_quality[t][:, :, None] * carried).max(axis=1))
    best = np.maximum(s.best[t], own.max(axis=1, initial=0.0))
    return np.clip(own / np.maximum(best, 1e-9)[:, None], 0.0, 1.0) ** EXCLUSIVE_POWER


def _end(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(T, A) "t at the end of a": beyond the outer third of a's long axis, within its width, near its end."""
    local = np.abs(_local_xy(g, t, a))  # (T, A, 2)
    half = g.half_local[a]  # (A, 2)
    long = np.argmax(half, axis=1)  # (A,)
    cols = np.arange(len(a))
    along, across = local[:, cols, long], local[:, cols, 1 - long]  # (T, A)
    hl, hs = half[cols, long][None], half[cols, 1 - long][None]
    beyond = np.clip((along - 0.6 * hl) / np.maximum(0.3 * hl, 1e-6), 0.0, 1.0)
    within = np.exp(-np.maximum(across - hs, 0.0) / 0.3)
    close = np.exp(-np.maximum(along - hl, 0.0) / NEAR_SCALE_M)
    return beyond * within * close


def _under(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    lower = np.clip((g.centers[None, a, 2] - g.centers[t, None, 2]) / 0.1, 0.0, 1.0)
    return _over_footprint(g, t, a) * lower


VERTICAL_SCALE_M = 0.3  # "above"/"below": decay with the footprint gap (roughly over the anchor)


def _vertical(g: SceneGeometry, t: np.ndarray, a: np.ndarray, sign: float) -> np.ndarray:
    # Above: the target's bottom is clearly over the anchor's top (10 cm for the full score: a cup beside a
    # magazine on one table, 2 cm higher, is not above it). Below: the target's top is under the anchor's
    # middle (a table's box reaches the floor: what is under it is inside its box).
    if sign > 0:
        clear = np.clip((g.bottom[t, None] - g.top[None, a]) / 0.1, 0.0, 1.0)
    else:
        clear = np.clip((g.centers[None, a, 2] - g.top[t, None] + 0.05) / 0.1, 0.0, 1.0)
    return clear * np.exp(-_gap_xy(g, t, a) / VERTICAL_SCALE_M)


def _allocentric(g: SceneGeometry, t: np.ndarray, a: np.ndarray, direction: np.ndarray) -> np.ndarray:
    local = _local_xy(g, t, a)  # (T, A, 2)
    norm = np.linalg.norm(local, axis=2)
    cos = (local @ direction) / np.maximum(norm, 1e-9)
    return np.clip(cos, 0.0, 1.0) ** 2 * (norm > 1e-6) * np.exp(-_gap_xy(g, t, a) / ALLO_SCALE_M)


def _comparative(g: SceneGeometry, t: np.ndarray, a: np.ndarray, farthest: bool) -> np.ndarray:
    """(T, A) closest (farthest) score: 1 for each anchor's closest (farthest) target, decaying with
    how much farther (nearer) the others are; 0 where a target is the anchor itself."""
    sign = -1.0 if farthest else 1.0
    d = sign * np.linalg.norm(g.centers[t, None, :2] - g.centers[None, a, :2], axis=2)
    d = np.where(t[:, None] == a[None, :], np.inf, d)
    best = d.min(axis=0, keepdims=True, initial=np.inf)  # inf where the anchor is the only target
    lead = np.where(np.isfinite(d), d - np.where(np.isfinite(best), best, 0.0), np.inf)
    return np.exp(-lead / COMPARATIVE_SCALE_M)


def _within(g: SceneGeometry, t: np.ndarray, a: np.ndarray) -> np.ndarray:
    """(T, A) 1 when t's centre lies inside a's box (its oriented footprint, between its bottom and top), decaying
    outside it ("the spoon in the cup", "the cup inside the cabinet")."""
    low = np.exp(-np.maximum(g.bottom[None, a] - g.centers[t, None, 2], 0.0) / 0.05)
    high = np.exp(-np.maximum(g.centers[t, None, 2] - g.top[None, a], 0.0) / 0.05)
    return _over_footprint(g, t, a) * low * high


HANG_SIDE_M = 0.05  # "hanging from/on" the side of something: e^-1 at this gap between the footprints


def _hanging(g: SceneGeometry, t: np.ndarray, a: np.ndarray, supporters: Supports | None) -> np.ndarray:
    """(T, A) "t hanging from a": held from above (t's top meets a's bottom, under a's footprint) or from the
    side (t's footprint touches a's, t hangs no higher than a's top), and standing on nothing: t's bottom
    is off the floor (the lowest bottom in the map) and no object holds it up."""
    meet = g.bottom[None, a] - g.top[t, None]  # > 0: t's top is below a's bottom
    above = _over_footprint(g, t, a) * np.exp(-np.maximum(meet - CONTACT_M, 0.0) / 0.05) \
        * np.exp(-np.maximum(-meet - MAX_OVERLAP_M, 0.0) / 0.05)
    beside = np.exp(-_gap_xy(g, t, a) / HANG_SIDE_M) * np.clip(
        (g.top[None, a] + CONTACT_M - g.top[t, None]) / 0.05, 0.0, 1.0) * (g.centers[t, None, 2] > g.bottom[None, a])
    off_floor = np.clip((g.bottom[t] - g.bottom.min() - 0.05) / 0.1, 0.0, 1.0)
    standing = supporters.best[t] if supporters is not None else np.zeros(len(t))
    return np.maximum(above, beside) * (off_floor * np.clip(1.0 - standing, 0.0, 1.0))[:, None]


# The seat of a SEAT_CLASSES box is at this fraction of the box's height (a dining chair 0.84 m tall:
# seat at 0.46 m).
SEAT_HEIGHT = 0.55
FRONT_LOCAL = FRONT_AXIS[:2]  # an object's front in its own box frame (x, y)
LEFT_LOCAL = np.array([1.0, 0.0])  # its left, seen from the object, z up: local +x
_DIRECTIONS = {Relation.FRONT: FRONT_LOCAL, Relation.BEHIND: -FRONT_LOCAL, Relation.LEFT: LEFT_LOCAL,
               Relation.RIGHT: -LEFT_LOCAL}


def satisfied_threshold(relation: Relation) -> float:
    """The score below which ``relation`` is considered false of a pair."""
    if relation is Relation.NEAR:
        return SATISFIED_NEAR
    if relation is Relation.END:
        return SATISFIED_END
    return {RelationType.ALLOCENTRIC: SATISFIED_ALLOCENTRIC, RelationType.SUPPORT: SATISFIED_SUPPORT,
            RelationType.VERTICAL: SATISFIED_VERTICAL}.get(relation.type, SATISFIED)


def pair_scores(relation: Relation, g: SceneGeometry, t: np.ndarray, a: np.ndarray,
                supporters: Supports | None = None) -> np.ndarray:
    """Score of "target ``relation`` anchor" for every pair.

    Args:
        relation: any relation but BETWEEN (see ``between_scores``).
        g: the scene's geometry.
        t: (T,) target indices into ``g``; a: (A,) anchor indices.
        supporters: what every object rests on (``supports``): "on", "under" and "supporting" then
            hold only of an object's best support (``support_exclusivity``); None: not checked.

    Returns:
        (T, A) scores in [0, 1]; 0 where a target is its own anchor. CLOSEST and FARTHEST are
        comparative: a pair's score is relative to the other targets for the same anchor (the
        anchor's closest target gets 1).
    """
    if relation is Relation.NEAR:
        s = np.exp(-_near_distance(g, t, a) / NEAR_SCALE_M)
    elif relation is Relation.CLOSEST:
        s = _comparative(g, t, a, farthest=False)
    elif relation is Relation.NEXT_TO:  # the closest one, and not across the room
        near = np.exp(-_near_distance(g, t, a) / NEAR_SCALE_M)
        s = _comparative(g, t, a, farthest=False) * np.clip(near / SATISFIED_NEAR, 0.0, 1.0)
    elif relation is Relation.FARTHEST:
        s = _comparative(g, t, a, farthest=True)
    elif relation is Relation.END:
        s = _end(g, t, a)
    elif relation is Relation.ABOVE:
        s = _vertical(g, t, a, 1.0)
    elif relation is Relation.BELOW:
        s = _vertical(g, t, a, -1.0)
    elif relation in (Relation.ON, Relation.UNDER, Relation.SUPPORTING):
        on = _on(g, t, a) if relation is Relation.ON else _on(g, a, t).T  # (T, A) target on anchor / anchor on target
        if supporters is not None:
            on = on * (support_exclusivity(g, t, a, supporters) if relation is Relation.ON
                       else support_exclusivity(g, a, t, supporters).T)
        s = np.maximum(_under(g, t, a), on) if relation is Relation.UNDER else on  # under: beneath it, or holding it
    elif relation is Relation.HANGING:
        s = _hanging(g, t, a, supporters)
    elif relation is Relation.INSIDE:  # within the box, or resting in it (on an inner surface): no best-support rule
        s = np.maximum(_within(g, t, a), _on(g, t, a))
    elif relation in _DIRECTIONS:
        s = _allocentric(g, t, a, _DIRECTIONS[relation])
    else:
        raise ValueError(f"pair_scores does not handle {relation}")
    return np.where(t[:, None] == a[None, :], 0.0, np.nan_to_num(s, nan=0.0, posinf=0.0, neginf=0.0))


def between_scores(g: SceneGeometry, t: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(T, A, B) score of "target between anchor a and anchor b" (horizontal), 0 for repeated objects."""
    pa, pb, pt = g.centers[a, :2], g.centers[b, :2], g.centers[t, :2]
    seg = pb[None, :] - pa[:, None]  # (A, B, 2)
    length2 = np.maximum((seg**2).sum(axis=2), 1e-9)  # (A, B)
    rel = pt[:, None, None, :] - pa[None, :, None, :]  # (T, A, 1, 2)
    s = (rel * seg[None]).sum(axis=3) / length2[None]  # (T, A, B) position along the segment
    perp = np.linalg.norm(rel - s[..., None] * seg[None], axis=3)
    # Between = in the middle part of the segment (full score from 15% to 85% of the way) and
    # close to it (half score at min(0.6 m, 0.35 x its length) off the line).
    along = np.clip(np.minimum(s, 1.0 - s) / 0.15, 0.0, 1.0)
    band = np.maximum(np.minimum(0.6, 0.35 * np.sqrt(length2)), 0.05)[None]
    score = along * np.exp(-np.log(2.0) * (perp / band) ** 2)
    same = ((t[:, None, None] == a[None, :, None]) | (t[:, None, None] == b[None, None, :])
            | (a[:, None] == b[None, :])[None])
    return np.where(same, 0.0, score)
