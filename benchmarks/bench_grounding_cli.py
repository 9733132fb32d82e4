"""Benchmark: one `embodied-ros ground` call, a new process each time, and where its time goes.

Run: .venv/bin/python benchmarks/bench_grounding_cli.py RUN_DIR [--calls 5]

RUN_DIR is the output of ``embodied-ros run`` (e.g. on ../shared/data/redkitchen). For each parser (spaCy and
the rule-based fallback) it runs ``--calls`` ground commands, each with a phrase not seen before (so the
parse is never cached), and prints the wall time of the whole process (p50, max) and, from ``--timings``,
the stages inside it: reading the memory, the text-embedding cache, building the grounder (loading the
parser; label embeddings come from the cache) and the grounding call. What is left is Python's start-up
and the command's imports, measured alone as ``python -c "import embodied_ros.cli"``.
Target (issue 31): within 2 s with the parser and the encoder, on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

EXE = Path(sys.executable).with_name("embodied-ros")
PHRASES = ("the cup on the table near chair {i}", "the white cup next to the book {i}",
           "the chair {i} closest to the monitor", "the book on the table {i}")


def _wall(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--calls", type=int, default=5, help="ground commands per parser")
    args = parser.parse_args()
    imports = [_wall([sys.executable, "-c", "import embodied_ros.cli"])[0] for _ in range(3)]
    print(f"python start + import embodied_ros.cli: p50 {statistics.median(imports):.2f} s")
    spacy = [_wall([sys.executable, "-c", "from embodied_ros.grounding.dependency import load_pipeline; "
                    "import embodied_ros.cli; load_pipeline()"])[0] for _ in range(3)]
    print(f"  ... + spaCy imported and its pipeline loaded: p50 {statistics.median(spacy):.2f} s")
    stamp = int(time.time())
    for name in ("auto", "rules"):
        walls, stages = [], defaultdict(list)
        for i in range(args.calls):
            phrase = PHRASES[i % len(PHRASES)].format(i=f"{stamp}{i}")
            wall, err = _wall([str(EXE), "ground", str(args.run_dir), phrase, "--timings", "--parser", name])
            walls.append(wall)
            for stage, ms in re.findall(r"([a-z ,()]+?) (\d+) ms", err.split("timings:", 1)[-1]):
                stages[stage.strip(" ,")].append(float(ms))
        inside = sum(statistics.median(v) for v in stages.values()) / 1000
        print(f"parser {'spaCy' if name == 'auto' else 'rules'}: whole call p50 {statistics.median(walls):.2f} s, "
              f"max {max(walls):.2f} s ({args.calls} calls, a new phrase each)")
        for stage, ms in stages.items():
            print(f"  {stage:40s} p50 {statistics.median(ms):6.0f} ms")
        rest = 1000 * (statistics.median(walls) - inside)
        print(f"  {'python start-up, imports and exit (the rest)':40s} p50 {rest:6.0f} ms")


if __name__ == "__main__":
    main()
