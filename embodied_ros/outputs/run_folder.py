"""The output folder of a run: checked before anything is touched, written beside the previous run, then swapped in.

A folder is this tool's when it holds :data:`MARKER`, which lists the files its run wrote. `run`
writes only into a new folder, an empty one, or one holding a run of its own (then only with
``--overwrite``); a folder with anything else in it (a user's files, a run of an older version
without the marker) is refused before the recording or the model is opened. The new run goes into
a hidden work folder inside the output folder (the same file system, so every move is a rename;
it also works where ``--out`` is a mount point whose parent cannot be written) and is moved into
place at the end: the previous run's files are replaced one by one, those of its files the new run
does not write are removed, and anything else in the folder is left alone. A run that fails (an
OS error, a full disk) removes its work folder, so the output folder is as it was. ROS-free.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import OutputError, json_error_line, os_error_line

__all__ = ["MARKER", "PreviousRun", "RunFolder", "check_free_space", "check_output_folder", "read_marker"]

MARKER = "embodied_ros_run.json"
FORMAT = "embodied_ros/run"
WORK_PREFIX = ".embodied_ros_writing-"
BAG_FILES = ("scene.mcap", "metadata.yaml")
RUN_FILES = (*BAG_FILES, "objects.json", "memory.json", "camera_poses.json", "top_down.png", "objects.png",
             "boxes_frame_*.png", "demo_metrics.json")
"""Names a run writes: a file of these names that a folder's marker does not list is a user's."""
MIN_FREE_BYTES = 2_000_000  # pictures and memory.json of a short run (redkitchen, 8 frames: 2.8 MB)
BYTES_PER_FRAME = {True: 100_000, False: 10_000}  # at least, with and without the inputs in the bag
# (redkitchen, 640x480: 150 kB a frame with inputs; a lower bound, so a run is refused only when it
# surely cannot fit; a disk that fills up anyway stops the run cleanly)


@dataclass(frozen=True)
class PreviousRun:
    """What the marker of the run already in a folder says.

    Attributes:
        files: names of the files that run wrote (only plain names: never a path elsewhere).
        state: "complete", or how it stopped.
        frames_processed: frames that went into its map.
    """

    files: tuple[str, ...]
    state: str
    frames_processed: int


def _run_file_name(name: str) -> bool:
    """A name a run writes: a plain name (no path, not hidden) of :data:`RUN_FILES`."""
    return name == Path(name).name and not name.startswith(".") and any(fnmatch(name, p) for p in RUN_FILES)


def read_marker(folder: Path) -> PreviousRun | None:
    """The run recorded in ``folder``'s marker; None when there is none or it is unreadable.

    Only names a run writes are taken from it (:data:`RUN_FILES`): a marker listing anything else
    (``../victim.txt``, an absolute path, a subfolder, a user's ``notes.txt``) is not this tool's
    word, so those entries are never replaced or removed (and the next marker leaves them out).
    """
    try:
        doc = json.loads((folder / MARKER).read_text())
        if doc.get("format") != FORMAT:
            return None
        files = tuple(str(f) for f in doc["files"])
        state, frames = str(doc.get("state", "")), int(doc.get("frames_processed", 0))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return PreviousRun(tuple(f for f in files if _run_file_name(f)), state, frames)


def _marker_problem(folder: Path) -> str:
    """Why ``folder``'s marker, which is there, cannot be read ("" when it can, or is absent)."""
    path = folder / MARKER
    if not path.exists() or read_marker(folder) is not None:
        return ""
    try:
        doc = json.loads(path.read_text())
    except OSError as err:
        return os_error_line(err)
    except ValueError as err:
        return json_error_line(err)
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return f"it is not a marker of this tool (no \"format\": \"{FORMAT}\")"
    return "its \"files\" list is missing or not a list of names"


def _is_work_folder(path: Path) -> bool:
    return path.name.startswith(WORK_PREFIX) and path.is_dir() and not path.is_symlink()


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (a file among them ends the walk: that is the answer)."""
    while not path.exists() and path.parent != path:
        if path.is_symlink():  # a dangling link: writing through it would create its target
            break
        path = path.parent
    return path


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (links followed on both sides)."""
    path, folder = Path(os.path.realpath(path)), Path(os.path.realpath(folder))
    return path == folder or folder in path.parents


def check_output_folder(out: Path, overwrite: bool, reads: tuple[object, ...] = ()) -> PreviousRun | None:
    """Everything about ``--out`` that can be known before writing; leaves nothing behind.

    Writability is tried with a folder made and removed at once (root passes permission bits,
    and a read-only file system shows only on a write).

    Args:
        out: the output folder.
        overwrite: a run of this tool there may be replaced.
        reads: what the run reads (the source, a trajectory file; None or a name such as
            ``synthetic:7`` that is no path here are passed over): ``out`` must not hold any.

    Returns:
        The run already in ``out`` (``overwrite`` given), or None for a new or empty folder.

    Raises:
        OutputError: ``out`` holds what the run reads (even with ``overwrite``), ``out`` or a folder
            above it is a file, ``out`` holds files that are not this tool's, holds a run and
            ``overwrite`` is not given, or cannot be written.
    """
    for read in reads:
        if read is not None and Path(str(read)).exists() and _inside(Path(str(read)), out):
            raise OutputError(f"--out {out} holds what the run reads ({read}): writing there would replace it, "
                              "even with --overwrite; nothing was written: choose another --out")
    existing = _nearest_existing(out)
    if existing.is_symlink() and not existing.exists():
        raise OutputError(f"--out {out}: {existing} is a link to nothing")
    if not existing.is_dir():
        if existing == out:
            raise OutputError(f"--out {out} is a file, not a folder")
        raise OutputError(f"--out {out}: {existing} is a file, not a folder")
    previous = _check_contents(out, overwrite) if existing == out else None
    try:
        os.rmdir(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=existing))
    except OSError as err:
        raise OutputError(f"--out {out}: cannot write in {existing}: {err.strerror or err}") from None
    return previous


