"""Saved maps: names under map_dir only, saves that a failure or crash cannot leave half-done (ROS-free)."""

from __future__ import annotations

from pathlib import Path

import pytest

from embodied_ros.errors import InputError
from embodied_ros.map_files import check_map_name, map_path, recover, save_atomically


@pytest.mark.parametrize("name", ["kitchen", "map-2", "floor_1.v2", "A" * 64])
def test_plain_names_are_maps_under_map_dir(tmp_path: Path, name: str) -> None:
    assert map_path(tmp_path, name) == tmp_path / name


@pytest.mark.parametrize("name", ["", "/etc/x", "../x", "a/../../b", "a/b", ".hidden", "..", "~root", "x\n",
                                  "A" * 65, "name with space"])
def test_paths_and_odd_names_are_refused_with_the_reason(tmp_path: Path, name: str) -> None:
    with pytest.raises(InputError, match="refused|too long"):
        map_path(tmp_path, name)


def test_a_link_out_of_map_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "maps").mkdir()
    (tmp_path / "maps" / "out").symlink_to(tmp_path)
    with pytest.raises(InputError, match="link"):
        map_path(tmp_path / "maps", "out")
    assert check_map_name("out") == "out"


def _write(files: dict[str, str]):
    def write(folder: Path) -> None:
        for name, text in files.items():
            if text == "FAIL":
                raise OSError("disk full")
            (folder / name).write_text(text)
    return write


def test_a_save_replaces_the_map_and_leaves_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "kitchen"
    save_atomically(path, _write({"memory.json": "1", "occupancy.npz": "1"}))
    save_atomically(path, _write({"memory.json": "2", "occupancy.npz": "2"}))
    assert (path / "memory.json").read_text() == "2" and (path / "occupancy.npz").read_text() == "2"
    assert [p.name for p in tmp_path.iterdir()] == ["kitchen"]


def test_a_save_that_fails_halfway_keeps_the_previous_map_whole(tmp_path: Path) -> None:
    path = tmp_path / "kitchen"
    save_atomically(path, _write({"memory.json": "old", "occupancy.npz": "old"}))
    with pytest.raises(OSError, match="disk full"):
        save_atomically(path, _write({"memory.json": "new", "occupancy.npz": "FAIL"}))
    assert (path / "memory.json").read_text() == "old" and (path / "occupancy.npz").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["kitchen"]


def test_a_crash_between_the_renames_is_recovered_by_the_next_load(tmp_path: Path) -> None:
    aside = tmp_path / ".kitchen.replaced"  # what a crash after the first rename leaves
    aside.mkdir()
    (aside / "memory.json").write_text("old")
    recover(tmp_path / "kitchen")
    assert (tmp_path / "kitchen" / "memory.json").read_text() == "old" and not aside.exists()
