"""Opening a rosbag2 recording with rosbags, including the ones a recorder did not finish.

A .db3 cut inside its last pages is found from its SQLite header (SQLite itself opens it without
complaint); an .mcap without its closing records is read up to its last complete chunk
(mcap_truncation.py); a folder whose metadata.yaml is empty or broken is read from its only .mcap,
which describes itself. Everything else that rosbags cannot read is an InputError in one line.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import yaml
from rosbags.highlevel import AnyReader
from rosbags.typesys import Stores, get_typestore

from ..errors import InputError
from .mcap_truncation import TruncatedMcap, mcap_truncation

# The warnings keep the reader's logger name (what `embodied-ros run` prints before each line).
log = logging.getLogger(__package__ + ".rosbag_source")


def open_rosbag(path: Path) -> tuple[AnyReader, str]:
    """The opened reader of a rosbag2 folder or .mcap/.db3 file, and how a truncated .mcap is read ("" when whole).

    Raises:
        InputError: no such path, a truncated .db3, an .mcap cut before its first chunk, or a bag rosbags
            cannot read (with no single .mcap to read instead of a broken metadata.yaml).
    """
    if not path.exists():
        raise InputError(f"rosbag {path} does not exist")
    db_files = sorted(path.glob("*.db3")) if path.is_dir() else [path]
    for db_file in (f for f in db_files if f.suffix == ".db3"):
        problem = sqlite_truncation(db_file)
        if problem:
            raise InputError(f"rosbag {path} is truncated or corrupt: {problem}")
    readable, truncation = _readable_mcap(path)
    target: Any = readable or path
    try:
        return _reader_of(target), truncation
    except Exception as err:  # rosbags, sqlite (apsw) and mcap raise many unrelated types
        alone = _metadata_fallback(path, err) if target == path else None
        if alone is None:
            raise InputError(f"cannot read rosbag {path}: {one_line(err)}") from None
    try:
        return _reader_of(alone), truncation
    except Exception as err:  # noqa: BLE001 - as above
        raise InputError(f"cannot read rosbag {alone}: {one_line(err)}") from None


def _reader_of(target: Any) -> AnyReader:
    """An opened rosbags reader of one bag, file or TruncatedMcap."""
    # Bags from ROS 2 Foxy and older carry no message definitions: fall back to Humble's.
    reader = AnyReader([target], default_typestore=get_typestore(Stores.ROS2_HUMBLE))
    reader.open()
    return reader


def _metadata_fallback(path: Path, err: Exception) -> Path | None:
    """A folder's only .mcap, to read on its own when its metadata.yaml made ``err`` (MCAP describes
    itself: a recorder that did not finish leaves an empty or partial metadata.yaml); None when ``err``
    is another fault.

    Raises:
        InputError: the metadata.yaml is unusable and there is no single .mcap to read instead.
    """
    meta, mcaps = path / "metadata.yaml", sorted(path.glob("*.mcap")) if path.is_dir() else []
    if not meta.is_file():
        return None
    try:
        empty = yaml.safe_load(meta.read_text()) is None
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        empty = False
    if not (empty or "metadata" in str(err).lower()):  # rosbags names its metadata faults so
        return None
    problem = "is empty" if empty else f"cannot be used ({one_line(err)})"
    if len(mcaps) != 1:
        raise InputError(f"cannot read rosbag {path}: its metadata.yaml {problem}; a recorder that did not "
                         f"finish? `ros2 bag reindex {path}` writes it again")
    log.warning("rosbag %s: its metadata.yaml %s: reading %s on its own (an MCAP file describes itself)",
                path, problem, mcaps[0].name)
    return mcaps[0]


def _readable_mcap(path: Path) -> tuple[TruncatedMcap | None, str]:
    """The readable part of a truncated .mcap (the file, or a rosbag2 folder's only one), or None; and how
    it is read ("" when whole).

    Raises:
        InputError: truncated before its first complete record.
    """
    files = sorted(path.glob("*.mcap")) if path.is_dir() else [path]
    if len(files) != 1 or files[0].suffix != ".mcap":
        return None, ""
    try:
        cut = mcap_truncation(files[0])
    except OSError as err:
        raise InputError(f"cannot read rosbag {files[0]}: {err.strerror or err}") from None
    if cut is None:
        return None, ""
    if not (cut.chunks or cut.messages):
        raise InputError(f"rosbag {files[0]} is truncated before its first complete chunk ({cut.size} bytes, "
                         "without MCAP's closing magic): nothing in it can be read")
    truncation = cut.summary()
    log.warning("rosbag %s is %s", files[0], truncation)
    return TruncatedMcap(files[0], cut), truncation


def sqlite_truncation(path: Path) -> str | None:
    """Why a rosbag2 .db3 file is shorter than its header says, or None.

    SQLite opens a file cut inside its last pages without complaint, so the size recorded in
    the header (page size x page count, trusted when the change counter matches
    version-valid-for, as SQLite does) is compared with the file size. A -wal file next to
    it means the header may be stale: no verdict then.
    """
    if path.with_name(path.name + "-wal").exists():
        return None
    with path.open("rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return f"{path.name} is not an SQLite database"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] == head[92:96] and pages and path.stat().st_size < page_size * pages:
        return f"{path.name} has {path.stat().st_size} bytes, its header says {page_size * pages}"
    return None


def one_line(err: BaseException) -> str:
    """An error's message on one line (its class name when it has none)."""
    return " ".join(str(err).split()) or type(err).__name__
