"""The cli/ package put together: every command in its place and order, `python -m embodied_ros.cli` the same
command line as `embodied-ros`, and the data folder found beside the checkout wherever the module sits."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

from embodied_ros.cli import build_parser, default_data_dir, main

COMMANDS = ("run", "inspect", "ground", "describe", "scene-graph", "changes", "play", "export", "train", "calibrate",
            "demo")


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_is_there_in_the_order_help_lists_it() -> None:
    commands = _subcommands(build_parser())
    assert tuple(commands) == COMMANDS
    for name, sub in commands.items():  # each its own parser, answering for itself
        assert sub.prog == f"embodied-ros {name}"
        assert callable(sub.get_default("func")), name


def test_run_and_changes_share_the_run_options_but_not_a_required_out() -> None:
    commands = _subcommands(build_parser())
    options = {name: {o for a in commands[name]._actions for o in a.option_strings} for name in ("run", "changes")}
    assert options["run"] - options["changes"] == set()
    out = {name: next(a for a in commands[name]._actions if "--out" in a.option_strings) for name in options}
    assert out["run"].required and not out["changes"].required


def test_python_dash_m_is_the_same_command_line(capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as done:
        main(["ground", "--help"])
    assert done.value.code == 0
    in_process = capsys.readouterr().out
    env = {**os.environ, "COLUMNS": "100", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "embodied_ros.cli", "ground", "--help"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == in_process and "usage: embodied-ros ground" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "embodied_ros.cli", "run", "--bogus"], capture_output=True,
                         text=True, timeout=120, env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("embodied-ros: error:"), bad.stderr


def test_the_data_folder_is_beside_the_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBODIED_ROS_DATA", raising=False)
    checkout = Path(__file__).resolve().parents[1]
    assert default_data_dir() == checkout.parent / "shared" / "data"
    monkeypatch.setenv("EMBODIED_ROS_DATA", "/somewhere/else")
    assert default_data_dir() == Path("/somewhere/else")


def test_building_the_parser_loads_no_commands_machinery() -> None:
    """Every call builds the whole parser: a command's models, grounding, bags and ROS are imported when it runs,
    so `ground` stays a quick call and `run` loads no language model."""
    heavy = ("embodied_ros.grounding", "embodied_ros.mapper", "embodied_ros.pipeline", "embodied_ros.training",
             "rosbags", "rclpy", "torch", "onnx", "onnxruntime", "scipy.spatial", "tqdm", "spacy")
    code = ("import sys; from embodied_ros.cli import build_parser; build_parser(); "
            f"print(sorted(m for m in sys.modules if m.startswith({heavy!r})))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
