"""`embodied-ros run` end to end on real recordings, and its answers to bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, DETECTOR, KITCHEN, copy_kitchen
from rosbags.highlevel import AnyReader

from embodied_ros.cli import main
from embodied_ros.memory import SceneMemory
from embodied_ros.messages.types import typestore

needs_data = pytest.mark.skipif(not (KITCHEN.is_dir() and DETECTOR.is_dir()),
                                reason=f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exported ONNX graphs go to a per-session cache, not the user's home."""
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("embodied-ros: error:")]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


@needs_data
def test_run_on_redkitchen_writes_every_output(kitchen_run: Path) -> None:
    names = {p.name for p in kitchen_run.iterdir()}
    assert {"scene.mcap", "metadata.yaml", "objects.json", "memory.json", "top_down.png"} <= names
    assert len([n for n in names if n.startswith("boxes_frame_")]) == 4
    doc = json.loads((kitchen_run / "objects.json").read_text())
    classes = {o["class"] for o in doc["objects"]}
    assert doc["frames_processed"] == 25 and doc["frames_skipped"] == 0
    assert len(classes & {"chair", "cup", "tvmonitor", "diningtable", "book"}) >= 3, classes
    assert all(o["n_observations"] >= 2 for o in doc["objects"])  # the publish rule
    memory = SceneMemory.load(kitchen_run / "memory.json")
    assert [o.id for o in memory.published_objects()] == [o["id"] for o in doc["objects"]]
    with AnyReader([kitchen_run], default_typestore=typestore()) as reader:
        counts = {c.topic: c.msgcount for c in reader.connections}
    assert counts["/embodied/markers"] == 25 and counts["/rgb/image_raw/compressed"] == 25


@needs_data
def test_run_reads_its_own_bag_back_as_a_recording(kitchen_run: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "again"
    rc = main(["run", str(kitchen_run / "scene.mcap"), "--world-frame", "world", "--out", str(out),
               "--weights", str(DETECTOR), "--max-frames", "3"])
    assert rc == 0, capsys.readouterr().err
    assert "3 frames processed, 0 skipped" in capsys.readouterr().out
    assert json.loads((out / "objects.json").read_text())["frames_processed"] == 3


@needs_data
def test_bad_frames_are_skipped_and_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            caplog: pytest.LogCaptureFixture) -> None:
    folder = copy_kitchen(tmp_path / "kitchen", [0, 10, 20, 30])
    (folder / "frame-000010.depth.png").write_bytes(b"not a png")
    (folder / "frame-000020.pose.txt").write_text("nan 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n")
    rc = main(["run", str(folder), "--out", str(tmp_path / "out"), "--weights", str(DETECTOR)])
    assert rc == 0, capsys.readouterr().err
    assert "2 frames processed, 2 skipped" in capsys.readouterr().out
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("frame-000010.depth.png" in w for w in warnings) and any("NaN" in w for w in warnings)


@needs_data
def test_all_frames_bad_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = copy_kitchen(tmp_path / "kitchen", [0, 10])
    for n in (0, 10):
        (folder / f"frame-{n:06d}.depth.png").write_bytes(b"")
    assert main(["run", str(folder), "--out", str(tmp_path / "out"), "--weights", str(DETECTOR)]) == 2
    assert "no usable frame" in _error_line(capsys)


@needs_data
def test_existing_output_needs_overwrite(kitchen_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(KITCHEN), "--out", str(kitchen_run), "--weights", str(DETECTOR)]) == 2
    assert "--overwrite" in _error_line(capsys)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["run", "/nonexistent/recording", "--out", "OUT"], "no such file or folder"),
        (["run", "EMPTY", "--out", "OUT"], "not a recording this tool reads"),
        (["run", "NOTES", "--out", "OUT"], "unknown recording type"),
        (["run", "BAD_MKV", "--out", "OUT"], "BAD_MKV"),
        (["run", "BAD_BAG", "--out", "OUT"], "BAD_BAG"),
    ],
)
def test_unusable_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          argv: list[str], expected: str) -> None:
    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "NOTES.txt").write_text("hello")
    (tmp_path / "BAD_MKV.mkv").write_bytes(b"\x00" * 1000)
    (tmp_path / "BAD_BAG.mcap").write_bytes(b"\x89MCAP0\r\n" + b"\x00" * 50)
    names = {"EMPTY": "EMPTY", "NOTES": "NOTES.txt", "BAD_MKV": "BAD_MKV.mkv", "BAD_BAG": "BAD_BAG.mcap"}
    argv = [str(tmp_path / names[a]) if a in names else str(tmp_path / a) if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    assert expected in _error_line(capsys)


def test_missing_weights_say_how_to_get_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "kitchen"
    folder.mkdir()
    if KITCHEN.is_dir():
        folder = copy_kitchen(tmp_path / "k2", [0])
    else:
        pytest.skip(f"real data not found in {DATA}")
    empty = tmp_path / "no_weights"
    empty.mkdir()
    assert main(["run", str(folder), "--out", str(tmp_path / "out"), "--weights", str(empty)]) == 2
    line = _error_line(capsys)
    assert "--download-weights" in line and "--weights" in line
    assert main(["run", str(folder), "--out", str(tmp_path / "out2"), "--model", "nope"]) == 2
    assert "unknown model" in _error_line(capsys)


@needs_data
def test_run_writes_camera_poses_and_colours(kitchen_run: Path) -> None:
    """camera_poses.json holds every processed frame's pose (what "on the left" is seen from later);
    objects.json says each object's colour (its pixels across the views)."""
    import numpy as np

    from embodied_ros.outputs.camera_poses import read_camera_poses
    from embodied_ros.recordings import open_source

    poses = read_camera_poses(kitchen_run / "camera_poses.json")
    assert [p.index for p in poses] == list(range(0, 100, 4))
    with open_source(KITCHEN) as source:
        first = next(f for f in source.frames() if not isinstance(f, Exception))
    np.testing.assert_allclose(poses[0].T_world_camera, first.T_world_camera, atol=1e-5)
    assert (poses[0].width, poses[0].height) == (first.width, first.height)
    colours = [o["colour"] for o in json.loads((kitchen_run / "objects.json").read_text())["objects"]]
    assert sum(c is not None for c in colours) >= 0.8 * len(colours), colours
