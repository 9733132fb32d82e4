"""A truncated MCAP file is read up to its last complete chunk (sources/mcap_truncation.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from embodied_ros.errors import InputError
from embodied_ros.sources.mcap_truncation import TruncatedMcap, mcap_truncation
from embodied_ros.sources.rosbag_source import RosbagSource

N = 40  # messages of 100 kB: rosbags closes a chunk at 1 MiB, so about 4 chunks


def _bag(tmp_path: Path) -> Path:
    """A rosbag2 folder with one .mcap of N numbered String messages; returns the .mcap."""
    store = get_typestore(Stores.ROS2_HUMBLE)
    String = store.types["std_msgs/msg/String"]
    with Writer(tmp_path / "bag", version=8, storage_plugin=StoragePlugin.MCAP) as writer:
        conn = writer.add_connection("/text", "std_msgs/msg/String", typestore=store)
        for i in range(N):
            writer.write(conn, 1000 + i, store.serialize_cdr(String(data=f"{i:04d}" + "x" * 100_000),
                                                             "std_msgs/msg/String"))
    return next((tmp_path / "bag").glob("*.mcap"))


def _numbers(path: object) -> list[int]:
    store = get_typestore(Stores.ROS2_HUMBLE)
    with AnyReader([path], default_typestore=store) as reader:  # type: ignore[list-item]
        return [int(reader.deserialize(raw, c.msgtype).data[:4]) for c, _, raw in reader.messages()]


def test_the_complete_chunks_of_a_cut_file_are_read(tmp_path: Path) -> None:
    full = _bag(tmp_path)
    assert mcap_truncation(full) is None
    data = full.read_bytes()
    cut = tmp_path / "cut.mcap"
    cut.write_bytes(data[: len(data) * 7 // 10])
    with pytest.raises(Exception, match="magic"):  # what rosbags alone says
        _numbers(cut)
    found = mcap_truncation(cut)
    assert found is not None and found.chunks >= 2 and found.readable < found.size
    got = _numbers(TruncatedMcap(cut, found))
    assert got == list(range(len(got))) and N // 3 <= len(got) < N  # the first messages, in order


def test_a_bag_cut_before_its_first_chunk_says_so(tmp_path: Path) -> None:
    full = _bag(tmp_path)
    full.write_bytes(full.read_bytes()[:5000])
    with pytest.raises(InputError, match="truncated before its first complete chunk"):
        RosbagSource(full.parent)
