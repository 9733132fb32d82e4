"""Fronts of the objects that stand against walls, read from the room instead of the views.

The scene memory turns each object's front towards where it was seen from
(``MemoryConfig.front_from_views``): right for a chair seen from its seat, wrong for a bed or a
cabinet that the robot only passed by the side of. Furniture that stands against a wall (beds,
cabinets, shelves, sofas, monitors on desks) and the openings in walls (doors, windows) face the
room's interior, and rooms are mostly rectangular (the "Manhattan world" of indoor mapping).
So, for the grounder's relations only (the memory's boxes are not changed):

1. the room's axes come from the yaws of the wall-standing objects: the score-weighted circular
   mean of four times their front angles (a right angle apart is the same axis);
2. each listed object is turned by less than 45 degrees onto the nearest room axis;
3. an object stands by a wall along a room axis when its centre lies away from the
   score-weighted mean of all objects' centres along it (relative to the centres' spread); its
   side towards the mean faces the interior. A front that already faces the interior along such
   an axis stays (a bed in a corner may face either way); any other front turns to the interior
   along the axis the object stands farthest out on. An object by no wall keeps the front it was
   seen from.

Synthetic rooms place these classes against walls and axis-aligned; on tuning seeds
10004..10011 and 10028..10043 this raised grounding Acc@0.25 0.622 -> 0.647 and 0.553 -> 0.577
(allocentric prompts: "the chair in front of the cabinet"). With the true boxes as the memory
(``benchmarks/eval_grounding_synthetic.py``, true fronts) it costs 3 of 351 allocentric prompts.
"""

from __future__ import annotations

import numpy as np

from ..classes import ROOM_AXIS_CLASSES, ROOM_FACING_CLASSES
from ..geometry.boxes import FRONT_AXIS, as_boxes, box_rotations
from ..memory.box_fusion import face_box
from .vocabulary import canonical_label

__all__ = ["ROOM_AXIS_CLASSES", "ROOM_FACING_CLASSES", "face_the_room", "room_yaw"]

MIN_AXIS_AGREEMENT = 0.3  # length of the mean of 4 x angle below which the room has no clear axes
# An object stands by a wall when its centre lies at least this far from the middle of the objects'
# centres along a room axis, as a fraction of their spread along it (0.5: the outermost). A sofa in
# the middle of a room keeps the front it was seen from. 0.2 on the tuning seeds (0.647 / 0.577;
# 0.1: 0.622 / 0.564, 0.3: 0.641 / 0.572).
BY_A_WALL = 0.2


def _front_angles(boxes: np.ndarray) -> np.ndarray:
    """(N,) horizontal angle of each box's front (``R @ FRONT_AXIS``), radians."""
    fronts = box_rotations(boxes) @ FRONT_AXIS
    return np.arctan2(fronts[:, 1], fronts[:, 0])


def room_yaw(front_angles: np.ndarray, weights: np.ndarray) -> float | None:
    """Angle of one of the room's axes in [-pi/4, pi/4), or None when the angles do not agree.

    Args:
        front_angles: (N,) front angles of wall-standing objects, radians.
        weights: (N,) non-negative weights (detection scores).
    """
    w = np.clip(np.asarray(weights, dtype=np.float64), 0.0, None)
    if w.sum() <= 0.0:
        return None
    mean = (w * np.exp(4j * np.asarray(front_angles, dtype=np.float64))).sum() / w.sum()
    if abs(mean) < MIN_AXIS_AGREEMENT:
        return None
    return float(np.angle(mean) / 4.0)


def face_the_room(boxes: np.ndarray, class_names: tuple[str, ...] | list[str], scores: np.ndarray,
                  facing: tuple[str, ...] = ROOM_FACING_CLASSES,
                  axis_from: tuple[str, ...] = ROOM_AXIS_CLASSES) -> np.ndarray:
    """The boxes, with those of the ``facing`` classes on the room's axes and facing its interior.

    Args:
        boxes: (N, 9) world boxes; class_names: (N,) their classes (detector labels: "couch" and
            "tvmonitor" count as sofa and monitor); scores: (N,) detection scores.
        facing: classes whose boxes are turned; axis_from: classes whose yaws give the room's axes.

    Returns:
        (N, 9) a copy; unchanged when no listed object is present, the room's axes are unclear,
        or fewer than two objects leave no interior to face.
    """
    out = as_boxes(boxes).copy()
    names, index = np.unique(np.array(class_names, dtype=str), return_inverse=True)
    canon = np.array([canonical_label(str(n)) for n in names], dtype=str)[index.reshape(-1)]
    turn = np.isin(canon, facing)
    if len(out) < 2 or not turn.any():
        return out
    angles = _front_angles(out)
    score = np.asarray(scores, dtype=np.float64).reshape(-1)
    yaw = room_yaw(angles, np.where(np.isin(canon, axis_from), score, 0.0))
    if yaw is None:
        return out
    axes = np.array([[np.cos(yaw), np.sin(yaw)], [-np.sin(yaw), np.cos(yaw)]])  # rows: the room's x and y
    local = out[:, :2] @ axes.T  # centres in the room's frame
    middle = np.average(local, axis=0, weights=np.clip(score, 1e-3, None))
    inward = (middle - local) / np.maximum(np.ptp(local, axis=0), 1e-3)
    # Sides by the room's axes: 0 +x, 1 +y, 2 -x, 3 -y. Along an axis on which the object stands
    # away from the middle (by a wall), the side towards the middle faces the interior.
    by_wall = np.abs(inward) >= BY_A_WALL  # (N, 2)
    towards = np.where(inward >= 0, [0, 1], [2, 3])  # (N, 2) the interior's side along x and along y
    turn &= by_wall.any(axis=1)  # in the middle of the room: the views' front stays
    i = np.flatnonzero(turn)
    # A small turn onto the nearest room axis (the same physical box, squared with the room)...
    small = (angles[i] - yaw + np.pi / 4) % (np.pi / 2) - np.pi / 4
    out[i, 6] -= small  # alpha is the first (world z) rotation of ZXY: changing it turns the whole box
    # ...then, unless the front already faces the interior along an axis by a wall (a bed in a
    # corner may face either way), the side facing it where the object is farthest from the middle.
    side = np.round((angles[i] - small - yaw) / (np.pi / 2)).astype(np.int64) % 4
    fine = (by_wall[i] & (towards[i] == side[:, None])).any(axis=1)
    farthest = np.argmax(np.abs(inward[i]), axis=1)
    want_side = np.where(fine, side, towards[i, farthest])
    want = np.full(len(out), np.nan)
    want[i] = yaw + want_side * (np.pi / 2)
    quarter = (want_side - side) % 4
    upright = np.all(out[i, 7:9] == 0.0, axis=1)
    for j in i[~upright]:  # tilted boxes: the general rewrite
        out[j] = face_box(out[j], np.array([np.cos(want[j]), np.sin(want[j])]))
    j, q = i[upright], quarter[upright]
    out[j, 6] = (out[j, 6] + q * (np.pi / 2) + np.pi) % (2 * np.pi) - np.pi
    odd = j[q % 2 == 1]
    out[odd, 3], out[odd, 4] = out[odd, 4].copy(), out[odd, 3].copy()
    return out
