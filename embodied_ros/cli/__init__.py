"""`embodied-ros`: the command line (run over a recording, inspect one, ground, demo, ...)."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import NoReturn

from ..display_text import escaped_output
from ..errors import EmbodiedError, os_error_line
from .changes import add_changes_parser
from .demo_command import add_demo_parser
from .ground import add_describe_parser, add_ground_parser, add_scene_graph_parser
from .models import add_calibrate_parser, add_export_parser, add_train_parser
from .options import default_data_dir
from .play import add_play_parser
from .run import add_inspect_parser, add_run_parser

__all__ = ["build_parser", "default_data_dir", "main"]

# One per subcommand, in the order --help lists them; each module holds its command's options and its cmd_*.
SUBCOMMANDS = (add_run_parser, add_inspect_parser, add_ground_parser, add_describe_parser, add_scene_graph_parser,
               add_changes_parser, add_play_parser, add_export_parser, add_train_parser, add_calibrate_parser,
               add_demo_parser)


class _Parser(argparse.ArgumentParser):
    """argparse answering a bad option with one line, as every other error is (the usage is a --help away)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"embodied-ros: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="embodied-ros", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for add_parser in SUBCOMMANDS:
        add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    with escaped_output():  # user text (phrases, paths) never drives the terminal
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args))
    except EmbodiedError as err:
        print(f"embodied-ros: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # one the commands did not expect (a read-only cache, a vanished file): still one line
        print(f"embodied-ros: error: {os_error_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("embodied-ros: interrupted", file=sys.stderr)
        return 130
