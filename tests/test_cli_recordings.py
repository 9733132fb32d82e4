"""`embodied-ros run` and `inspect` on the recordings people bring: the layouts, bad poses, bad files, bags."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA, DETECTOR, KITCHEN, KITCHEN_RUN_STRIDE
from layouts import inverted, seven_scenes, threedmatch_scene, tum
from rosbags.highlevel import AnyReader

from embodied_ros.cli import main
from embodied_ros.messages.types import typestore
from embodied_ros.sources.registration import SEVEN_SCENES_DEFAULT

MKV = DATA / "azure_kinect" / "recording.mkv"
needs_data = pytest.mark.skipif(not (KITCHEN.is_dir() and DETECTOR.is_dir()),
                                reason=f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _lines(text: str) -> dict[str, str]:
    """inspect's 'label: text' lines as a dict."""
    return {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in text.splitlines() if ":" in line[:13]}


@needs_data
def test_inspect_redkitchen_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(KITCHEN)]) == 0
    got = _lines(capsys.readouterr().out)
    assert got["layout"] == "7-Scenes / 3DMatch sequence folder"
    assert got["frames"].startswith("100 in the recording, 100 read (100 good); 3.0 per second")
    assert got["image"] == "640x480" and got["intrinsics"].startswith("fx 585.0 fy 585.0 cx 320.0 cy 240.0")
    assert got["depth"].endswith("of pixels valid") and got["registration"].startswith(SEVEN_SCENES_DEFAULT.value)
    assert got["gravity"].startswith("given by") and "the poses fit" in got["poses"]
    assert got["problems"] == "none in the frames read" and got["a run would"] == "go ahead"


@pytest.mark.skipif(not MKV.is_file(), reason=f"real recording {MKV} is absent")
def test_inspect_azure_kinect_recording(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(MKV)]) == 0
    got = _lines(capsys.readouterr().out)
    assert got["layout"] == "Azure Kinect recording (.mkv)" and got["image"] == "1280x720"
    assert got["gravity"].startswith("levelled with the IMU's gravity") and "barely moves" in got["poses"]


@needs_data
def test_inspect_a_bag_written_by_run(kitchen_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(kitchen_run / "scene.mcap"), "--world-frame", "world"]) == 0
    got = _lines(capsys.readouterr().out)
    n = 100 // KITCHEN_RUN_STRIDE
    assert got["layout"] == "rosbag2" and got["frames"].startswith(f"{n} in the recording, {n} read ({n} good)")
    assert "/depth_to_rgb/image_raw/compressedDepth" in got["details"] and "the poses fit" in got["poses"]


@needs_data
def test_run_bag_is_small_and_holds_compressed_inputs(kitchen_run: Path) -> None:
    with AnyReader([kitchen_run], default_typestore=typestore()) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
    assert types["/depth_to_rgb/image_raw/compressedDepth"] == "sensor_msgs/msg/CompressedImage"
    assert types["/rgb/image_raw/compressed"] == "sensor_msgs/msg/CompressedImage"
    per_frame = (kitchen_run / "scene.mcap").stat().st_size / (100 // KITCHEN_RUN_STRIDE)
    raw_depth = 640 * 480 * 2  # what one uncompressed 16UC1 depth image took before
    assert per_frame < raw_depth / 3, per_frame  # measured: ~140 KB against ~745 KB per frame before


@needs_data
def test_inverted_poses_stop_the_run_with_the_option_that_fixes_them(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    folder = seven_scenes(tmp_path / "inv", list(range(0, 200, 10)), pose_edit=inverted)
    assert main(["run", str(folder), "--out", str(tmp_path / "out"), "--weights", str(DETECTOR)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("embodied-ros: error:")]
    assert len(lines) == 1 and "Traceback" not in err
    assert "look inverted" in lines[0] and "pass --pose-convention world-to-camera" in lines[0]
    assert main(["inspect", str(folder), "--pose-convention", "world-to-camera"]) == 0
    got = _lines(capsys.readouterr().out)
    assert "the poses fit" in got["poses"] and got["a run would"] == "go ahead"


@needs_data
def test_truncated_image_is_skipped_counted_and_named(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                     caplog: pytest.LogCaptureFixture) -> None:
    folder = seven_scenes(tmp_path / "kitchen", [0, 10, 20, 30])
    jpeg = folder / "frame-000020.color.jpg"
    jpeg.write_bytes(jpeg.read_bytes()[:20000])  # cut short, as a copy interrupted midway
    assert main(["inspect", str(folder)]) == 0
    out = capfd.readouterr().out
    assert "1 frames would be skipped" in out and "frame-000020.color.jpg" in out
    assert main(["run", str(folder), "--out", str(tmp_path / "out"), "--weights", str(DETECTOR)]) == 0
    out, err = capfd.readouterr()
    assert "3 frames processed, 1 skipped" in out
    assert "Premature end" not in err and "JPEG" not in err  # libjpeg's nameless message is gone
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("frame-000020.color.jpg" in w and "truncated" in w for w in warnings)
    assert json.loads((tmp_path / "out" / "objects.json").read_text())["frames_skipped"] == 1


@needs_data
@pytest.mark.parametrize("layout", ["3dmatch-scene", "tum"])
def test_run_on_a_converted_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str) -> None:
    if layout == "tum":
        folder, extra = tum(tmp_path / "tum", list(range(0, 300, 20))), ["--intrinsics", "585", "585", "320", "240"]
    else:
        folder, extra = threedmatch_scene(tmp_path / "scene", {"seq-01": [0, 50, 100], "seq-02": [600, 650]}), []
    rc = main(["run", str(folder), "--out", str(tmp_path / "out"), "--weights", str(DETECTOR), "--max-frames", "5",
               *extra])
    assert rc == 0, capsys.readouterr().err
    assert "5 frames processed, 0 skipped" in capsys.readouterr().out
    doc = json.loads((tmp_path / "out" / "objects.json").read_text())
    memory = json.loads((tmp_path / "out" / "memory.json").read_text())  # five frames: too few to publish
    assert doc["frames_processed"] == 5 and memory["objects"], doc
