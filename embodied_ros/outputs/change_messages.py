"""Change events -> ROS messages: ``embodied_ros/SceneChange`` and RViz markers of the recent changes.

Built as rosbags dataclasses (the offline runner writes them into the bag with no ROS installed); the node
converts them to rclpy messages (they are few and small). The markers (their own topic, ``~/change_markers``,
so a DELETEALL there never touches the scene's boxes): a translucent grey *ghost* box where a removed or
moved thing stood, an arrow from there to where a moved thing went, a green box around a new thing, and a
label for each ("moved cup #3").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..geometry.boxes import BOX_DIM, box_rotations
from ..memory.change_events import ChangeEvent, ChangeKind
from ..messages.convert import header_msg, pose_msg, time_msg, vector3_msg
from ..messages.types import msg_class
from .scene_messages import LINE_WIDTH, SPACE_WIDTH, TEXT_HEIGHT, _marker, _point, _rgba, box_edge_points

CHANGE_NAMESPACES = ("change_ghosts", "change_arrows", "change_boxes", "change_labels")
"""The marker namespaces of ``change_markers`` (one per layer, so RViz can toggle each)."""
KIND_CODES = {ChangeKind.REMOVED: 0, ChangeKind.NEW: 1, ChangeKind.MOVED: 2}
"""SceneChange.kind's constants (REMOVED, NEW, MOVED)."""
GHOST_RGBA = (0.6, 0.6, 0.6, 0.35)
NEW_RGB = (0.1, 0.85, 0.2)
MOVED_RGB = (1.0, 0.55, 0.0)
REMOVED_RGB = (0.85, 0.1, 0.1)

_ARROW, _CUBE, _LINE_LIST, _TEXT_VIEW_FACING, _DELETEALL = 0, 1, 5, 9, 3


def scene_change_msg(event: ChangeEvent, frame_id: str) -> Any:
    """embodied_ros/SceneChange of one event (boxes it has not are zeros)."""
    zeros = np.zeros(BOX_DIM)
    return msg_class("embodied_ros/msg/SceneChange")(
        header=header_msg(frame_id, event.stamp_ns), seq=int(event.seq), kind=KIND_CODES[event.kind],
        id=int(event.object_id), class_name=event.class_name, colour=event.colour or "",
        old_box=np.asarray(event.old_box if event.old_box is not None else zeros, dtype=np.float64),
        new_box=np.asarray(event.new_box if event.new_box is not None else zeros, dtype=np.float64),
        last_seen=time_msg(event.last_seen_ns), replaces=np.asarray(event.replaces, dtype=np.uint32))


def change_label(event: ChangeEvent) -> str:
    """The RViz label of an event: "moved cup #3"."""
    return f"{event.kind.value} {event.class_name} #{event.object_id}"


class _Box:
    """The little a box marker needs (scene_messages.box_edge_points reads ``box``)."""

    def __init__(self, box: np.ndarray) -> None:
        self.box = box


def change_markers(events: Sequence[ChangeEvent], frame_id: str, stamp_ns: int) -> Any:
    """visualization_msgs/MarkerArray of the given (recent) events: DELETEALL, then per event a ghost box
    where it was (removed, moved), an arrow to where it went (moved), a box where it is (new) and a label.
    Marker ids are the events' ``seq``."""
    markers = [_marker("", 0, _LINE_LIST, frame_id, stamp_ns, action=_DELETEALL)]
    for e in events:
        colour = {ChangeKind.REMOVED: REMOVED_RGB, ChangeKind.NEW: NEW_RGB, ChangeKind.MOVED: MOVED_RGB}[e.kind]
        where = e.new_box if e.new_box is not None else e.old_box
        if e.old_box is not None:  # the ghost of where it stood
            markers.append(_marker("change_ghosts", e.seq, _CUBE, frame_id, stamp_ns,
                                   pose=pose_msg(box_rotations(e.old_box[None])[0], e.old_box[:3]),
                                   scale=vector3_msg(e.old_box[3:6]), color=_rgba(GHOST_RGBA[:3], GHOST_RGBA[3])))
        if e.kind is ChangeKind.MOVED:
            shaft = max(0.04, min(0.08, 0.08 * e.distance))
            markers.append(_marker("change_arrows", e.seq, _ARROW, frame_id, stamp_ns,
                                   points=[_point(e.old_box[:3]), _point(e.new_box[:3])],
                                   scale=vector3_msg((shaft, 2 * shaft, 3 * shaft)), color=_rgba(colour)))
        if e.new_box is not None:
            edges = box_edge_points([_Box(e.new_box)])[0]
            markers.append(_marker("change_boxes", e.seq, _LINE_LIST, frame_id, stamp_ns,
                                   scale=vector3_msg((1.5 * LINE_WIDTH, 0.0, 0.0)), color=_rgba(colour),
                                   points=[_point(p) for p in edges]))
        top = where[:3] + [0.0, 0.0, 0.5 * float(where[5]) + 1.5 * TEXT_HEIGHT]
        markers.append(_marker("change_labels", e.seq, _TEXT_VIEW_FACING, frame_id, stamp_ns,
                               pose=pose_msg(np.eye(3), top), color=_rgba(colour), text=change_label(e),
                               scale=vector3_msg((SPACE_WIDTH * TEXT_HEIGHT, 0.0, TEXT_HEIGHT))))
    return msg_class("visualization_msgs/msg/MarkerArray")(markers=markers)


def recent(events: Sequence[ChangeEvent], now_ns: int, window_s: float) -> list[ChangeEvent]:
    """The events made within ``window_s`` seconds before ``now_ns`` (0: all)."""
    if window_s <= 0:
        return list(events)
    return [e for e in events if now_ns - e.stamp_ns <= window_s * 1e9]


class RecentChanges:
    """Which changes the markers show (those of the last ``window_s`` seconds), and when to draw them again."""

    def __init__(self, window_s: float) -> None:
        self.window_s = float(window_s)
        self._shown: tuple[int, ...] = ()

    def to_draw(self, current: Sequence[ChangeEvent], now_ns: int) -> list[ChangeEvent] | None:
        """The recent changes when they are not the ones drawn last (a change came or one grew old), else None."""
        shown = recent(current, now_ns, self.window_s)
        seqs = tuple(e.seq for e in shown)
        if seqs == self._shown:
            return None
        self._shown = seqs
        return shown
