"""The embodied_perception node end to end with real rclpy: image stamp -> markers latency, and ~/ground
response time while frames stream.

    .venv/bin/python benchmarks/bench_node.py [--frames 40] [--rate 5] [--stride 5]

Replays redkitchen frames (../shared/data or $EMBODIED_ROS_DATA) as Image + CameraInfo + PoseStamped at
``--rate`` Hz, stamped with the time of publishing; every frame is a keyframe (keyframe_max_interval 0),
so frames the network cannot keep up with are dropped by the depth-1 queue and counted. Meanwhile a
second thread calls ~/ground every ``--ground-period`` seconds. Prints the figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def _stats(values: list[float]) -> str:
    if not values:
        return "none"
    a = np.array(values) * 1000.0
    return f"median {np.median(a):.0f} ms, p90 {np.percentile(a, 90):.0f} ms, max {a.max():.0f} ms (n={len(a)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=40)
    parser.add_argument("--rate", type=float, default=5.0, help="frames per second published")
    parser.add_argument("--stride", type=int, default=5, help="use every k-th redkitchen frame")
    parser.add_argument("--ground-period", type=float, default=0.25)
    parser.add_argument("--phrase", default="the chair")
    args = parser.parse_args()

    from embodied_ros.ros.harness import FramePublisher, InProcessRos, prepare, wait_until

    reason = prepare()
    if reason:
        print(f"bench_node: skipped: {reason}")
        return 0
    if not (DATA / "redkitchen").is_dir() or not (DATA / "yolo_fastest").is_dir():
        print(f"bench_node: skipped: real data not found in {DATA}")
        return 0
    from embodied_ros.srv import Ground
    from visualization_msgs.msg import MarkerArray

    from embodied_ros.network.registry import build_perceptor
    from embodied_ros.sources import open_source

    frames = [f for f in open_source(DATA / "redkitchen").frames(stride=args.stride, max_frames=args.frames)
              if not isinstance(f, Exception)]
    ros = InProcessRos()
    node = ros.node(build_perceptor("yolo-fastest-1.1-xl", weights=DATA / "yolo_fastest"), pose_topic="camera_pose",
                    world_frame="world", keyframe_max_interval=0.0)
    latencies: list[float] = []

    def on_markers(msg: MarkerArray) -> None:
        stamp = msg.markers[0].header.stamp
        latencies.append(time.time() - (stamp.sec + stamp.nanosec * 1e-9))

    ros.client.create_subscription(MarkerArray, "/embodied_perception/markers", on_markers, 10)
    publisher = FramePublisher(ros.client)
    publisher.wait_for_subscribers()
    print("warming up (first keyframe, grounding engine) ...", flush=True)
    publisher.publish(frames[0], settle=0.2)
    wait_until(lambda: latencies, 120)
    ros.call(Ground, "/embodied_perception/ground", Ground.Request(phrase=args.phrase), timeout=300)
    latencies.clear()
    received_before, processed_before = node.worker.stats.received, node.worker.stats.processed

    ground_times: list[float] = []
    answers: list[str] = []
    streaming = threading.Event()
    streaming.set()

    def ground_loop() -> None:
        while streaming.is_set():
            start = time.perf_counter()
            answer = ros.call(Ground, "/embodied_perception/ground", Ground.Request(phrase=args.phrase))
            ground_times.append(time.perf_counter() - start)
            answers.append(answer.message)
            time.sleep(args.ground_period)

    grounder = threading.Thread(target=ground_loop, daemon=True)
    grounder.start()
    start = time.perf_counter()
    for i, frame in enumerate(frames[1:]):
        publisher.publish(frame)
        time.sleep(max(0.0, start + (i + 1) / args.rate - time.perf_counter()))
    node.worker.wait_idle(120)
    time.sleep(0.5)
    streaming.clear()
    grounder.join(30)
    stats = node.worker.stats
    print(f"frames published: {len(frames) - 1} at {args.rate:g} Hz; received {stats.received - received_before}, "
          f"processed {stats.processed - processed_before}, dropped (queue depth 1) {stats.dropped}")
    print(f"image stamp -> markers received: {_stats(latencies)}")
    print("last keyframe stages: " + ", ".join(f"{k} {1000 * v:.0f} ms" for k, v in (stats.last_stage_s or {}).items()))
    print(f"~/ground round trip while streaming: {_stats(ground_times)}")
    print(f"last answer: {answers[-1] if answers else 'none'}")
    ros.close([node])
    return 0


if __name__ == "__main__":
    sys.exit(main())
