"""Keyframe selection and the worker thread that runs the network off the ROS callbacks.

The callbacks only assemble a Frame and hand it to :meth:`KeyframeWorker.submit`, which never
blocks: the queue holds one frame, and a frame still waiting when a newer keyframe arrives is
replaced (counted as dropped), so the network always works on the newest view and a slow
network costs frames, never latency or memory. Plain Python (no rclpy), so it is shared by the
node and its tests.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..frame import Frame

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class KeyframePolicy:
    """When a frame is worth running the network on (any one condition suffices)."""

    # Camera moved at least this far since the last keyframe (metres).
    min_translation: float = 0.05
    # Camera turned at least this much since the last keyframe (radians).
    min_rotation: float = 0.1
    # At least this much time passed since the last keyframe (seconds); 0 = every frame.
    max_interval: float = 1.0

    def is_keyframe(self, last: Frame | None, frame: Frame) -> bool:
        if last is None or self.max_interval <= 0.0:
            return True
        if (frame.stamp_ns - last.stamp_ns) * 1e-9 >= self.max_interval:
            return True
        delta = np.linalg.inv(last.T_world_camera) @ frame.T_world_camera
        angle = np.arccos(np.clip((np.trace(delta[:3, :3]) - 1.0) / 2.0, -1.0, 1.0))
        return bool(np.linalg.norm(delta[:3, 3]) >= self.min_translation or angle >= self.min_rotation)


@dataclass
class WorkerStats:
    """Counters since start (read by diagnostics; written by the callback and worker threads)."""

    received: int = 0  # frames submitted
    keyframes: int = 0  # frames selected as keyframes
    processed: int = 0  # keyframes the worker finished
    dropped: int = 0  # keyframes replaced in the queue by a newer one before the worker took them
    failed: int = 0  # keyframes whose processing raised
    last_latency_s: float = 0.0  # submit -> processing finished, last keyframe
    last_stage_s: dict[str, float] | None = None  # per-stage seconds of the last keyframe
    started_at: float = 0.0  # time.monotonic() at start


class KeyframeWorker:
    """One background thread running ``process(frame)`` on the newest keyframe.

    Args:
        process: called in the worker thread with each keyframe; returns per-stage seconds.
        policy: keyframe selection.
        on_error: called with one line when a keyframe's processing raises (default: log.error).
        name: thread name.
    """

    def __init__(self, process: Callable[[Frame], dict[str, float]], policy: KeyframePolicy,
                 on_error: Callable[[str], None] | None = None, name: str = "embodied-keyframes") -> None:
        self._process = process
        self._on_error = on_error or log.error
        self.policy = policy
        self.stats = WorkerStats(started_at=time.monotonic())
        self._cond = threading.Condition()
        self._slot: tuple[Frame, float] | None = None
        self._last_key: Frame | None = None
        self._busy = False
        self._stop = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, frame: Frame) -> bool:
        """Offer a frame; returns True when it was taken as a keyframe. Never blocks on the network."""
        with self._cond:
            self.stats.received += 1
            if not self.policy.is_keyframe(self._last_key, frame):
                return False
            self._last_key = frame
            self.stats.keyframes += 1
            if self._slot is not None:
                self.stats.dropped += 1
            self._slot = (frame, time.perf_counter())
            self._cond.notify()
            return True

    def wait_idle(self, timeout: float) -> bool:
        """Block until the queue is empty and the worker idle (tests, shutdown); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._slot is not None or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self, timeout: float = 5.0) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._slot is None and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                frame, submitted = self._slot  # type: ignore[misc]
                self._slot, self._busy = None, True
            try:
                stages = self._process(frame)
                self.stats.processed += 1
                self.stats.last_stage_s = stages
                self.stats.last_latency_s = time.perf_counter() - submitted
            except Exception as err:  # noqa: BLE001 - one bad keyframe must not end perception
                self.stats.failed += 1
                self._on_error(f"keyframe {frame.index} (stamp {frame.stamp_ns} ns) failed: "
                               f"{type(err).__name__}: {err}")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
