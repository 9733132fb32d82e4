"""`embodied-ros ground`, `describe` and `scene-graph`: the language commands over a finished run's memory.

Their parsers import nothing of grounding: a call imports what it needs when it runs (``grounding/cli.py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

FRAME_HELP = "frame index whose camera 'left', 'nearest', 'behind me' refer to (default: the run's last frame)"
ALL_HELP = "speak about every object of the memory, not only the published ones RViz shows (debugging)"


def add_ground_parser(sub: Any) -> None:
    """The ``ground`` subcommand."""
    p_ground = sub.add_parser("ground", help="answer a phrase with the 3D box of an object of a finished run")
    p_ground.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_ground.add_argument("phrase", help='e.g. "the cup on the table next to the monitor"')
    p_ground.add_argument("--json", action="store_true", help="print the answer as JSON")
    p_ground.add_argument("--picture", type=Path, default=None, help="also draw the answer into this PNG")
    p_ground.add_argument("--from-frame", type=int, default=None, metavar="N", help=FRAME_HELP)
    p_ground.add_argument("--all-objects", action="store_true", help=ALL_HELP)
    p_ground.add_argument("--timings", action="store_true", help="print where the call's time went (stderr)")
    p_ground.add_argument("--parser", choices=("auto", "spacy", "rules"), default="auto",
                          help="phrase parser: spaCy where installed (auto), or the rule-based fallback")
    p_ground.set_defaults(func=cmd_ground)


def add_describe_parser(sub: Any) -> None:
    """The ``describe`` subcommand."""
    p_desc = sub.add_parser("describe", help="a referring expression for each object of a finished run "
                                             "(checked by grounding it)")
    p_desc.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_desc.add_argument("--id", type=int, default=None, help="describe only this object")
    p_desc.add_argument("--json", action="store_true", help="print the descriptions as JSON")
    p_desc.add_argument("--dense-captions", type=Path, default=None, metavar="FILE",
                        help="also write them in Scan2Cap's dense-captioning submission form (caption, box as "
                             "8x3 corners, sem_prob, obj_prob)")
    p_desc.add_argument("--scene-id", default="", help="scene id in that file (default: the run folder's name)")
    p_desc.add_argument("--from-frame", type=int, default=None, metavar="N", help=FRAME_HELP)
    p_desc.add_argument("--all-objects", action="store_true", help=ALL_HELP)
    p_desc.set_defaults(func=cmd_describe)


def add_scene_graph_parser(sub: Any) -> None:
    """The ``scene-graph`` subcommand."""
    p_graph = sub.add_parser("scene-graph", help="a finished run's objects and their relations as JSON")
    p_graph.add_argument("run_dir", type=Path, help="output folder of `embodied-ros run` (reads memory.json)")
    p_graph.add_argument("--out", type=Path, default=None, help="write the JSON here (default: print it)")
    p_graph.add_argument("--descriptions", action="store_true", help="add each object's referring expression")
    p_graph.add_argument("--from-frame", type=int, default=None, metavar="N", help=FRAME_HELP)
    p_graph.add_argument("--all-objects", action="store_true", help=ALL_HELP)
    p_graph.set_defaults(func=cmd_scene_graph)


def cmd_ground(args: argparse.Namespace) -> int:
    from ..grounding.cli import ground_command

    return ground_command(args.run_dir, args.phrase, json_out=args.json, picture=args.picture,
                          from_frame=args.from_frame, all_objects=args.all_objects, timings=args.timings,
                          parser=args.parser)


def cmd_describe(args: argparse.Namespace) -> int:
    from ..grounding.cli import describe_command

    return describe_command(args.run_dir, args.id, json_out=args.json, dense_captions=args.dense_captions,
                            scene_id=args.scene_id, from_frame=args.from_frame, all_objects=args.all_objects)


def cmd_scene_graph(args: argparse.Namespace) -> int:
    from ..grounding.cli import scene_graph_command

    return scene_graph_command(args.run_dir, args.out, from_frame=args.from_frame,
                               with_descriptions=args.descriptions, all_objects=args.all_objects)