def _check_contents(out: Path, overwrite: bool) -> PreviousRun | None:
    try:
        entries = [p for p in out.iterdir() if not _is_work_folder(p)]
    except OSError as err:
        raise OutputError(f"--out {out}: cannot list it: {err.strerror or err}") from None
    if not entries:
        return None
    previous = read_marker(out)
    broken = _marker_problem(out)
    if broken:
        raise OutputError(f"--out {out}: its {MARKER} cannot be read ({broken}), so which files its run wrote is "
                          "not known; nothing was written: look at the folder and remove its run's files and the "
                          "marker yourself, or choose another --out")
    if previous is None:
        older = (f" (its scene.mcap looks like a run of an older version, written without {MARKER}: "
                 "move it away or delete it yourself)" if (out / "scene.mcap").exists() else "")
        raise OutputError(f"--out {out} is not empty and holds no run of this tool (no {MARKER}){older}; "
                          "nothing was written: choose a new or empty folder")
    if not overwrite:
        raise OutputError(f"--out {out} already holds a run ({previous.frames_processed} frames, {previous.state}); "
                          "pass --overwrite to replace it, or choose another --out")
    odd = sorted(p.name for p in entries if _run_file_name(p.name) and (p.is_dir() or not p.exists()))
    if odd:
        raise OutputError(f"--out {out}: {', '.join(odd)} has a name a run writes but is a folder (or a broken link), "
                          "which a run cannot replace; nothing was written: move it away or choose another --out")
    strangers = sorted(p.name for p in entries if p.name not in previous.files and _run_file_name(p.name))
    if strangers:
        raise OutputError(f"--out {out}: {', '.join(strangers)} not written by its run (not in {MARKER}) and a new "
                          "run could replace them; nothing was written: move them away or choose another --out")
    return previous


def check_free_space(out: Path, frames: int, write_inputs: bool = True) -> None:
    """OutputError when the file system of ``out`` surely cannot hold a run of ``frames`` frames."""
    where = _nearest_existing(out)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return  # no answer: the run finds out, and stops cleanly
    need = MIN_FREE_BYTES + max(frames, 0) * BYTES_PER_FRAME[write_inputs]
    if free < need:
        raise OutputError(f"--out {out}: only {free / 1e6:.1f} MB free on its file system ({where}); a run of "
                          f"{frames} frames needs at least about {need / 1e6:.0f} MB: free some space or choose "
                          "another --out")


