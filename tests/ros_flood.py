"""A flood of ~/ground calls from a process of its own, as another node on the network would send them.

Run by tests/test_ros_node_faults.py and tests/test_ros2_tree.py (same ROS domain, through the environment):
``python tests/ros_flood.py SERVICE RATE SECONDS``. It calls SERVICE RATE times a second for SECONDS
with the phrases of :data:`PHRASES` in turn, waits up to 60 s for the answers, and prints one JSON line:
the calls sent, for each the seconds to its answer (null: none came) and the answer's success and message.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from ros_harness import BUILD_DIR
from ros_interfaces import build_interfaces, flavour, use_interfaces

PHRASES = ("the cup", "", "x" * 10_000, "the chair next to the table")


def main() -> None:
    service, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    try:
        import embodied_ros.srv  # noqa: F401 - a colcon workspace (the ROS 2 tree) has them
    except ImportError:
        use_interfaces(build_interfaces(BUILD_DIR / flavour()))  # built by the test's process already: cached
    import rclpy
    from embodied_ros.srv import Ground
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import QoSProfile

    rclpy.init()
    node = rclpy.create_node("ground_flood")
    client = node.create_client(Ground, service, qos_profile=QoSProfile(depth=1000))
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    stop = threading.Event()

    def spin() -> None:
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.05)

    spinner = threading.Thread(target=spin, name="flood-spin")
    spinner.start()
    try:
        report = flood(client, Ground, rate, seconds) if client.wait_for_service(timeout_sec=20) else {
            "error": f"{service} did not appear"}
        print(json.dumps(report), flush=True)
    finally:
        # the spinning thread ends before anything it uses is destroyed: rclpy's executor.shutdown() does not
        # wait for it, and a thread still in rclpy's C++ at exit aborts the process ("terminate called without
        # an active exception", exit -6) after the report was printed
        stop.set()
        spinner.join()
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown()


def flood(client: Any, srv: Any, rate: float, seconds: float) -> dict[str, Any]:
    """Call ``rate`` times a second for ``seconds``, wait up to 60 s for the answers: the report."""
    sent: list[tuple[float, str, Any]] = []
    answered: dict[int, float] = {}
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        i = len(sent)
        future = client.call_async(srv.Request(phrase=PHRASES[i % len(PHRASES)]))
        future.add_done_callback(lambda _f, i=i: answered.setdefault(i, time.monotonic()))
        sent.append((time.monotonic(), PHRASES[i % len(PHRASES)], future))
        time.sleep(max(0.0, start + len(sent) / rate - time.monotonic()))
    deadline = time.monotonic() + 60
    while len(answered) < len(sent) and time.monotonic() < deadline:
        time.sleep(0.05)
    calls = []
    for i, (t, phrase, future) in enumerate(sent):
        result = future.result() if i in answered else None
        calls.append({"length": len(phrase), "seconds": answered[i] - t if i in answered else None,
                      "success": bool(result.success) if result else None, "message": result.message if result else ""})
    return {"sent": len(sent), "calls": calls}

if __name__ == "__main__":
    main()
