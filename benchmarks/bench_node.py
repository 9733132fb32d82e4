"""The embodied_perception node end to end with real rclpy, this code against a baseline in the same run.

    .venv/bin/python benchmarks/bench_node.py [--baseline main] [--rate 3] [--frames 100] [--qos default]
        [--scene redkitchen_walk --stride 2 --keyframes policy]

Replays the frames of ``--scene`` (redkitchen by default; ../shared/data or $EMBODIED_ROS_DATA) as Image +
CameraInfo + PoseStamped at ``--rate`` Hz (stamped when published; every frame a keyframe,
keyframe_max_interval 0, or with ``--keyframes policy`` the node's own keyframe policy) from a
player process (this checkout's, for both versions: across the middleware, as a driver publishes;
``--publisher inline``: from the node's own process) into a node with the default detector, run
in-process with a subscriber of its markers, on this Python's ROS 2 (the venv's wheels: Fast DDS; a
sourced ROS 2 such as ../shared/ros2: Cyclone DDS). Prints per code version: frames published,
received and paired, keyframes processed and dropped, the node's ``stage_publish_ms`` and keyframe
latency (median over keyframes), image stamp -> markers received (median, p90), how every published
frame was accounted for (processed, skipped as not a keyframe, replaced or stale, bad input; the
rest is lost), the longest run of frames skipped in a row, and the peak RSS of the node's process
(the node, its model and this harness's subscriber; the player runs apart). The baseline is
``git archive REF`` of this repository, run the same way in its own process just before this code
(each in a fresh process: one rclpy, one node). ``--qos default`` keeps each version's default input
QoS; ``reliable``/``best_effort`` sets it (in its own parameter name per version). ``--split`` (issue 40)
compares, in one run, this code's node as it is (the detector inside) with the split pipeline: the
``embodied_detector`` node in a process of its own publishing vision_msgs/Detection2DArray, and the
map node with ``detections_topic`` set; it also prints whether both published the same objects
(class, id order, boxes within 1 mm). The split needs vision_msgs: run it in a sourced ROS 2 (the tree
of ../shared/ros2). Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from baseline_runs import baseline_tree, print_result, run_child

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("EMBODIED_ROS_DATA", REPO.parent / "shared" / "data"))


def _qos_params(qos: str) -> dict[str, object]:
    """The input-QoS parameter of this code version: input_qos (now) or sensor_qos (before issue 21)."""
    from embodied_ros.ros.config import NodeConfig

    fields = NodeConfig.__dataclass_fields__
    if qos == "default":
        return {}
    if "input_qos" in fields:
        return {"input_qos": qos}
    return {"sensor_qos": qos == "best_effort"}


def _harness_of(code: Path) -> tuple[object, object]:
    """The in-process harness and interface builder of a code tree: tests/ now, embodied_ros/ros/ before issue 33."""
    if (code / "tests" / "ros_harness.py").is_file():
        sys.path.insert(0, str(code / "tests"))
        import ros_harness
        import ros_interfaces

        return ros_harness, ros_interfaces
    from embodied_ros.ros import harness, interfaces_build

    return harness, interfaces_build


def measure(args: argparse.Namespace) -> dict[str, object]:
    """Run the node on the frames with whatever embodied_ros this process imports; the figures as a dict."""
    import embodied_ros

    harness, interfaces = _harness_of(Path(embodied_ros.__file__).resolve().parents[1])
    FramePublisher, InProcessRos = harness.FramePublisher, harness.InProcessRos  # noqa: N806
    isolate_graph, wait_until, use_interfaces = harness.isolate_graph, harness.wait_until, interfaces.use_interfaces

    isolate_graph()
    use_interfaces(Path(args.install))
    from visualization_msgs.msg import MarkerArray

    from embodied_ros.network.registry import build_perceptor
    try:
        from embodied_ros.recordings import open_source
    except ImportError:  # a baseline from before recordings.py
        from embodied_ros.sources import open_source

    count = 1 if args.publisher == "process" else args.frames + 1  # the player process reads its own frames
    detector_process = _start_detector() if args.split else None
    frames = [f for f in open_source(DATA / args.scene).frames(stride=args.stride, max_frames=count)
              if not isinstance(f, Exception)]
    ros = InProcessRos()
    from embodied_ros.network.weights import DEFAULT_MODEL

    folder = {"yolo-fastest-1.1-xl": "yolo_fastest", "yolox-nano": "yolox_nano"}[DEFAULT_MODEL]
    split = {"detections_topic": "/embodied_detector/detections"} if args.split else {}
    perceptor = None if args.split else build_perceptor(DEFAULT_MODEL, weights=DATA / folder, backend="onnxruntime")
    node = ros.node(perceptor, pose_topic="camera_pose", world_frame="world",
                    **({"keyframe_max_interval": 0.0} if args.keyframes == "all" else {}),
                    **_qos_params(args.qos), **split, **dict(json.loads(args.params)))
    if detector_process is not None:
        _wait_for_detector(node, detector_process)
    ready = getattr(node, "ready", None)  # this code loads the network on a thread
    if ready is not None:
        wait_until(ready.is_set, 300)
    rss_ready = _rss_mb()
    stages: list[dict[str, float]] = []
    process = node.worker._process  # record every keyframe's stages (both versions call worker._process)

    def recorded(frame: object) -> dict[str, float]:
        result = process(frame)
        stages.append(dict(result))
        return result

    node.worker._process = recorded
    discovery_ms: list[tuple[float, float]] = []  # each keyframe's discovery, and of it the part done ahead (outside
    # its "memory" stage: alongside the network, or while the frame waited for its detections)
    mapper = getattr(node, "mapper", None)
    if mapper is not None:
        step = mapper.step

        def stepped(frame: object, *a: object, **k: object) -> object:
            result = step(frame, *a, **k)
            discovery_ms.append((1000.0 * getattr(result.update, "discovery_s", 0.0),
                                 1000.0 * getattr(result.update, "discovery_ahead_s", 0.0)))
            return result

        mapper.step = stepped
    submitted: list[tuple[int, bool]] = []  # (stamp, taken as a keyframe) of every frame submitted
    submit = node.worker.submit

    ages: list[float] = []  # image stamp -> handed to the worker, seconds (the input side of the latency)

    def counted(frame: object) -> bool:
        ages.append(time.time() - frame.stamp_ns * 1e-9)
        taken = submit(frame)
        submitted.append((frame.stamp_ns, taken))
        return taken

    node.worker.submit = counted
    processed_stamps: set[int] = set()
    processed_frames: list[int] = []  # the node's frame numbers (the stamps differ from run to run)
    process_inner = recorded

    def recorded_stamp(frame: object) -> dict[str, float]:
        result = process_inner(frame)
        processed_stamps.add(frame.stamp_ns)
        processed_frames.append(frame.index)
        return result

    node.worker._process = recorded_stamp
    latencies: list[float] = []

    def on_markers(data: bytes) -> None:  # raw CDR: the first marker's header stamp follows the count
        sec, nanosec = struct.unpack_from("<iI", data, 8)
        latencies.append(time.time() - (sec + nanosec * 1e-9))

    # raw: turning thousands of marker points into Python objects would load this process's GIL, not the node's
    ros.client.create_subscription(MarkerArray, "/embodied_perception/markers", on_markers, 10, raw=True)
    publisher = FramePublisher(ros.client)
    publisher.wait_for_subscribers()
    publisher.publish(frames[0], settle=0.3)  # warm-up keyframe (ONNX Runtime's first run)
    wait_until(lambda: latencies, 120)
    node.worker.wait_idle(60)
    time.sleep(0.5)
    latencies.clear()
    stages.clear()
    discovery_ms.clear()
    submitted.clear()
    processed_stamps.clear()
    processed_frames.clear()
    ages.clear()
    counters = ("received", "keyframes", "processed", "dropped", "failed", "stale", "not_keyframes", "depth_fused")
    before = {k: getattr(node.worker.stats, k, 0) for k in counters}  # the baseline lacks some
    problems0 = sum(node.problems.values())
    pairs0 = _pairs(node)
    published = len(frames) - 1
    if args.publisher == "process":  # as a driver: another process (this checkout's player), across the middleware
        player = subprocess.run(
            [sys.executable, "-c", "import sys; from embodied_ros.ros.player import main; sys.exit(main(sys.argv[1:]))",
             str(DATA / args.scene), "--stride", str(args.stride), "--max-frames", str(args.frames + 1),
             "--rate", str(args.rate), "--pose-topic", "camera_pose", "--no-tf", "--wait-subscribers", "30",
             "--world-frame", "world"],
            env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])),
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if "published " not in player.stdout:
            raise RuntimeError(f"the player failed: {player.stdout[-2000:]}")
        published = int(player.stdout.split("published ")[1].split()[0])
    else:  # in this process
        start = time.perf_counter()
        for i, frame in enumerate(frames[1:]):
            publisher.publish(frame)
            time.sleep(max(0.0, start + (i + 1) / args.rate - time.perf_counter()))
    node.worker.wait_idle(120)
    time.sleep(1.0)
    stats = node.worker.stats
    counts = {k: getattr(stats, k, 0) - before[k] for k in counters}
    problems = sum(node.problems.values()) - problems0
    # Lost unaccounted: published but neither processed nor skipped for a stated reason (not a keyframe,
    # replaced, stale), nor reported as bad input.
    without = sum(node.detections.pairing.without.values()) if args.split else 0  # frames whose detections never came
    accounted = (counts["processed"] + counts["failed"] + counts["dropped"] + counts["not_keyframes"] + problems
                 + without)
    keys = [stamp in processed_stamps for stamp, _ in submitted]
    gaps, run = [], 0
    for key in keys:
        run = 0 if key else run + 1
        gaps.append(run)
    publish_ms = [1000 * s["publish"] for s in stages if "publish" in s]
    per_keyframe = [{k: 1000.0 * v for k, v in s.items()} for s in stages]
    for ms, (disc, ahead) in zip(per_keyframe, discovery_ms, strict=False):  # discovery apart from the memory's work
        ms["memory"] -= disc - ahead
        ms["discovery"] = disc
    names = list(per_keyframe[-1]) if per_keyframe else []
    stage_sum = {k: float(sum(ms.get(k, 0.0) for ms in per_keyframe)) for k in names}
    map_ms = sum(v for k, v in stage_sum.items() if k not in ("network", "publish"))
    latency_ms = [1000 * sum(s.values()) for s in stages]  # processing time of each keyframe
    result = {
        "code": str(Path(embodied_ros.__file__).parents[1]), "published": published,
        "paired": _pairs(node) - pairs0, "frames_submitted": counts["received"],
        "keyframes": counts["keyframes"], "processed": counts["processed"], "dropped": counts["dropped"],
        "stale": counts["stale"],
        "not_keyframes": counts["not_keyframes"], "depth_fused": counts["depth_fused"],
        "lost": published - accounted, "most_skipped_in_a_row": max(gaps, default=0),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "rss_ready_mb": rss_ready, "rss_end_mb": _rss_mb(),
        "publish_ms_median": float(np.median(publish_ms)) if publish_ms else None,
        "publish_ms_p90": float(np.percentile(publish_ms, 90)) if publish_ms else None,
        "keyframe_ms_median": float(np.median(latency_ms)) if latency_ms else None,
        "markers_latency_ms_median": float(np.median(latencies) * 1000) if latencies else None,
        "markers_latency_ms_p90": float(np.percentile(latencies, 90) * 1000) if latencies else None,
        "markers_received": len(latencies), "problems": dict(node.problems),
        "input_age_ms_median": float(np.median(ages) * 1000) if ages else None,
        "stages_ms_median": {k: float(np.median([ms[k] for ms in per_keyframe if k in ms])) for k in names},
        "stages_ms_per_keyframe": {k: v / max(len(per_keyframe), 1) for k, v in stage_sum.items()},
        "stages_ms_per_frame": {k: v / max(published, 1) for k, v in stage_sum.items()},
        "map_over_detector": map_ms / stage_sum["network"] if stage_sum.get("network") else None,
        "frames_without_detections": without,
        "processed_frames": sorted(processed_frames),
        "objects": [[int(o.id), o.class_name, [float(v) for v in o.box]]
                    for o in node.mapper.memory.published_objects()],
    }
    ros.close([node])
    if detector_process is not None:
        detector_process.send_signal(2)
        detector_process.wait(30)
    return result


def _start_detector() -> subprocess.Popen:
    """The embodied_detector node in a process of its own (this checkout's), the default model on ONNX Runtime."""
    from embodied_ros.network.weights import DEFAULT_MODEL

    folder = {"yolo-fastest-1.1-xl": "yolo_fastest", "yolox-nano": "yolox_nano"}[DEFAULT_MODEL]
    return subprocess.Popen(
        [sys.executable, "-c", "from embodied_ros.ros.detector_node import main; main()", "--ros-args",
         "-p", f"weights:={DATA / folder}", "-p", "backend:=onnxruntime", "-p", "input_qos:=reliable"],
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])),
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_for_detector(node: object, process: subprocess.Popen, timeout: float = 300.0) -> None:
    """Until the detector node's Detection2DArray publisher is seen (it creates it before loading its model)
    and a first image would be detected: its diagnostics say ready."""
    import time as _time

    deadline = _time.monotonic() + timeout
    while _time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError("the embodied_detector process ended")
        if node.count_publishers("/embodied_detector/detections") and _detector_ready(node):
            return
        _time.sleep(0.5)
    raise RuntimeError("the embodied_detector node did not become ready")


