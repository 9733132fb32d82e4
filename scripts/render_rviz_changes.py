"""Render what changed in RViz, headless: a synthetic room visited twice, a thing moved (docs/images/rviz_changes.png).

    .venv/bin/python scripts/render_rviz_changes.py [--seed 0] [--frames 60] [--out docs/images/rviz_changes.png]

The room and its second state come from synthetic/revisit.py; ``embodied-ros``'s offline pipeline runs both passes
(the detector is the scene's truth as instance masks, ``LiftedGroundTruthPerceptor``: this picture is about the
changes, not the detector) and writes its bag, with ``/embodied/change_markers``. On the ROS 2 tree of
../shared/ros2 with its RViz overlay under Xvfb (tests/rviz_session.py), RViz opens config/embodied.rviz pointed at
the bag's topics and the synthetic world's frame, ``ros2 bag play`` plays the bag, and the screen is taken once
the play ended: the objects' boxes, a grey ghost where the moved thing stood, an orange arrow to where it went.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import yaml
from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import ros2_tree  # noqa: E402 - the tests' helpers, found through the path above
import rviz_session  # noqa: E402
import rviz_view  # noqa: E402


def write_bag(seed: int, frames: int, out: Path) -> list:
    """Both passes through the pipeline into the run folder ``out``; the history of what changed."""
    from embodied_ros.mapper import SceneMapper
    from embodied_ros.pipeline import run
    from embodied_ros.synthetic import LiftedGroundTruthPerceptor, RevisitSource, SceneConfig, generate_scene, revisit

    config = SceneConfig()
    config = replace(config, trajectory=replace(config.trajectory, n_frames=frames))
    visit = revisit(generate_scene(seed, config))
    mapper = SceneMapper(perceptor=LiftedGroundTruthPerceptor(masks=True, seed=seed))
    run(RevisitSource(visit), mapper, out, n_pictures=1)
    return mapper.memory.changes.log.current()


def rviz_config(out: Path, focus: np.ndarray, yaw: float) -> Path:
    """config/embodied.rviz on the bag's topics, in the synthetic world's frame, looking at ``focus``."""
    config = yaml.safe_load((REPO / "config" / "embodied.rviz").read_text())
    manager = config["Visualization Manager"]
    topics = {"/embodied_perception/markers": "/embodied/markers", "/embodied_perception/occupancy":
              "/embodied/occupancy", "/embodied_perception/change_markers": "/embodied/change_markers"}
    displays = []
    for display in manager["Displays"]:
        topic = display.get("Topic", {}).get("Value")
        if topic is not None and topic not in topics or display.get("Name") == "Occupancy":
            continue  # the camera image (the bag holds the inputs, not the node's image) and the occupancy clutter
        if topic is not None:
            display["Topic"]["Value"] = topics[topic]
            display["Topic"]["Durability Policy"] = "Volatile"
        displays.append(display)
    for display in displays:  # the picture is about the change: the objects' boxes stay, labels and structure go
        if display.get("Topic", {}).get("Value") == "/embodied/markers":
            display["Namespaces"] = {**display["Namespaces"], "labels": False, "unknown_objects": False,
                                     "structure": False}
    manager["Displays"] = displays
    manager["Global Options"]["Fixed Frame"] = "world"
    view = manager["Views"]["Current"]
    view.update({"Target Frame": "<Fixed Frame>", "Distance": 2.8, "Pitch": 1.0, "Yaw": float(yaw),
                 "Focal Point": {"X": float(focus[0]), "Y": float(focus[1]), "Z": float(focus[2])}})
    config["Window Geometry"]["Hide Left Dock"] = True
    path = out / "changes.rviz"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="synthetic room (default 0: a chair moves)")
    parser.add_argument("--frames", type=int, default=60, help="frames of each pass (default 60)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "rviz_changes.png")
    parser.add_argument("--run", type=Path, default=None, help="a run folder this script wrote before (reused)")
    args = parser.parse_args()
    if reason := rviz_session.why_not():
        print(f"cannot render: {reason}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="rviz_changes_"))
    if args.run is not None:
        from embodied_ros.cli.changes import read_changes

        shutil.copytree(args.run, work / "run")
        events = read_changes(work / "run")
    else:
        events = write_bag(args.seed, args.frames, work / "run")
    moves = [e for e in events if e.kind.value == "moved"]
    print("changes: " + "; ".join(e.summary() for e in events))
    if not moves:
        print(f"seed {args.seed}: no move was told; try another seed", file=sys.stderr)
        return 1
    move = moves[0]
    middle = 0.5 * (move.old_box[:3] + move.new_box[:3])
    across = move.new_box[:2] - move.old_box[:2]
    config = rviz_config(work, middle, float(np.arctan2(across[1], across[0]) - np.pi / 2))
    tree = ros2_tree.prepare()
    rviz = rviz_session.with_rviz(tree)
    shot = ros2_tree.LOGS / "rviz_changes.png"
    try:
        rviz.started.append(rviz.start(f"rviz2 -d {config}", "rviz2 for changes"))
        player = rviz.start(f"ros2 bag play {work / 'run'} --rate 4", "bag play for changes")
        rviz.started.append(player)
        if player.wait(600) != 0:
            raise RuntimeError(f"ros2 bag play failed:\n{player.output()[-3000:]}")
        time.sleep(5)  # RViz draws the last markers
        rviz_session.screenshot(rviz, shot)
    finally:
        rviz_session.stop(rviz)
        tree.sh("ros2 daemon stop", timeout=30)
        tree.write_log("rviz_changes.log")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    image = np.asarray(Image.open(shot).convert("RGB"))
    x, y, w, h = rviz_view.render_panel(image, (48, 48, 48))  # config/embodied.rviz's Background Color
    Image.fromarray(image[y:y + h, x:x + w]).save(args.out)  # the 3D view alone
    print(f"{args.out}: {move.summary()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
