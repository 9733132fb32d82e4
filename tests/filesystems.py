"""Full and read-only disks for the tests: a real tmpfs where this machine lets the tests mount one.

Mounting needs root with CAP_SYS_ADMIN (a developer machine, a privileged container); CI may not
allow it. Where it cannot, :func:`disk_full_after` stands in for a full disk: every file opened
for writing under a folder gets writes that fail with ENOSPC once the folder's budget is spent,
as a full file system's write(2) does. That is the one fault injected by hand; everything else is real.
"""

from __future__ import annotations

import builtins
import errno
import io
import os
import pathlib
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def mount_tmpfs(where: Path, size_bytes: int) -> bool:
    """Mount a tmpfs of ``size_bytes`` at ``where`` (created); False when this machine does not allow it.

    ``EMBODIED_ROS_TEST_NO_MOUNT=1`` answers False anyway: the stand-ins CI may get, tried on a machine that mounts.
    """
    if os.geteuid() != 0 or shutil.which("mount") is None or os.environ.get("EMBODIED_ROS_TEST_NO_MOUNT"):
        return False
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(where)],
                          capture_output=True)
    return done.returncode == 0


def remount_read_only(where: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, capture_output=True)


def unmount(where: Path) -> None:
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


@contextmanager
def tmpfs(where: Path, size_bytes: int) -> Iterator[Path]:
    """A mounted tmpfs for the ``with`` block; the test skips where none can be mounted."""
    if not mount_tmpfs(where, size_bytes):
        pytest.skip("cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN); the emulated full disk runs instead")
    try:
        yield where
    finally:
        unmount(where)


@contextmanager
def read_only(where: Path) -> Iterator[str]:
    """``where`` (created) read-only for the ``with`` block; yields the cause a write there reports.

    A read-only tmpfs where one can be mounted, else a folder without write permission (which
    root writes through: the test skips there).
    """
    if mount_tmpfs(where, 1 << 20):
        try:
            remount_read_only(where)
            yield "Read-only file system"
        finally:
            unmount(where)
        return
    if os.geteuid() == 0:
        pytest.skip("cannot mount a read-only tmpfs here, and root writes through permission bits")
    where.mkdir(parents=True, exist_ok=True)
    where.chmod(0o555)
    try:
        yield "Permission denied"
    finally:
        where.chmod(0o755)


def fill(where: Path, leave_free: int) -> Path:
    """Write a filler file so that about ``leave_free`` bytes stay free on the file system of ``where``."""
    filler = where / "filler.bin"
    size = max(0, shutil.disk_usage(where).free - leave_free)
    chunk = b"\0" * (1 << 20)
    try:
        with filler.open("wb") as f:
            while size > 0:
                f.write(chunk[: min(size, len(chunk))])
                size -= len(chunk)
    except OSError as err:
        if err.errno != errno.ENOSPC:
            raise  # full a few blocks early: full is what was asked for
    return filler


class _Budget:
    def __init__(self, folder: Path, limit: int) -> None:
        self.folder, self.limit, self.used = folder.resolve(), limit, 0


class _FullDiskFile:
    """A file object whose writes fail with ENOSPC once the budget is spent (as write(2) on a full disk)."""

    def __init__(self, file: Any, budget: _Budget) -> None:
        self._file, self._budget = file, budget

    def write(self, data: Any) -> int:
        n = len(data.encode()) if isinstance(data, str) else memoryview(data).nbytes
        if self._budget.used + n > self._budget.limit:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._budget.used += n
        return self._file.write(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._file)

    def __enter__(self) -> _FullDiskFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


@contextmanager
def disk_full_after(monkeypatch: pytest.MonkeyPatch, folder: Path, budget_bytes: int) -> Iterator[None]:
    """Files written under ``folder`` hold at most ``budget_bytes`` in all; further writes raise ENOSPC."""
    budget = _Budget(folder, budget_bytes)
    real_open = io.open

    def guarded_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        opened = real_open(file, mode, *args, **kwargs)
        if isinstance(file, (str, os.PathLike)) and any(c in mode for c in "wax+"):
            if Path(file).resolve().is_relative_to(budget.folder):
                return _FullDiskFile(opened, budget)
        return opened

    with monkeypatch.context() as patch:
        patch.setattr(builtins, "open", guarded_open)
        patch.setattr(io, "open", guarded_open)
        accessor = getattr(pathlib, "_NormalAccessor", None)  # Python 3.10's Path.open goes through it
        if accessor is not None and hasattr(accessor, "open"):
            patch.setattr(accessor, "open", staticmethod(guarded_open))
        yield
