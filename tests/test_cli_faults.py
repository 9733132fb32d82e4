"""Nothing of a user's lost, no tracebacks: the output folder, interruptions, full disks, whole-recording faults.

Each case runs `embodied-ros` as a user would, on copies of the real recordings, and checks the
exit code, the one message line and the files before and after. Full and read-only disks are real
tmpfs mounts where the machine allows it (tests/filesystems.py), else the emulated full disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA, DETECTOR, KITCHEN, copy_kitchen
from filesystems import disk_full_after, fill, read_only, tmpfs
from rosbags.highlevel import AnyReader

from embodied_ros.cli import main
from embodied_ros.messages.types import typestore

MARKER = "embodied_ros_run.json"  # outputs.run_folder.MARKER, spelled out: the tests read on any version
MKV = DATA / "azure_kinect" / "recording.mkv"
REPO = Path(__file__).resolve().parents[1]
needs_data = pytest.mark.skipif(not (KITCHEN.is_dir() and DETECTOR.is_dir()),
                                reason=f"real data not found in {DATA} (set EMBODIED_ROS_DATA)")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _kitchen(dst: Path, numbers: range = range(0, 60, 10)) -> Path:
    """A 7-Scenes folder of the given redkitchen frames (six by default)."""
    return copy_kitchen(dst, numbers)


def _run(argv: list[object], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """main(argv): exit code, stdout, stderr; never a traceback."""
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return rc, out, err


def _error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("embodied-ros: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _files(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (hidden ones too) -> sha256: what "as it was" means."""
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_args(source: Path, out: Path, *more: object) -> list[object]:
    return ["run", source, "--out", out, "--weights", DETECTOR, "--backend", "onnxruntime", *more]


def _bag_counts(folder: Path) -> dict[str, int]:
    with AnyReader([folder], default_typestore=typestore()) as reader:
        return {c.topic: c.msgcount for c in reader.connections}


# ---- the output folder ------------------------------------------------------------------------------


@needs_data
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_folder_of_the_users_files_is_never_written_into(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          overwrite: bool) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "objects.json").write_text('{"my": "own objects"}')
    (out / "top_down.png").write_bytes(b"my own picture")
    before = _files(out)
    rc, _, err = _run(_run_args(_kitchen(tmp_path / "k"), out, *(["--overwrite"] if overwrite else [])), capsys)
    assert rc == 2 and "holds no run of this tool" in _error(err) and str(out) in _error(err)
    assert _files(out) == before


