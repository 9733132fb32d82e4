"""Benchmark: how long a frame takes for the widest camera a run accepts, and how soon SIGTERM ends a run.

Run: .venv/bin/python benchmarks/bench_stop.py [--data ../shared/data] [--frames 12] [--after 4]

For two cameras on the same redkitchen frames, the kitchen's own (57 x 45 deg) and the widest that
``sources/camera_checks.py`` lets run (an image edge 84.9 deg from the optical axis: 170 x 166 deg, an
"unusual camera"), it runs ``embodied-ros run`` in a child process, sends SIGTERM once the progress
bar shows ``--after`` frames done, and prints: the mean milliseconds per frame of a whole run (its own
report), the seconds from the signal to the end of the frame in progress (the next progress update), and
to the process's exit (the map so far and its pictures written). Issue 43: a signal stops a frame
within a second.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAMERAS = {"redkitchen (57 x 45 deg)": "585 0 320\n0 585 240\n0 0 1\n",
           "widest accepted (170 x 166 deg)": "28.6 0 320\n0 28.6 240\n0 0 1\n"}
_PROGRESS = re.compile(r"(\d+)/(\d+) \[")


def _kitchen(data: Path, dst: Path, intrinsics: str, frames: int) -> Path:
    dst.mkdir()
    shutil.copy(data / "redkitchen" / "gravity-direction.txt", dst)
    (dst / "camera-intrinsics.txt").write_text(intrinsics)
    for n in range(0, 10 * frames, 10):
        for kind in ("color.jpg", "depth.png", "pose.txt"):
            shutil.copy(data / "redkitchen" / f"frame-{n:06d}.{kind}", dst)
    return dst


def _run(source: Path, out: Path, weights: Path, stop_after: int | None) -> tuple[str, float | None, float | None]:
    """(stdout + stderr, seconds from the signal to the next frame's end, seconds from the signal to the exit)."""
    cmd = [sys.executable, "-m", "embodied_ros.cli", "run", str(source), "--out", str(out), "--weights",
           str(weights), "--no-inputs", "--backend", "onnxruntime"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
    assert proc.stderr is not None
    text, sent, frame_end, done = "", None, None, 0
    while (chunk := proc.stderr.read(1)) != "":
        text += chunk
        if chunk not in "\r\n":
            continue
        found = _PROGRESS.findall(text[-200:])
        now_done = int(found[-1][0]) if found else done
        if sent is not None and frame_end is None and now_done > done:
            frame_end = time.perf_counter() - sent
        done = now_done
        if stop_after is not None and sent is None and done >= stop_after:
            proc.send_signal(signal.SIGTERM)
            sent = time.perf_counter()
    proc.wait()
    exit_s = time.perf_counter() - sent if sent is not None else None
    return text + (proc.stdout.read() if proc.stdout else ""), frame_end, exit_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data")
    parser.add_argument("--frames", type=int, default=12, help="frames of each run")
    parser.add_argument("--after", type=int, default=4, help="SIGTERM once this many frames are done")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, intrinsics in CAMERAS.items():
            source = _kitchen(args.data, Path(tmp) / f"k{len(name)}", intrinsics, args.frames)
            whole, _, _ = _run(source, Path(tmp) / f"whole{len(name)}", args.data / "yolox_nano", None)
            per_frame = re.search(r"mean ms per frame: (.*)", whole)
            stopped, frame_end, exit_s = _run(source, Path(tmp) / f"stop{len(name)}", args.data / "yolox_nano",
                                              args.after)
            print(f"{name}: {per_frame.group(1) if per_frame else 'no report'}")
            print(f"  SIGTERM after {args.after} frames: the frame in progress ended {frame_end or 0:.2f} s later, "
                  f"the process {exit_s or 0:.2f} s later (exit line: "
                  f"{next((line for line in stopped.splitlines() if 'stopped by SIGTERM' in line), 'none')!r})")


if __name__ == "__main__":
    main()