class RunFolder:
    """Where a run writes (``path``, a hidden work folder inside ``out``) until ``commit`` moves it into ``out``.

    Use it as a context manager: leaving the block without a commit removes the work folder (and
    the folders this run created), and an OSError leaving it becomes one OutputError line naming
    the file and the cause.

    Args:
        out: the output folder (checked again: it may have changed since ``check_output_folder``).
        overwrite: a run already in ``out`` may be replaced.
    """

    def __init__(self, out: Path, overwrite: bool) -> None:
        self.out = out
        self.previous = check_output_folder(out, overwrite)
        self._created: list[Path] = []
        missing = out
        while not missing.exists():
            self._created.insert(0, missing)
            missing = missing.parent
        try:
            out.mkdir(parents=True, exist_ok=True)
            self.path = Path(tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-", dir=out))
        except OSError as err:
            self._remove_created()
            raise OutputError(f"--out {out}: cannot write: {os_error_line(err)}") from None
        self.committed = False

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 _tb: TracebackType | None) -> None:
        if self.committed:
            return
        self.discard()
        if isinstance(err, OSError):
            where = "nothing was written" if self._created else f"{self.out} is as it was"
            raise OutputError(f"cannot write {self._user_path(err)}; the run stopped and its partial files were "
                              f"removed: {where}") from None

    def _user_path(self, err: OSError) -> str:
        """The error's path as the user knows it: the work folder's files are named as in ``out``."""
        line = os_error_line(err, self.out)
        return line.replace(str(self.path), str(self.out))

    def commit(self, state: str = "complete", names: tuple[str, ...] | None = None, **record: Any) -> tuple[Path, ...]:
        """Move the run's files into ``out`` and write the marker; returns the files' paths.

        Args:
            state: how the run ended ("complete", or how far it got), for the marker.
            names: only these of the work folder's files (e.g. the bag of a run stopped at once);
                None: every one.
            record: more facts for the marker (source, frames_processed, ...).

        Raises:
            OutputError: a file of that name appeared in ``out`` that no run of this tool wrote
                (the new run is then left in the work folder, and the message says where), or
                the moves fail.
        """
        files = sorted(p.name for p in self.path.iterdir() if p.is_file() and (names is None or p.name in names))
        old = set(self.previous.files) if self.previous else set()
        taken = [n for n in files if n not in old and (self.out / n).exists()]
        if taken:
            self.committed = True  # keep the work folder: it is the only copy of the new run
            raise OutputError(f"{', '.join(taken)} appeared in {self.out} during the run and are not this tool's: "
                              f"left as they are; the new run is in {self.path}")
        try:
            # The marker first names the old and the new files: an --overwrite can clear a folder
            # left half-swapped by a crash.
            self._write_marker(sorted(old | set(files)), "being replaced", record)
            for name in files:
                os.replace(self.path / name, self.out / name)
            for name in sorted(old - set(files)):
                if not (self.out / name).is_dir():  # a folder of that name came after the check: left alone
                    (self.out / name).unlink(missing_ok=True)
            self._write_marker(files, state, record)
        except OSError as err:
            raise OutputError(f"cannot move the run into {self.out}: {self._user_path(err)}") from None
        self.committed = True
        shutil.rmtree(self.path, ignore_errors=True)
        self._remove_stale_work_folders()
        return tuple(self.out / n for n in files)

    def _write_marker(self, files: list[str], state: str, record: dict[str, Any]) -> None:
        doc = {"format": FORMAT, "state": state, **record, "files": files,
               "written": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        tmp = self.path / f".{MARKER}"
        tmp.write_text(json.dumps(doc, indent=1))
        os.replace(tmp, self.out / MARKER)

    def discard(self) -> None:
        """Remove the work folder and the folders this run created; never raises."""
        shutil.rmtree(self.path, ignore_errors=True)
        self._remove_created()

    def _remove_created(self) -> None:
        for folder in reversed(self._created):
            try:
                folder.rmdir()
            except OSError:
                return  # not empty (or gone): it is not only this run's

    def _remove_stale_work_folders(self) -> None:
        """Work folders of runs that were killed (their process is gone)."""
        for path in self.out.glob(f"{WORK_PREFIX}*"):
            pid = path.name[len(WORK_PREFIX):].split("-")[0]
            if _is_work_folder(path) and pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process
    return True