@needs_data
def test_overwrite_checks_first_and_replaces_only_the_previous_runs_files(
        kitchen_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    shutil.copytree(kitchen_run, out)
    (out / "my_photo.png").write_bytes(b"the user's own picture")
    (out / "notes.txt").write_text("the user's notes")
    before = _files(out)
    kitchen = _kitchen(tmp_path / "k")
    rc, _, err = _run(["run", kitchen, "--out", out, "--weights", tmp_path / "typo", "--overwrite"], capsys)
    assert rc == 2 and "--weights" in _error(err)
    assert _files(out) == before  # a mistyped option lost nothing

    rc, _, err = _run(_run_args(kitchen, out, "--overwrite", "--max-frames", 2), capsys)
    assert rc == 0, err
    after = _files(out)
    assert after["my_photo.png"] == before["my_photo.png"] and after["notes.txt"] == before["notes.txt"]
    marker = json.loads((out / MARKER).read_text())
    assert marker["state"] == "complete" and marker["frames_processed"] == 2
    assert set(marker["files"]) == set(after) - {MARKER, "my_photo.png", "notes.txt"}
    assert "boxes_frame_000096.png" not in after  # the previous run's picture the new run does not draw
    assert json.loads((out / "objects.json").read_text())["frames_processed"] == 2
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no work folder left


@needs_data
@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_out_naming_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("keep me")
    out = notes if where == "file" else notes / "out"
    rc, _, err = _run(_run_args(_kitchen(tmp_path / "k"), out), capsys)
    assert rc == 2 and f"{notes} is a file, not a folder" in _error(err)
    assert notes.read_text() == "keep me"


@needs_data
def test_a_read_only_out_is_refused_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kitchen, ro = _kitchen(tmp_path / "k"), tmp_path / "ro"
    with read_only(ro) as cause:
        out = ro / "out"
        # even with a mistyped --weights, the output folder is what is checked first
        rc, _, err = _run(["run", kitchen, "--out", out, "--weights", tmp_path / "typo"], capsys)
        assert rc == 2 and f"cannot write in {ro}: {cause}" in _error(err)
        rc, _, err = _run(_run_args(kitchen, out), capsys)
        assert rc == 2 and cause in _error(err) and not out.exists()


@needs_data
@pytest.mark.parametrize("disk", ["tmpfs", "emulated"])
@pytest.mark.parametrize("previous", [True, False], ids=["overwrite-a-run", "new-folder-no-inputs"])
def test_a_full_disk_stops_the_run_and_leaves_the_folder_as_it_was(
        kitchen_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        disk: str, previous: bool) -> None:
    from contextlib import ExitStack

    kitchen = _kitchen(tmp_path / "k")
    more = ["--overwrite"] if previous else ["--no-inputs"]
    with ExitStack() as stack:
        if disk == "tmpfs":
            root = stack.enter_context(tmpfs(tmp_path / "disk", 40 << 20))
        else:
            root = tmp_path / "disk"
            root.mkdir()
        out = root / "run"
        if previous:
            shutil.copytree(kitchen_run, out)
        before = _files(out)
        if disk == "tmpfs":  # room for the free-space check's lower bound, not for the run
            per_frame = 100_000 if previous else 10_000
            fill(root, leave_free=2_000_000 + 6 * per_frame + 100_000)
            free_before = shutil.disk_usage(root).free
        else:
            stack.enter_context(disk_full_after(monkeypatch, root, 1_000_000))
        rc, _, err = _run(_run_args(kitchen, out, *more), capsys)
        line = _error(err)
        assert rc == 2 and "No space left on device" in line and str(out) in line, line
        assert ("is as it was" if previous else "nothing was written") in line
        assert _files(out) == before and (out.exists() == previous)  # the previous run whole; nothing half-written
        if disk == "tmpfs":
            assert shutil.disk_usage(root).free == free_before  # the partial files are gone: the disk is free again


@needs_data
def test_too_little_free_space_is_refused_before_writing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kitchen = _kitchen(tmp_path / "k")
    with tmpfs(tmp_path / "disk", 1 << 20) as root:
        rc, _, err = _run(_run_args(kitchen, root / "run"), capsys)
        assert rc == 2 and "MB free" in _error(err) and "6 frames" in _error(err)
        assert list(root.iterdir()) == []


# ---- interruptions ------------------------------------------------------------------------------------


class _SignalOnSkip(logging.Handler):
    """Sends this process ``count`` signals when the run logs its skipped frame: a Ctrl-C at a known frame."""

    def __init__(self, signum: int, count: int) -> None:
        super().__init__(logging.WARNING)
        self.signum, self.count = signum, count

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("skipped:"):
            for _ in range(self.count):
                signal.raise_signal(self.signum)


def _interrupted_run(tmp_path: Path, capsys: pytest.CaptureFixture[str], signals: int) -> tuple[int, str, Path]:
    """A run of 6 frames whose 4th is bad; ``signals`` SIGINTs arrive while it is skipped."""
    kitchen = _kitchen(tmp_path / "k")
    (kitchen / "frame-000030.depth.png").write_bytes(b"")
    handler = _SignalOnSkip(signal.SIGINT, signals)
    pipeline_log = logging.getLogger("embodied_ros.pipeline")
    pipeline_log.addHandler(handler)
    try:
        rc, _, err = _run(_run_args(kitchen, tmp_path / "out"), capsys)
    finally:
        pipeline_log.removeHandler(handler)
    return rc, err, tmp_path / "out"


@needs_data
def test_ctrl_c_stops_at_the_frame_and_keeps_the_map_so_far(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, err, out = _interrupted_run(tmp_path, capsys, signals=1)
    assert rc == 130, err
    assert "stopped by SIGINT after 4 of 6 frames" in err and f"the map of those frames is in {out}" in err
    names = {p.name for p in out.iterdir()}
    assert {"objects.json", "memory.json", "camera_poses.json", "top_down.png", "objects.png", "scene.mcap",
            "metadata.yaml", MARKER} <= names
    doc = json.loads((out / "objects.json").read_text())
    assert doc["frames_processed"] == 3 and doc["frames_skipped"] == 1
    assert _bag_counts(out)["/embodied/markers"] == 3
    assert json.loads((out / MARKER).read_text())["state"] == "stopped by SIGINT after 4 of 6 frames"
    rc, _, _ = _run(["ground", out, "the chair"], capsys)
    assert rc in (0, 1)  # memory.json is whole: an answer, or "no such object", never "unusable run folder"


@needs_data
def test_a_second_ctrl_c_stops_at_once_with_the_bag_closed(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    rc, err, out = _interrupted_run(tmp_path, capsys, signals=2)
    assert rc == 130 and "stopped at once" in err, err
    assert {p.name for p in out.iterdir()} == {"scene.mcap", "metadata.yaml", MARKER}
    assert _bag_counts(out)["/embodied/markers"] == 3  # readable: closed, with its metadata
    assert json.loads((out / MARKER).read_text())["state"].startswith("stopped at once by SIGINT")


@needs_data
def test_sigterm_from_outside_keeps_the_map_so_far(tmp_path: Path) -> None:
    kitchen = _kitchen(tmp_path / "k", range(0, 120, 10))
    (kitchen / "frame-000020.depth.png").write_bytes(b"")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "embodied_ros.cli", *map(str, _run_args(kitchen, out))],
                            cwd=REPO, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "skipped:" in line:
            proc.send_signal(signal.SIGTERM)
            break
    err = "".join(lines) + proc.stderr.read()
    assert proc.wait(timeout=120) == 143, err
    assert "Traceback" not in err and "stopped by SIGTERM after" in err
    doc = json.loads((out / "objects.json").read_text())
    assert 1 <= doc["frames_processed"] < 11
    assert _bag_counts(out)["/embodied/markers"] == doc["frames_processed"]


# ---- whole-recording faults ---------------------------------------------------------------------------


@needs_data
def test_bad_intrinsics_are_named_once_with_their_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       caplog: pytest.LogCaptureFixture) -> None:
    kitchen = _kitchen(tmp_path / "k")
    (kitchen / "camera-intrinsics.txt").write_text("0 0 320\n0 585 240\n0 0 1\n")
    out = tmp_path / "out"
    rc, _, err = _run(_run_args(kitchen, out), capsys)
    line = _error(err)
    assert rc == 2 and "camera-intrinsics.txt" in line and "fx = 0" in line
    assert not out.exists()  # no empty bag to block the next run
    assert not [r for r in caplog.records if "skipped" in r.getMessage()]  # one fault, not one per frame
    rc, _, err = _run(["inspect", kitchen], capsys)  # the recording cannot be used at all: run's own line
    assert rc == 2 and "camera-intrinsics.txt" in _error(err) and "fx = 0" in _error(err)


@needs_data
def test_inspect_says_not_go_ahead_when_no_frame_is_usable(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    kitchen = _kitchen(tmp_path / "k", range(0, 30, 10))
    for n in (0, 10, 20):
        (kitchen / f"frame-{n:06d}.depth.png").write_bytes(b"")
    rc, text, _ = _run(["inspect", kitchen], capsys)
    assert rc == 1 and "a run would:  not go ahead:" in text and "no usable frame (3 skipped" in text


@needs_data
def test_a_truncated_mcap_is_read_to_its_last_complete_chunk(kitchen_run: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    data = (kitchen_run / "scene.mcap").read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) * 6 // 10])
    rc, _, err = _run(_run_args(cut, tmp_path / "out", "--world-frame", "world"), capsys)
    assert rc == 0, err
    warnings = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert len(warnings) == 1 and "mcap recover" in warnings[0], warnings
    processed = json.loads((tmp_path / "out" / "objects.json").read_text())["frames_processed"]
    assert 5 <= processed < 25  # what the complete chunks hold
    rc, text, _ = _run(["inspect", cut, "--world-frame", "world"], capsys)
    assert rc == 0 and "truncated" in text and "a run would:  go ahead" in text


@pytest.mark.skipif(not MKV.is_file(), reason=f"real recording {MKV} is absent")
def test_a_truncated_mkv_says_truncated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(MKV.read_bytes()[:500_000])
    rc, text, _ = _run(["inspect", cut], capsys)
    assert rc == 1 and "not go ahead" in text and "truncated: 500000 of the 1699264 bytes" in text
    rc, _, err = _run(["run", cut, "--out", tmp_path / "out", "--weights", DETECTOR], capsys)
    assert rc == 2 and "truncated" in _error(err) and not (tmp_path / "out").exists()


@needs_data
def test_a_weights_folder_without_the_models_file_names_both(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    other = DATA / "nanodet_plus"  # another model's files
    rc, _, err = _run(["run", _kitchen(tmp_path / "k"), "--out", tmp_path / "out", "--weights", other], capsys)
    line = _error(err)
    assert rc == 2 and f"--weights {other} has no yolox_nano.onnx" in line and "consent" not in line
    assert not (tmp_path / "out").exists()


@needs_data
def test_a_setting_the_config_has_not_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _run(_run_args(_kitchen(tmp_path / "k"), tmp_path / "out", "--set", "memory.bogus=1"), capsys)
    assert rc == 2 and "MemoryConfig has no field 'bogus'" in _error(err)
    assert not (tmp_path / "out").exists()
    rc, _, _ = _run(_run_args(tmp_path / "k", tmp_path / "out", "--max-frames", "2", "--set",
                              "memory.existence_revisit_s=5", "--set", "lifting.max_depth=4"), capsys)
    saved = json.loads((tmp_path / "out" / "memory.json").read_text())
    assert rc == 0 and saved["config"]["existence_revisit_s"] == 5.0  # the run's memory has it


@needs_data
@pytest.mark.parametrize("command", ["run", "inspect"])
@pytest.mark.parametrize("option", [("--stride", "0"), ("--stride", "-2"), ("--max-frames", "0"),
                                    ("--max-frames", "-1")])
def test_stride_and_max_frames_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str,
                                            option: tuple[str, str]) -> None:
    argv = [command, str(_kitchen(tmp_path / "k", range(0, 20, 10))), *option]
    argv += ["--out", str(tmp_path / "out"), "--weights", str(DETECTOR)] if command == "run" else []
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "Traceback" not in err
    assert f"argument {option[0]}: {option[1]} is out of range" in _error(err)
    assert not (tmp_path / "out").exists()


@needs_data
def test_a_truncated_memory_json_is_named_cut_short(kitchen_run: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(kitchen_run, run)
    text = (run / "memory.json").read_text()
    (run / "memory.json").write_text(text[: len(text) // 2])
    rc, _, err = _run(["ground", run, "the chair"], capsys)
    line = _error(err)
    assert rc == 2 and "memory.json" in line and "cut short" in line and "(char " not in line
