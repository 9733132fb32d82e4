"""Render a kitchen run in RViz, headless, and write the picture the README shows (docs/images/rviz_kitchen.png).

    .venv/bin/python scripts/render_rviz_kitchen.py [--rate 3] [--out docs/images/rviz_kitchen.png]

The same run as tests/test_rviz.py (tests/rviz_session.py): the README's launch line with ``rviz:=true`` and
its player line streaming the 100 redkitchen frames, on the ROS 2 tree of ../shared/ros2 with its RViz
overlay, under Xvfb; the screenshot is taken once the node's markers settle. A lower ``--rate`` gives the
node time for more keyframes (RViz renders in software on the same CPU). Needs what that test needs
(it says what is missing).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

import ros2_tree  # noqa: E402 - the tests' helpers, found through the path above
import rviz_session  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=3.0, help="frames per second the player streams (default 3)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images" / "rviz_kitchen.png")
    args = parser.parse_args()
    if reason := rviz_session.why_not():
        print(f"cannot render: {reason}", file=sys.stderr)
        return 1
    steps = ros2_tree.recipe()["4"]
    launch = next(line for line in steps if "perception.launch.py camera_namespace:=/k4a" in line)
    play = next(line for line in steps if line.startswith("ros2 run embodied_ros play"))
    play = play.replace("--rate 5", f"--rate {args.rate:g}")
    tree = ros2_tree.prepare()
    rviz = rviz_session.with_rviz(tree)
    try:
        shot = rviz_session.capture(rviz, launch, play, ros2_tree.LOGS / "rviz_kitchen_docs.png")
    finally:
        rviz_session.stop(rviz)
        tree.sh("ros2 daemon stop", timeout=30)
        tree.write_log("rviz_docs.log")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot.screenshot, args.out)
    labels = sorted(t["text"] for t in shot.sent["labels"] if t["text"])
    print(f"{args.out}: {len(labels)} objects ({', '.join(labels)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
