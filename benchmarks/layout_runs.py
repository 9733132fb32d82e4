"""Runs `embodied-ros run` on real redkitchen frames rewritten into every recording layout.

Run: .venv/bin/python benchmarks/layout_runs.py [--frames 25] [--out /tmp/layout_runs]

Every 4th redkitchen frame (25 frames over the whole sequence, by default) is written with
tests/layouts.py into a 3DMatch scene (two sequences), a TUM RGB-D sequence, a ScanNet export and
an image folder with a TUM-line trajectory and one with a 4x4-matrix trajectory; each is run with
the default detector as a user would (the only options: --intrinsics where the layout has no
intrinsics file). Prints, per layout, the command, the frames read and skipped, the objects
published and the gravity and pose lines of `inspect`. Needs ../shared/data (redkitchen and the
default model's weights).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from layouts import DATA, image_folder, scannet, threedmatch_scene, tum  # noqa: E402

CLI = [sys.executable, "-m", "embodied_ros.cli"]
INTRINSICS = ["--intrinsics", "585", "585", "320", "240"]


def _layouts(root: Path, numbers: list[int]) -> dict[str, tuple[Path, list[str]]]:
    half = len(numbers) // 2
    return {
        "3DMatch scene (seq-01, seq-02)": (
            threedmatch_scene(root / "7-scenes-redkitchen", {"seq-01": numbers[:half], "seq-02": numbers[half:]}), []),
        "TUM RGB-D": (tum(root / "rgbd_dataset_redkitchen", numbers), INTRINSICS),
        "ScanNet export": (scannet(root / "scene_redkitchen", numbers), []),
        "image folder + TUM trajectory": (image_folder(root / "images_tum", numbers, "tum"), INTRINSICS),
        "image folder + 4x4 matrices": (image_folder(root / "images_matrices", numbers, "matrices"), INTRINSICS),
    }


def _inspect_lines(folder: Path, extra: list[str]) -> dict[str, str]:
    out = subprocess.run([*CLI, "inspect", str(folder), *extra], capture_output=True, text=True, check=True).stdout
    return {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in out.splitlines() if ":" in line[:13]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=25, help="redkitchen frames, spread over the sequence")
    parser.add_argument("--out", type=Path, default=Path("/tmp/layout_runs"), help="work folder (replaced)")
    args = parser.parse_args()
    step = max(1, 100 // args.frames)
    numbers = [10 * i for i in range(0, 100, step)][: args.frames]
    shutil.rmtree(args.out, ignore_errors=True)
    recordings = _layouts(args.out / "recordings", numbers)
    weights = DATA  # a folder of model folders: serves the default model
    for name, (folder, extra) in recordings.items():
        out = args.out / "runs" / folder.name
        command = [*CLI, "run", str(folder), "--out", str(out), "--weights", str(weights), *extra]
        result = subprocess.run(command, capture_output=True, text=True)
        print(f"== {name}: {folder.name}")
        print("   embodied-ros " + " ".join(command[len(CLI):]))
        if result.returncode:
            print(f"   exit {result.returncode}: {result.stderr.strip().splitlines()[-1]}")
            continue
        doc = json.loads((out / "objects.json").read_text())
        print(f"   {result.stdout.splitlines()[0]}")
        print(f"   {result.stdout.splitlines()[1]}")
        seen = _inspect_lines(folder, extra)
        for key in ("layout", "registration", "gravity", "poses"):
            print(f"   {key}: {seen[key]}")
        print(f"   objects.json: {len(doc['objects'])} objects, {doc['frames_processed']} frames, "
              f"{doc['frames_skipped']} skipped")


if __name__ == "__main__":
    main()
