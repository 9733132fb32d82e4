"""Benchmark: a Detection2DArray between the detector node and the map, rclpy's way against the CDR bytes.

Run inside a ROS 2 tree that has vision_msgs (the tests' tree: tests/ros2_tree.py), e.g.
    python benchmarks/bench_detection_messages.py [--detections 15] [--runs 200]

Per array of N detections, median milliseconds of each side of the topic:
- publish side: build the message and serialise it (rclpy: a rosbags message turned into an rclpy one field by
  field, then ``serialize_message``, as ``Publisher.publish`` does; bytes: ``detection2d_array_cdr``);
- take side: deserialise and read names, scores and boxes (rclpy: ``deserialize_message``, as the executor does
  for a typed subscription, then ``detections_from_msg``; bytes: ``detections_from_cdr`` on a raw subscription's
  bytes).
Both sides give the same bytes and the same detections (checked before timing).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np


def _median_ms(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--detections", type=int, default=15, help="detections in the array")
    p.add_argument("--runs", type=int, default=200)
    args = p.parse_args()
    from rclpy.serialization import deserialize_message, serialize_message
    from vision_msgs.msg import Detection2DArray

    from embodied_ros.messages.detections2d import (
        detection2d_array_cdr,
        detection2d_array_msg,
        detections_from_cdr,
        detections_from_msg,
    )
    from embodied_ros.ros.conversions import to_rclpy

    rng = np.random.default_rng(0)
    names = [f"class {k % 7}" for k in range(args.detections)]
    scores = rng.uniform(0.1, 1.0, args.detections)
    corners = rng.uniform(0, 300, (args.detections, 2))
    boxes = np.hstack([corners, corners + rng.uniform(10, 200, (args.detections, 2))])
    header = ("rgb_camera_link", 1_700_000_000_123_456_789)

    def typed() -> bytes:
        return serialize_message(to_rclpy(detection2d_array_msg(names, scores, boxes, *header)))

    def raw() -> bytes:
        return detection2d_array_cdr(names, scores, boxes, *header)

    data = raw()
    assert data == typed(), "the CDR bytes differ from rclpy's"
    a, b = detections_from_msg(deserialize_message(data, Detection2DArray)), detections_from_cdr(data)
    assert a.names == b.names and np.allclose(a.boxes_xyxy, b.boxes_xyxy), "the two reads differ"
    def take_typed() -> object:
        return detections_from_msg(deserialize_message(data, Detection2DArray))

    rows = [("publish: build + serialise", _median_ms(typed, args.runs), _median_ms(raw, args.runs)),
            ("take: deserialise + read", _median_ms(take_typed, args.runs),
             _median_ms(lambda: detections_from_cdr(data), args.runs))]
    print(f"Detection2DArray of {args.detections} detections ({len(data)} bytes), median of {args.runs} runs, ms")
    print(f"{'':28s} {'rclpy messages':>15s} {'CDR bytes':>10s} {'ratio':>6s}")
    for name, before, after in rows:
        print(f"{name:28s} {before:15.3f} {after:10.3f} {after / before:6.2f}")
    total_before, total_after = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'both sides':28s} {total_before:15.3f} {total_after:10.3f} {total_after / total_before:6.2f}")


if __name__ == "__main__":
    main()
