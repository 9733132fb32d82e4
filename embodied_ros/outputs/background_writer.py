"""The run's bag written on a thread of its own: the perception loop hands each frame over and goes on.

Serialising and compressing a frame's messages (its colour as JPEG, its depth as PNG, the markers,
the chunks' zstd) cost as much as the detector; OpenCV and zstd release the GIL while they work, so
on a thread they overlap the next frame's network and map. The queue is short: a writer that falls
behind makes the loop wait (memory stays bounded) rather than dropping anything. A failure on the
writer's thread (a full disk) is raised on the loop's next hand-over, or by ``close``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..frame import Frame
from ..occupancy.results import OccupiedVoxels
from .bag_writer import SceneBagWriter
from .scene_messages import ObjectLike

__all__ = ["BackgroundBagWriter"]

QUEUE_FRAMES = 8  # frames waiting for the writer at most (640x480 RGB-D: about 2 MB each)


class BackgroundBagWriter:
    """A SceneBagWriter fed from one thread, writing on another.

    Args:
        writer: the bag to write (used only by this object's thread until ``close``/``abort``).
        depth: frames that may wait; a full queue makes ``write`` wait.
    """

    def __init__(self, writer: SceneBagWriter, depth: int = QUEUE_FRAMES) -> None:
        self._writer = writer
        self._queue: queue.Queue[tuple[Frame, Sequence[ObjectLike], OccupiedVoxels | None, Any] | None] = \
            queue.Queue(maxsize=depth)
        self._error: BaseException | None = None  # to raise on the loop's thread (once)
        self._failed = False
        self.busy_s = 0.0  # seconds the writer's thread spent writing
        self.frames_written = 0
        self._thread = threading.Thread(target=self._run, name="embodied-bag-writer", daemon=True)
        self._thread.start()

    def write(self, frame: Frame, objects: Sequence[ObjectLike], occupancy: OccupiedVoxels | None,
              structure: Sequence[ObjectLike] = (),
              changes: tuple[Sequence[Any], Sequence[Any] | None] | None = None) -> None:
        """Queue a frame's inputs and the scene as it stood after it (objects, voxels and the room's structure
        must not change); ``changes``: the change events it made and, when they are to be drawn again, the
        recent ones (SceneBagWriter.write_changes).

        Raises:
            Whatever the writer's thread met (an OSError for a full disk), once.
        """
        self._raise_failure()
        self._queue.put((frame, objects, occupancy, structure, changes))

    def close(self) -> Path:
        """Write what is queued, finish the bag; returns the path of scene.mcap.

        Raises:
            What the writer's thread met, if it failed (the bag is then left unfinished).
        """
        self._finish()
        if self._failed:
            self._writer.abort()
            self._raise_failure()
        return self._writer.close()

    def abort(self) -> None:
        """Stop without finishing the bag (after a failure); never raises."""
        self._finish()
        self._writer.abort()

    def _finish(self) -> None:
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()

    def _raise_failure(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _run(self) -> None:
        while (job := self._queue.get()) is not None:
            if self._failed:
                continue  # failed: keep taking jobs so the loop never waits on a dead writer
            frame, objects, occupancy, structure, changes = job
            start = time.perf_counter()
            try:
                self._writer.write_inputs_of(frame)
                self._writer.write_scene(frame.stamp_ns, frame.world_frame, objects, occupancy, structure)
                if changes is not None:
                    self._writer.write_changes(frame.stamp_ns, frame.world_frame, *changes)
                self.frames_written += 1
            except BaseException as err:  # noqa: BLE001 - handed to the loop's thread, raised there
                self._error, self._failed = err, True
            self.busy_s += time.perf_counter() - start