_READY: list[bool] = []


def _detector_ready(node: object) -> bool:
    """Whether the detector's /diagnostics said state ready (one subscription, kept)."""
    if not _READY:
        from diagnostic_msgs.msg import DiagnosticArray

        _READY.append(False)
        node.create_subscription(DiagnosticArray, "/diagnostics", lambda m: _READY.__setitem__(0, _READY[0] or any(
            s.name.startswith("embodied_detector") and s.message == "ready" for s in m.status)), 10)
    return _READY[0]


def _rss_mb() -> float:
    """This process's resident memory now (Linux /proc), MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _pairs(node: object) -> int:
    inputs = getattr(node, "inputs", None)
    return inputs.paired if inputs is not None else node.assembler.n_frames  # before: frames assembled = pairs


def _run_child(code: Path, args: argparse.Namespace, install: Path, params: str = "{}",
               split: bool = False) -> dict[str, object]:
    return run_child(code, __file__, ["--child", "--install", str(install), "--rate", str(args.rate), "--frames",
                                      str(args.frames), "--stride", str(args.stride), "--qos", args.qos,
                                      "--publisher", args.publisher, "--params", params, "--scene", args.scene,
                                      "--keyframes", args.keyframes] + (["--split"] if split else []))


def _fmt(value: object, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="main", help="git ref to compare with ('' = this code only)")
    parser.add_argument("--frames", type=int, default=100, help="frames published after the warm-up one")
    parser.add_argument("--rate", type=float, default=3.0, help="frames per second published")
    parser.add_argument("--stride", type=int, default=1, help="use every k-th frame of the scene")
    parser.add_argument("--scene", default="redkitchen", help="recording under the data folder (e.g. redkitchen_walk)")
    parser.add_argument("--keyframes", default="all", choices=["all", "policy"],
                        help="every frame a keyframe (default), or the node's keyframe policy")
    parser.add_argument("--qos", default="default", choices=["default", "reliable", "best_effort"])
    parser.add_argument("--publisher", default="process", choices=["process", "inline"],
                        help="frames from a player process (default; as a driver) or from the node's process")
    parser.add_argument("--params", default="{}",
                        help='node parameters for this code\'s run, as JSON (e.g. \'{"keyframe_max_wait": 0}\')')
    parser.add_argument("--split", action="store_true",
                        help="also run the split pipeline (embodied_detector node + map node) after this code's node")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--install", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print_result(measure(args))
        return 0
    sys.path.insert(0, str(REPO))  # this checkout's embodied_ros, also where a colcon install is on PYTHONPATH
    sys.path.insert(0, str(REPO / "tests"))  # its in-process harness

    from ros_harness import BUILD_DIR, prepare
    from ros_interfaces import build_interfaces, flavour

    reason = prepare()
    if reason:
        print(f"bench_node: skipped: {reason}")
        return 0
    if not all((DATA / d).is_dir() for d in (args.scene, "yolo_fastest", "yolox_nano")):
        print(f"bench_node: skipped: real data not found in {DATA}")
        return 0
    import rclpy

    install = BUILD_DIR / flavour() / "install"
    rmw = os.environ.get("RMW_IMPLEMENTATION") or ("rmw_fastrtps_cpp (wheels)" if flavour() == "wheels"
                                                   else "rmw_cyclonedds_cpp (sourced)")
    keyframes = "every frame a keyframe" if args.keyframes == "all" else "the node's keyframe policy"
    print(f"bench_node: {args.frames} {args.scene} frames (every {args.stride}.) at {args.rate:g} Hz from "
          f"{args.publisher} publisher, {keyframes}, default detector, input QoS {args.qos}; rclpy "
          f"{Path(rclpy.__file__).parent}, {rmw}; {os.cpu_count()} cores")
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline:
            # its own msg/ and srv/, built like ours
            code = baseline_tree(args.baseline, Path(tmp), ("embodied_ros", "tests", "msg", "srv", "CMakeLists.txt",
                                                            "package.xml"))
            runs.append((f"baseline ({args.baseline})",
                         _run_child(code, args, build_interfaces(BUILD_DIR / f"{flavour()}-baseline", source=code))))
        runs.append(("this code", _run_child(REPO, args, install, args.params)))
        if args.split:
            runs.append(("split (detector node)", _run_child(REPO, args, install, args.params, split=True)))
    keys = [("published", "frames published", 0), ("paired", "frames paired", 0),
            ("keyframes", "keyframes the policy selected", 0), ("processed", "keyframes processed", 0),
            ("dropped", "keyframes skipped (replaced, stale)", 0), ("stale", "  of which stale", 0),
            ("not_keyframes", "frames not keyframes (policy)", 0), ("depth_fused", "skipped frames' depth fused", 0),
            ("lost", "frames lost unaccounted", 0),
            ("frames_without_detections", "frames without detections", 0),
            ("most_skipped_in_a_row", "most frames skipped in a row", 0),
            ("publish_ms_median", "stage_publish_ms median", 1),
            ("publish_ms_p90", "stage_publish_ms p90", 1), ("keyframe_ms_median", "keyframe processing, ms median", 0),
            ("input_age_ms_median", "image stamp -> worker, ms median", 0),
            ("markers_latency_ms_median", "image stamp -> markers, ms median", 0),
            ("markers_latency_ms_p90", "image stamp -> markers, ms p90", 0),
            ("map_over_detector", "map / detector (per keyframe)", 2),
            ("rss_ready_mb", "RSS of the node's process when ready, MB", 0),
            ("rss_end_mb", "RSS of the node's process at the end, MB", 0),
            ("peak_rss_mb", "peak RSS of the node's process, MB", 0)]
    print(f"{'':38s}" + "".join(f"{name:>24s}" for name, _ in runs))
    for key, label, digits in keys:
        print(f"{label:38s}" + "".join(f"{_fmt(r[key], digits):>24s}" for _, r in runs))
    names = [k for _, r in runs for k in r["stages_ms_per_keyframe"]]
    for k in dict.fromkeys(names):
        for what, label in (("stages_ms_per_keyframe", "per keyframe"), ("stages_ms_per_frame", "per frame")):
            print(f"{k + ', ms ' + label + ' (mean)':38s}"
                  + "".join(f"{_fmt(r[what].get(k), 1):>24s}" for _, r in runs))
    for name, r in runs:
        stages = ", ".join(f"{k} {v:.1f}" for k, v in r["stages_ms_median"].items())
        print(f"{name} ({r['code']}): stages ms (median) {stages}; frames submitted {r['frames_submitted']}; "
              f"skipped frames {r['problems'] or 'none'}")
    if args.split:
        _compare_objects(runs[-2], runs[-1])
    return 0


def _compare_objects(a: tuple[str, dict], b: tuple[str, dict]) -> None:
    """Same published objects: class and id in order, boxes within 1 mm."""
    oa, ob = a[1]["objects"], b[1]["objects"]
    classes = [c for _, c, _ in oa] == [c for _, c, _ in ob]
    order = [int(k) for k in np.argsort([i for i, _, _ in oa])] == [int(k) for k in np.argsort([i for i, _, _ in ob])]
    ids = [i for i, _, _ in oa] == [i for i, _, _ in ob]
    same = classes and order and len(oa) == len(ob)
    gap = max((float(np.abs(np.subtract(x[2], y[2])).max()) for x, y in zip(oa, ob, strict=False)), default=0.0)
    print(f"published objects: {a[0]} {len(oa)}, {b[0]} {len(ob)}; same classes in the same id order: {same} "
          f"(the same id numbers: {ids}); largest box difference {1000 * gap:.3f} mm "
          f"({'within' if same and gap <= 1e-3 else 'NOT within'} 1 mm)")
    pa, pb = set(a[1].get("processed_frames", ())), set(b[1].get("processed_frames", ()))
    print(f"frames processed by one only: {a[0]} {sorted(pa - pb)}, {b[0]} {sorted(pb - pa)}")
    for (i, c, box), other in zip(oa, ob + [None] * len(oa), strict=False):
        print(f"  #{i} {c}: " + ("missing" if other is None else f"#{other[0]} {other[1]}, "
                                 f"{1000 * float(np.abs(np.subtract(box, other[2])).max()):.3f} mm"))


if __name__ == "__main__":
    sys.exit(main())
