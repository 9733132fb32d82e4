"""Saved maps (SceneMapper.save/load): names under one folder, never other paths; saves a crash cannot leave half-done.

Anyone on the DDS domain can call ``~/save_map`` and ``~/load_map``, so a request names a map
(``kitchen``), never a path: the map lives in ``<map_dir>/<name>/``. A name is 1-64 characters of
letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit (so no ``/``, no ``..``,
no absolute path, no hidden file); anything else is refused with the reason. A save writes every
file into a temporary folder beside the map and renames it into place; a map it replaces is
renamed aside first and removed after, and a load finds it again if a crash came in between.
ROS-free.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import InputError

MEMORY_FILE = "memory.json"  # SceneMemory.save: written by `embodied-ros run` and by a saved map
OCCUPANCY_FILE = "occupancy.npz"  # OccupancyMap.save, in a saved map

DEFAULT_MAP_DIR = Path("~/.embodied_ros/map")
MAX_NAME_CHARS = 64
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _aside(path: Path) -> Path:
    """.<name>.replaced: the previous map while a save swaps folders (hidden: no map name starts with '.')."""
    return path.with_name(f".{path.name}.replaced")


def check_map_name(name: str) -> str:
    """``name`` when it is a valid map name, else InputError saying why."""
    if len(name) > MAX_NAME_CHARS:
        raise InputError(f"map name too long ({len(name)} characters, at most {MAX_NAME_CHARS})")
    if not _NAME.fullmatch(name):
        raise InputError(f"map name {name[:MAX_NAME_CHARS]!r} refused: a name is letters, digits, '.', '_' and '-', "
                         "starting with a letter or digit (no paths, no '..'); maps live in the node's map_dir")
    return name


def map_path(map_dir: str | Path, name: str) -> Path:
    """The folder of map ``name`` under ``map_dir`` ("" = ~/.embodied_ros/map); InputError for a bad name."""
    root = Path(map_dir or DEFAULT_MAP_DIR).expanduser()
    path = root / check_map_name(name)
    if path.is_symlink() or not path.resolve().is_relative_to(root.resolve()):
        raise InputError(f"map {name!r} is a link or lies outside {root}: refused")
    return path


def save_atomically(path: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(folder)`` on a fresh temporary folder, then make it ``path`` in one rename.

    Raises:
        OSError, or whatever ``write`` raises: ``path`` then still holds the previous map, if any,
        and no temporary folder is left behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.saving-", dir=path.parent))
    try:
        write(tmp)
        for f in tmp.iterdir():  # the files' data is on disk before the rename makes them the map
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
        aside = _aside(path)
        shutil.rmtree(aside, ignore_errors=True)
        if path.exists():
            path.rename(aside)
        tmp.rename(path)
        shutil.rmtree(aside, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def recover(path: Path) -> None:
    """Put back the previous map when a crash came between a save's two renames."""
    aside = _aside(path)
    if not path.exists() and aside.is_dir():
        aside.rename(path)
