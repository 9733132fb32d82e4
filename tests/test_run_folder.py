"""The run's output folder (outputs/run_folder.py) and the stop request (interrupts.py), without a network."""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path

import pytest

from embodied_ros.errors import OutputError
from embodied_ros.interrupts import StopRequest
from embodied_ros.outputs.run_folder import (
    MARKER,
    WORK_PREFIX,
    RunFolder,
    check_free_space,
    check_output_folder,
    read_marker,
)


def _write_run(out: Path, names: dict[str, str], overwrite: bool = False) -> tuple[Path, ...]:
    with RunFolder(out, overwrite) as folder:
        for name, text in names.items():
            (folder.path / name).write_text(text)
        return folder.commit(source="test", frames_processed=len(names))


def test_a_run_lands_in_a_new_folder_with_its_marker(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b" / "out"
    written = _write_run(out, {"objects.json": "1", "scene.mcap": "1"})
    assert sorted(p.name for p in written) == ["objects.json", "scene.mcap"]
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "objects.json", "scene.mcap"])
    marker = read_marker(out)
    assert marker is not None and marker.files == ("objects.json", "scene.mcap") and marker.state == "complete"


def test_a_run_that_does_not_commit_leaves_nothing_it_created(tmp_path: Path) -> None:
    with RunFolder(tmp_path / "a" / "out", overwrite=False) as folder:
        (folder.path / "scene.mcap").write_text("half")
    assert list(tmp_path.iterdir()) == []


def test_an_os_error_in_the_run_is_one_line_and_the_previous_run_stays(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _write_run(out, {"objects.json": "old"})
    with pytest.raises(OutputError, match=f"cannot write {out}: No space left on device.*{out} is as it was"):
        with RunFolder(out, overwrite=True) as folder:
            (folder.path / "objects.json").write_text("new, half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert (out / "objects.json").read_text() == "old"
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "objects.json"])


def test_overwrite_replaces_the_runs_files_and_keeps_the_users(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _write_run(out, {"objects.json": "old", "boxes_frame_000009.png": "old"})
    (out / "my_notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="--overwrite"):
        check_output_folder(out, overwrite=False)
    _write_run(out, {"objects.json": "new", "boxes_frame_000001.png": "new"}, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == sorted([MARKER, "boxes_frame_000001.png", "my_notes.txt",
                                                            "objects.json"])
    assert (out / "objects.json").read_text() == "new" and (out / "my_notes.txt").read_text() == "mine"


def test_a_file_with_a_runs_name_that_the_run_did_not_write_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _write_run(out, {"objects.json": "old"})
    (out / "top_down.png").write_text("the user's own")
    with pytest.raises(OutputError, match="top_down.png not written by its run"):
        check_output_folder(out, overwrite=True)


@pytest.mark.parametrize("listed", ["../outside.txt", "/etc/hostname", ".hidden"])
def test_a_marker_never_reaches_outside_its_folder(tmp_path: Path, listed: str) -> None:
    out = tmp_path / "out"
    _write_run(out, {"objects.json": "old"})
    marker = json.loads((out / MARKER).read_text())
    (out / MARKER).write_text(json.dumps({**marker, "files": [*marker["files"], listed]}))
    (tmp_path / "outside.txt").write_text("keep")
    previous = read_marker(out)
    assert previous is not None and previous.files == ("objects.json",)
    _write_run(out, {"objects.json": "new"}, overwrite=True)
    assert (tmp_path / "outside.txt").read_text() == "keep"


def test_folders_that_are_not_the_tools_are_refused(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "scene.mcap").write_text("an older version's run")
    with pytest.raises(OutputError, match="holds no run of this tool .*older version"):
        check_output_folder(tmp_path / "mine", overwrite=True)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / MARKER).write_text('{"format": "embodied_ros/run", "files": ["objects.js')  # cut short
    with pytest.raises(OutputError, match=f"its {MARKER} cannot be read \\(the file is cut short .*remove its run's "
                                          "files and the marker yourself"):
        check_output_folder(tmp_path / "broken", overwrite=True)
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(OutputError, match="a link to nothing"):
        check_output_folder(tmp_path / "link", overwrite=False)


def test_work_folders_of_killed_runs_are_cleared_by_the_next_commit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _write_run(out, {"objects.json": "old"})
    dead = out / f"{WORK_PREFIX}999999999-abc"  # no such process
    dead.mkdir()
    (dead / "scene.mcap").write_text("half")
    check_output_folder(out, overwrite=True)  # a killed run's leftovers are not a user's files
    _write_run(out, {"objects.json": "new"}, overwrite=True)
    assert not dead.exists()


def test_free_space_is_checked_against_the_runs_length(tmp_path: Path) -> None:
    check_free_space(tmp_path / "new" / "out", frames=10)
    with pytest.raises(OutputError, match=r"MB free on its file system .*a run of 1000000000 frames"):
        check_free_space(tmp_path / "new" / "out", frames=10**9)


def test_the_first_signal_asks_to_stop_the_second_stops_at_once() -> None:
    before = signal.getsignal(signal.SIGINT)
    with StopRequest() as stop:
        assert not stop()
        signal.raise_signal(signal.SIGTERM)
        assert stop() and stop.name == "SIGTERM" and stop.exit_code == 143
        with stop.shielded():
            signal.raise_signal(signal.SIGINT)  # moving files into place: not now
        with pytest.raises(KeyboardInterrupt):
            with StopRequest() as again:
                signal.raise_signal(signal.SIGINT)
                signal.raise_signal(signal.SIGINT)
        assert again.name == "SIGINT" and again.exit_code == 130
    assert signal.getsignal(signal.SIGINT) is before
