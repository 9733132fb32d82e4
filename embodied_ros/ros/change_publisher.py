"""The node's changes: ``~/changes`` (one SceneChange per event), ``~/change_markers`` and ``~/what_changed``.

Events come from the keyframe's memory update (memory/changes.py); each is published once, as it is made.
A move is told when its second half is seen, naming the removed or new event it replaces (SceneChange's
``replaces``). ``~/change_markers`` shows the changes of the last ``changes.marker_window_s`` seconds
(ghost box, arrow, new box, label: outputs/change_messages.py), republished when that set changes.
``~/what_changed`` answers from the memory's history: since a stamp, or since the map was loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..memory.change_events import ChangeEvent
from ..messages.convert import header_msg, stamp_ns_from_msg
from ..outputs.change_messages import RecentChanges, change_markers, scene_change_msg
from .conversions import to_rclpy

HISTORY_DEPTH = 100  # SceneChange messages a late subscriber with transient-local durability still gets


class ChangePublisher:
    """``~/changes`` (reliable, transient local: a subscriber that comes late gets the latest events too)
    and ``~/change_markers``.

    Args:
        node: the rclpy node.
        qos: QoS of the markers (the scene's outputs').
        window_s: seconds of changes the markers show (0: every change kept).
    """

    def __init__(self, node: Any, qos: Any, window_s: float) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from visualization_msgs.msg import MarkerArray

        from embodied_ros.msg import SceneChange

        history = QoSProfile(depth=HISTORY_DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self._changes = node.create_publisher(SceneChange, "~/changes", history)
        self._markers = node.create_publisher(MarkerArray, "~/change_markers", qos)
        self._recent = RecentChanges(window_s)

    def publish(self, new: Sequence[ChangeEvent], current: Sequence[ChangeEvent], frame_id: str,
                stamp_ns: int) -> None:
        """Publish the keyframe's new events, and the markers when the recent changes are not those shown."""
        for event in new:
            self._changes.publish(to_rclpy(scene_change_msg(event, frame_id)))
        shown = self._recent.to_draw(current, stamp_ns)
        if shown is not None:
            self._markers.publish(to_rclpy(change_markers(shown, frame_id, stamp_ns)))


def what_changed(node: Any, request: Any, response: Any) -> Any:
    """Answer with the changes since ``request.since`` (zero: all kept), or since the map was loaded."""
    snapshot = node.mapper.snapshot()
    frame_id = snapshot.frame_id or node.config.world_frame
    response.header = to_rclpy(header_msg(frame_id, snapshot.stamp_ns))
    since = stamp_ns_from_msg(request.since)
    with node.mapper.lock:
        log = node.mapper.memory.changes.log
        events = log.since(since or None, since_load=bool(request.since_map_load))
    response.changes = [to_rclpy(scene_change_msg(e, frame_id)) for e in events]
    response.success = True
    what = "since the map was loaded" if request.since_map_load else f"since stamp {since}" if since else "so far"
    kinds = ", ".join(f"{sum(e.kind.value == k for e in events)} {k}" for k in ("moved", "removed", "new"))
    response.message = f"{len(events)} changes {what}" + (f": {kinds}" if events else "")
    node.get_logger().info(f"what_changed: {response.message}")
    return response
