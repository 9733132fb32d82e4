"""A benchmark's measurement of this code against a git ref, each in a fresh process of its own: the
ref's package from ``git archive`` (no git state changes), and the child's result read back from its
``RESULT <json>`` line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULT = "RESULT "


def baseline_tree(ref: str, into: Path, paths: tuple[str, ...] = ("embodied_ros", "msg", "srv")) -> Path:
    """``git archive REF`` of ``paths`` of this repository, extracted into ``into / "code"``."""
    archive = into / "baseline.tar"
    with open(archive, "wb") as out:
        subprocess.run(["git", "-C", str(REPO), "archive", ref, *paths], stdout=out, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "code", filter="tar") if sys.version_info >= (3, 12) else tar.extractall(into / "code")
    return into / "code"


def print_result(result: object) -> None:
    """The child's side: its result, on the line the parent reads."""
    print(RESULT + json.dumps(result), flush=True)


def run_child(code: Path, script: str, argv: list[str]) -> dict[str, object]:
    """``script argv`` in a fresh interpreter importing embodied_ros from ``code``; its printed result.

    Raises:
        SystemExit: the child failed or printed no result (its output's tail is printed first).
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(Path(script).resolve()), *argv], env=env, cwd=code,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode or not lines:
        print(done.stdout[-4000:])
        raise SystemExit(f"{Path(script).stem}: the run in {code} failed")
    return json.loads(lines[-1][len(RESULT):])
