"""Listen beside RViz and write down what it was sent: the node's latest markers and the view frame (JSON).

Run inside a sourced ROS 2 (tests/rviz_session.py starts it): ``python rviz_probe.py OUT.json``.
Rewrites OUT.json (atomically) on every MarkerArray, so a reader always finds the markers RViz has
last drawn, with the time they came (``received``, monotonic seconds) and the count so far. Ends on
SIGINT/SIGTERM.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile
from tf2_msgs.msg import TFMessage
from visualization_msgs.msg import MarkerArray

NODE = "/embodied_perception"


def main() -> None:
    out = Path(sys.argv[1])
    rclpy.init()
    node = rclpy.create_node("rviz_probe")
    state: dict = {"count": 0, "views": {}}

    def write() -> None:
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, out)

    def on_markers(msg: MarkerArray) -> None:
        boxes, labels = [], []
        for m in msg.markers:
            colour = [m.color.r, m.color.g, m.color.b, m.color.a]
            if m.action != 0:
                continue
            if m.type == 5:  # LINE_LIST
                boxes.append({"ns": m.ns, "id": m.id, "frame": m.header.frame_id, "width": m.scale.x,
                              "colour": colour, "points": [[p.x, p.y, p.z] for p in m.points]})
            elif m.type == 9:  # TEXT_VIEW_FACING
                p = m.pose.position
                labels.append({"ns": m.ns, "id": m.id, "frame": m.header.frame_id, "text": m.text,
                               "height": m.scale.z, "colour": colour, "position": [p.x, p.y, p.z]})
        state.update(count=state["count"] + 1, received=time.monotonic(), boxes=boxes, labels=labels)
        write()

    def on_static(msg: TFMessage) -> None:
        for t in msg.transforms:
            v = t.transform.translation
            state["views"][t.child_frame_id] = {"parent": t.header.frame_id, "xyz": [v.x, v.y, v.z]}
        write()

    node.create_subscription(MarkerArray, f"{NODE}/markers", on_markers, 5)
    node.create_subscription(TFMessage, "/tf_static", on_static,
                             QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL))
    signal.signal(signal.SIGTERM, lambda *_: rclpy.try_shutdown())
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, rclpy.executors.ExternalShutdownException):
        pass
    finally:
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
