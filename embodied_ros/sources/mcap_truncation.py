"""A truncated MCAP file (a recorder killed, a full disk) read up to its last complete record.

rosbags opens an MCAP file through its footer, so a file cut short fails with "File end magic is
invalid". The records before the cut are whole: :class:`TruncatedMcap` shows rosbags the file as
those records followed by a footer without a summary, and rosbags then scans the data section
itself (as it does for files written without an index). Nothing is written to disk; ``mcap
recover`` (the MCAP command line tool) writes a repaired copy for other readers.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAGIC = b"\x89MCAP0\r\n"
_CHUNK, _MESSAGE, _FOOTER_OP = 0x06, 0x05, 0x02
# A Footer record (opcode 0x02, 20 bytes: summary start 0 = none, summary offset start 0, crc 0) + magic.
FOOTER = bytes([_FOOTER_OP]) + (20).to_bytes(8, "little") + bytes(20) + MAGIC


@dataclass(frozen=True)
class Truncation:
    """Where an MCAP file was cut.

    Attributes:
        size: bytes in the file.
        readable: bytes of whole records from its start.
        chunks: whole chunk records among them; messages: whole message records outside chunks.
    """

    size: int
    readable: int
    chunks: int
    messages: int

    def summary(self) -> str:
        return (f"truncated: {self.size} bytes without MCAP's closing magic; read up to byte {self.readable}, its "
                f"last complete record ({self.chunks} complete chunks); `mcap recover` writes a repaired copy")


def mcap_truncation(path: Path) -> Truncation | None:
    """How ``path`` was cut, or None when it ends as an MCAP file does (or is no MCAP file at all)."""
    with path.open("rb") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(0)
        if f.read(8) != MAGIC:
            return None  # not MCAP: the reader says what it is
        if size >= 16:
            f.seek(size - 8)
            if f.read(8) == MAGIC:
                return None
        pos, chunks, messages = 8, 0, 0
        while pos + 9 <= size:
            f.seek(pos)
            head = f.read(9)
            length = int.from_bytes(head[1:], "little")
            if head[0] == _FOOTER_OP or pos + 9 + length > size:
                break
            chunks += head[0] == _CHUNK
            messages += head[0] == _MESSAGE
            pos += 9 + length
    return Truncation(size, pos, chunks, messages)


class _ReadableView(io.RawIOBase):
    """The first ``readable`` bytes of a file followed by FOOTER, as one seekable binary file."""

    def __init__(self, path: Path, readable: int) -> None:
        self._file = path.open("rb")
        self._readable = readable
        self._size = readable + len(FOOTER)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        if self._pos < self._readable:
            self._file.seek(self._pos)
            done = self._file.readinto(view[: min(len(view), self._readable - self._pos)]) or 0
        if done < len(view) and self._pos + done >= self._readable:
            start = self._pos + done - self._readable
            tail = FOOTER[start: start + len(view) - done]
            view[done: done + len(tail)] = tail
            done += len(tail)
        self._pos += done
        return done

    def close(self) -> None:
        self._file.close()
        super().close()


class TruncatedMcap:
    """The readable part of a truncated .mcap as a path rosbags can open (its ``RPath`` protocol).

    Args:
        path: the .mcap file.
        cut: ``mcap_truncation(path)``.
    """

    def __init__(self, path: Path, cut: Truncation) -> None:
        self.path, self.cut = path, cut
        self.name, self.stem, self.suffix = path.name, path.stem, path.suffix

    def exists(self) -> bool:
        return True

    def is_dir(self) -> bool:
        return False

    def open(self, mode: str = "rb", *_args: Any, **_kwargs: Any) -> io.BufferedReader:
        if mode != "rb":
            raise OSError(f"{self.path}: a truncated recording is opened for reading only")
        return io.BufferedReader(_ReadableView(self.path, self.cut.readable))

    def __str__(self) -> str:
        return str(self.path)

    def __repr__(self) -> str:
        return f"TruncatedMcap({str(self.path)!r}, readable={self.cut.readable})"
