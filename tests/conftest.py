"""Shared test fixtures: where the real data is, and one redkitchen run reused by several test modules."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN, YOLO = DATA / "redkitchen", DATA / "yolo_fastest"
DETECTOR = DATA / "yolox_nano"  # the default model's files (network.weights.DEFAULT_MODEL)
KITCHEN_RUN_STRIDE = 4  # every 4th of the 100 frames: 25 frames, about 15 s


def copy_kitchen(dst: Path, numbers: Iterable[int]) -> Path:
    """A 7-Scenes folder of the given redkitchen frames, their files copied as they are."""
    dst.mkdir()
    for name in ("camera-intrinsics.txt", "gravity-direction.txt"):
        shutil.copy(KITCHEN / name, dst / name)
    for n in numbers:
        for kind in ("color.jpg", "depth.png", "pose.txt"):
            shutil.copy(KITCHEN / f"frame-{n:06d}.{kind}", dst / f"frame-{n:06d}.{kind}")
    return dst


@pytest.fixture(scope="session")
def kitchen_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Output folder of `embodied-ros run` on every 4th redkitchen frame (read-only for the tests)."""
    if not (KITCHEN.is_dir() and DETECTOR.is_dir()):
        pytest.skip(f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")
    from embodied_ros.cli import main

    out = tmp_path_factory.mktemp("kitchen_run")
    os.environ.setdefault("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    assert main(["run", str(KITCHEN), "--out", str(out), "--weights", str(DETECTOR), "--stride",
                 str(KITCHEN_RUN_STRIDE), "--overwrite", "--backend", "onnxruntime"]) == 0
    return out
