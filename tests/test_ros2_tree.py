"""The node as robot users run it, on the real ROS 2 Jazzy of ../shared/ros2 (Cyclone DDS), in child processes.

The README's robot recipe is run as written (tests/ros2_tree.py), then its launch, player, service
and restart lines: real redkitchen frames through ``ros2 run embodied_ros play`` (TF from a
tf2_ros broadcaster), vision_msgs detections, /diagnostics pairing, save_map, a restart with
``load_map_on_start:=true`` answering with the same objects, ``ros2 bag play`` of a bag that
``embodied-ros run`` wrote, Ctrl-C with no traceback and no process left, one-line failures, and
tests/test_ros_node.py again inside that environment. Every command and its output go to
build/ros2_tree/logs (ros2_tree_tests.log: the whole story). Skips with the reason where the tree, its
Debian packages or the data are absent.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import ros2_tree
from ros2_tree import DATA, REPO, Tree, readme_lines, recipe

pytestmark = pytest.mark.skipif(bool(ros2_tree.why_not()), reason=ros2_tree.why_not() or "ready")
NODE = "/embodied_perception"
GROUND = readme_lines(f"ros2 service call {NODE}/ground")[0]  # "the cup on the table"
SAVE = readme_lines(f"ros2 service call {NODE}/save_map")[0]  # {name: ''}
PLAY = next(line for line in recipe()["4"] if line.startswith("ros2 run embodied_ros play"))
LAUNCH = next(line for line in recipe()["4"] if "perception.launch.py camera_namespace:=/k4a" in line)
RESTART = next(line for line in recipe()["5"] if "load_map_on_start:=true" in line)
K4A = next(line for line in recipe()["4"] if "source:=k4a" in line)
KINECT = next(line for line in recipe()["4"] if "kinect.launch.py" in line)


@pytest.fixture(scope="module")
def tree() -> Iterator[Tree]:
    try:
        tree = ros2_tree.prepare()
    except RuntimeError as err:
        pytest.fail(str(err))
    started: list[Any] = []
    tree.started = started
    yield tree
    for process in started:
        process.kill()
    tree.sh("ros2 daemon stop", timeout=30)
    print(f"\nlaunch-level log: {tree.write_log('ros2_tree_tests.log')}")


@pytest.fixture(autouse=True)
def _end_what_the_test_started(tree: Tree) -> Iterator[None]:
    """A test that fails before its Ctrl-C leaves its nodes running: ended here, so the next test does not
    find a second /embodied_perception answering its services and publishing its /diagnostics."""
    before = len(tree.started)
    yield
    for process in tree.started[before:]:
        process.kill()


def _start(tree: Tree, command: str, name: str, **kwargs: Any) -> Any:
    process = tree.start(command, name, **kwargs)
    tree.started.append(process)
    return process


def _diagnostics(tree: Tree, until: tuple[str, str] | Callable[[dict[str, str]], bool] | None = None,
                 tries: int = 10, node: str = f"{NODE}: perception") -> dict[str, str]:
    """The /diagnostics values of the status named ``node`` (the perception node's, not the detector node's);
    with ``until`` (key, value) or a test of the values, the first message that shows it (a node under load may
    still be working through what was sent), or the last one read."""
    values: dict[str, str] = {}
    for _ in range(tries):
        done = tree.sh(f"ros2 topic echo --once --timeout 20 --filter \"m.status[0].name == '{node}'\" "
                       "/diagnostics diagnostic_msgs/msg/DiagnosticArray", timeout=30)
        values = {quoted or plain: value for quoted, plain, value in
                  re.findall(r"key: (?:'([^'\n]*)'|(\S+))\n\s+value: '?([^'\n]*)'?", done.stdout)}
        if until is None or (until(values) if callable(until) else values.get(until[0]) == until[1]):
            break
    return values


def _accounted(diagnostics: dict[str, str]) -> int:
    """Frames the map node paired with their detections or gave up on (detector:=node)."""
    return sum(int(diagnostics.get(k, 0)) for k in ("frames_with_detections", "frames_without_detections"))


def _arrays_accounted(diagnostics: dict[str, str]) -> bool:
    """Every Detection2DArray the map node received paired with its frame, late for it, or without one."""
    return int(diagnostics.get("detections_received", -1)) == sum(
        int(diagnostics.get(k, 0)) for k in ("frames_with_detections", "detections_late", "detections_without_frame"))


def _best(answer: str) -> str:
    """The answer's message and best object (its id, class, score, box, pose, size, observations), one line."""
    match = re.search(r"message='(.*?)', header=.*?best=(.*?), first_seen=", answer, re.S)
    assert match, answer
    return " ".join(" ".join(match.groups()).split())


