"""`embodied-ros play`: a recording published as the Azure Kinect ROS driver's topics. The only module outside
ros/ that imports it (tests/test_import_graph.py's ROS_ENTRY_POINTS): the parser takes ros/player.py's options,
which import no ROS; rclpy is imported when the command runs."""

from __future__ import annotations

import argparse
from typing import Any


def add_play_parser(sub: Any) -> None:
    """The ``play`` subcommand."""
    from ..ros.player import add_play_arguments

    p_play = sub.add_parser("play", help="publish a recording as the Azure Kinect ROS driver's topics + TF "
                                         "(needs ROS 2), to try the node without a camera")
    add_play_arguments(p_play)
    p_play.set_defaults(func=cmd_play)


def cmd_play(args: argparse.Namespace) -> int:
    from ..ros.player import play

    play(args)
    return 0