def _no_traceback(output: str) -> None:
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-3000:]


def test_the_recipe_builds_the_package_beside_cv_bridge_and_the_text_encoder(tree: Tree) -> None:
    install = tree.ws / "install" / "embodied_ros"
    for path in ("lib/embodied_ros/embodied_perception", "lib/embodied_ros/play",
                 "share/embodied_ros/launch/perception.launch.py", "share/embodied_ros/config/params.yaml"):
        assert (install / path).exists(), path
    done = tree.sh("python -c 'import numpy, cv2, cv_bridge, embodied_ros.ros.node, embodied_ros.msg; "
                   "from embodied_ros.grounding.text_encoder import TextEncoder; "
                   "print(cv_bridge.CvBridge().cv2_to_imgmsg(numpy.zeros((2, 2, 3), numpy.uint8), \"bgr8\").encoding, "
                   "numpy.__version__, cv2.__version__, embodied_ros.msg.__file__)'")
    assert done.returncode == 0, done.stdout
    encoding, numpy_version, cv2_version, msg_file = done.stdout.split()[-4:]
    assert encoding == "bgr8" and numpy_version.startswith("1.") and cv2_version.startswith("4.")
    assert msg_file.startswith(str(install))


def test_colcon_with_a_python_that_lacks_ros_modules_stops_with_one_line(tree: Tree) -> None:
    bare = ros2_tree.BUILD / "bare_python"
    if not (bare / "bin" / "python3").exists():
        assert tree.sh(f"/usr/bin/python3 -m venv --without-pip {bare}").returncode == 0
    env = dict(tree.env, PATH=f"{bare}/bin:{tree.env['PATH']}", VIRTUAL_ENV=str(bare))
    scratch = ros2_tree.BUILD / "scratch"
    done = tree.sh(f"cd {tree.ws} && colcon build --packages-select embodied_ros --build-base {scratch}/build "
                   f"--install-base {scratch}/install", env=env, timeout=300, name="colcon build, a bare venv first")
    text = " ".join(done.stdout.split())  # CMake wraps its messages
    assert done.returncode != 0 and "No module named 'em'" not in text
    assert "cannot import ROS's build modules" in text and "--cmake-args -DPython3_EXECUTABLE=/usr/bin/python3" in text


def test_launch_play_services_save_restart_and_ctrl_c_as_the_readme_writes_them(tree: Tree) -> None:
    launch = _start(tree, LAUNCH, "launch")
    assert launch.wait_for("ready:", 240), launch.output()[-3000:]
    assert "rviz2 is not installed" in launch.output()  # rviz:=true without rviz2: a warning, the node runs
    assert "message_filters" in launch.output() and "reliable QoS" in launch.output()
    detections = _start(tree, f"ros2 topic echo {NODE}/detections vision_msgs/msg/Detection3DArray", "detections")
    player = _start(tree, PLAY, "play")
    assert player.wait(180) == 0, player.output()
    assert "published 100 frames" in player.output()
    detections.interrupt()
    assert "class_id:" in detections.output() and "bbox:" in detections.output(), detections.output()[-2000:]
    diagnostics = _diagnostics(tree, until=("pairs", "100"))
    assert diagnostics["images_received"] == "100" and diagnostics["pairs"] == "100", diagnostics
    assert diagnostics["unpaired_messages"] == "0" and diagnostics["state"] == "ready", diagnostics
    answer = tree.sh(GROUND)
    assert "success=True" in answer.stdout and "synonym table only" not in answer.stdout, answer.stdout
    best = _best(answer.stdout)
    saved = tree.sh(SAVE)
    assert "success=True" in saved.stdout, saved.stdout
    n_saved = re.search(r"saved (\d+) objects and (\d+) occupied voxels", saved.stdout).groups()
    refused = tree.sh(SAVE.replace("{name: ''}", "{name: '../../../etc/embodied'}"))
    assert "success=False" in refused.stdout and "refused" in refused.stdout, refused.stdout
    assert launch.interrupt() == 0
    _no_traceback(launch.output())
    assert not launch.session(), "processes left after Ctrl-C"

    restarted = _start(tree, RESTART, "restart")
    assert restarted.wait_for("ready:", 240), restarted.output()[-3000:]
    loaded = re.search(r"loaded (\d+) objects and (\d+) occupied voxels", restarted.output())
    assert loaded and loaded.groups() == n_saved, restarted.output()[-3000:]
    again = tree.sh(GROUND)
    assert _best(again.stdout) == best  # the same object: id, class, score, 9-DoF box, observations
    assert restarted.interrupt() == 0
    _no_traceback(restarted.output())
    assert not restarted.session()


def test_a_flood_of_ground_calls_on_the_launched_node(tree: Tree) -> None:
    """The node as launched (a process of its own), 100 ~/ground calls a second for 3 s from another
    (tests/ros_flood.py): every call answered, none waiting long, perception and the services going on."""
    import json

    launch = _start(tree, LAUNCH, "flood_node")
    assert launch.wait_for("ready:", 240), launch.output()[-3000:]
    player = _start(tree, f"{PLAY} --max-frames 10", "flood_play")
    assert player.wait(180) == 0, player.output()
    done = tree.sh(f"python {REPO}/tests/ros_flood.py {NODE}/ground 100 3", timeout=240, name="ros_flood.py")
    assert done.returncode == 0, done.stdout[-3000:]  # its report printed and rclpy shut down cleanly
    report = json.loads(next(line for line in reversed(done.stdout.splitlines()) if line.startswith("{")))
    seconds = sorted(c["seconds"] for c in report["calls"] if c["seconds"] is not None)
    busy = sum(c["message"].startswith("busy:") for c in report["calls"])
    median = seconds[len(seconds) // 2]
    print(f"launched node: {report['sent']} calls in 3 s, {len(seconds)} answered, median {median:.3f} s, max "
          f"{seconds[-1]:.3f} s, {busy} busy")
    assert report["sent"] >= 250 and len(seconds) == report["sent"] and seconds[-1] < 10.0
    after = tree.sh(GROUND).stdout  # answered as before the flood (whether 10 frames map a cup is not this test's)
    assert "Ground_Response(success=" in after and "busy:" not in after, after
    diagnostics = _diagnostics(tree, until=("pairs", "10"))
    assert diagnostics["pairs"] == "10" and diagnostics["state"] == "ready", diagnostics
    assert launch.interrupt() == 0
    _no_traceback(launch.output())


def test_a_bag_that_embodied_ros_run_wrote_plays_into_the_node(tree: Tree, kitchen_run: Any) -> None:
    topics = ("color_topic:=/rgb/image_raw/compressed depth_topic:=/depth_to_rgb/image_raw/compressedDepth "
              "camera_info_topic:=/rgb/camera_info")  # as embodied-ros run writes them
    launch = _start(tree, f"ros2 launch embodied_ros perception.launch.py world_frame:=world "
                          f"weights:=$HOME/yolox_nano {topics}", "bag_node")
    assert launch.wait_for("ready:", 240), launch.output()[-3000:]
    played = tree.sh(f"ros2 bag play {kitchen_run}", timeout=120, name="ros2 bag play (embodied-ros run's bag)")
    assert played.returncode == 0, played.stdout
    frames = len(list((DATA / "redkitchen").glob("frame-*.color.*"))[::4])
    diagnostics = _diagnostics(tree, until=("pairs", str(frames)))
    assert diagnostics["pairs"] == str(frames) and int(diagnostics["keyframes_processed"]) > 0, diagnostics
    assert "no camera pose" not in launch.output() and int(diagnostics["objects"]) > 0
    assert launch.interrupt() == 0
    _no_traceback(launch.output())


def test_the_detector_as_a_node_of_its_own_maps_over_dds(tree: Tree) -> None:
    """detector:=node: the embodied_detector and embodied_perception nodes, two processes talking only over
    DDS (Detection2DArray between them), fed by the README's player; the map grounds as the one node does."""
    launch = _start(tree, LAUNCH + " detector:=node", "launch detector node")
    assert launch.wait_for("ready: rgb/image_raw -> /embodied_detector/detections", 240), launch.output()[-3000:]
    nodes = tree.sh("ros2 node list").stdout
    assert "/embodied_detector" in nodes and NODE in nodes, nodes
    pids = {line.split("pid ")[1].split("]")[0] for line in launch.output().splitlines() if "process started" in line}
    assert len(pids) == 2, launch.output()[-3000:]  # two processes (rviz2 is not installed here)
    player = _start(tree, PLAY, "play (detector node)")
    assert player.wait(180) == 0, player.output()
    # every frame paired with its detections or given up (the detector keeps up by dropping images, and a frame
    # waits detections_wait for its own: how many go without depends on the machine's load, timings are not
    # pass/fail), every Detection2DArray the map got paired, late or without a frame, and none lost between them
    diagnostics = _diagnostics(tree, until=lambda d: _accounted(d) == 100 and _arrays_accounted(d))
    assert _accounted(diagnostics) == 100 and _arrays_accounted(diagnostics), diagnostics
    assert int(diagnostics["frames_with_detections"]) > 0 and diagnostics["detections_unusable"] == "0", diagnostics
    detector = _diagnostics(tree, node="embodied_detector: detector", until=lambda d: "images_detected" in d)
    assert detector["images_detected"] == diagnostics["detections_received"], (detector, diagnostics)
    print(f"detector node: {detector['images_received']} images, {detector['images_detected']} detected "
          f"({detector['detect_ms']} ms each); map: {diagnostics['frames_with_detections']} frames with detections, "
          + ", ".join(f"{v} {k}" for k, v in diagnostics.items() if k.startswith("without_detections: ")))
    assert int(diagnostics["keyframes_processed"]) > 0 and int(diagnostics["objects"]) > 0, diagnostics
    answer = tree.sh(GROUND)
    assert "success=True" in answer.stdout, answer.stdout
    assert launch.interrupt() == 0
    _no_traceback(launch.output())
    assert not launch.session(), "processes left after Ctrl-C"


@pytest.mark.parametrize("case", ["no model", "no camera", "no venv", "no driver"])
def test_failures_end_with_one_line_and_a_nonzero_exit(tree: Tree, case: str) -> None:
    env = None
    command = LAUNCH.replace("$HOME/yolox_nano", "$HOME/absent") + " load_map_on_star:=true"  # and a typo
    expect = "cannot start: model "
    if case == "no camera":
        command, expect = K4A, "cannot start: camera"
    elif case == "no venv":
        venv = tree.env["VIRTUAL_ENV"]
        env = {k: v for k, v in tree.env.items() if k != "VIRTUAL_ENV"}
        env["PATH"] = ":".join(p for p in tree.env["PATH"].split(":") if not p.startswith(venv))
        command, expect = LAUNCH, "embodied_perception: error: No module named"
    elif case == "no driver":
        command, expect = KINECT, "Azure Kinect ROS driver (azure_kinect_ros_driver) is not installed"
    process = _start(tree, command, f"fails, {case}", env=env)
    code = process.wait(240)
    output = process.output()
    assert code != 0 and expect in output, output[-3000:]
    assert sum(expect in line for line in output.splitlines()) == 1, output[-3000:]
    _no_traceback(output)
    assert not process.session()
    if case == "no model":
        assert "ignored launch argument(s) load_map_on_star" in output
    if case == "no driver":
        assert "embodied_perception" not in output  # nothing was started


def test_the_node_tests_pass_inside_the_ros2_tree_too(tree: Tree) -> None:
    """test_ros_node.py, test_ros_parts.py and the node's faults (test_ros_node_faults.py: its TF cases need
    tf2_ros, which only this tree has) pass here, nothing skipped."""
    done = tree.sh(f"cd {REPO} && python -m pytest -q -p no:cacheprovider -rs tests/test_ros_node.py "
                   "tests/test_ros_parts.py tests/test_ros_node_faults.py tests/test_ros_detector.py", timeout=1800,
                   name="pytest the node, its parts, faults and detector node (Cyclone)")
    summary = [line for line in done.stdout.splitlines() if re.fullmatch(r"\d+ passed.* in [\d.]+s.*", line.strip())]
    assert done.returncode == 0 and len(summary) == 1 and "skipped" not in summary[0], done.stdout[-4000:]
