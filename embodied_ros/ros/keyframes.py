"""The worker thread that runs the network off the ROS callbacks, on the keyframes ..keyframe_policy picks.

The callbacks only assemble a Frame and hand it to :meth:`KeyframeWorker.submit`, which never
blocks. Every frame is accounted for: it is a keyframe the worker processes, or it is skipped and
counted as such: not a keyframe by the policy, replaced in the one-frame queue by a newer keyframe,
or stale (it arrived while the worker was busy and waited longer than ``max_wait``: the worker
takes the next, fresher frame instead, so a slow network costs frames, never latency or memory).
Skipped frames still carry depth: when the worker is idle and the next frame is not due before the
fusion would end (the input's period and the fusion's cost, both measured), the newest skipped
frame's depth goes into the occupancy map. A frame still waiting for another detector's output
(:meth:`KeyframeWorker.ahead`) has the part of its step that needs the frame alone done while it waits,
when the worker is idle. Plain Python (no rclpy), so it is shared by the node and its tests.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..frame import Frame
from ..keyframe_policy import KeyframePolicy

log = logging.getLogger(__name__)

_EMA = 0.2  # weight of the newest measurement in the input period and fusion cost estimates


@dataclass
class WorkerStats:
    """Counters since start (read by diagnostics; written by the callback and worker threads).

    received = processed + failed + not_keyframes + dropped (+ the frame in the queue, if any).
    """

    received: int = 0  # frames submitted
    keyframes: int = 0  # frames the policy selected as keyframes
    processed: int = 0  # keyframes the worker finished
    dropped: int = 0  # keyframes skipped: replaced in the queue by a newer one, or stale (KeyframePolicy.max_wait)
    stale: int = 0  # of those, the stale ones
    not_keyframes: int = 0  # frames the policy did not select
    depth_fused: int = 0  # skipped frames (either kind) whose depth went into the occupancy map
    prepared: int = 0  # frames waiting for their detections whose discovery began meanwhile (KeyframeWorker.ahead)
    failed: int = 0  # keyframes whose processing raised
    last_latency_s: float = 0.0  # submit -> processing finished, last keyframe
    last_stage_s: dict[str, float] | None = None  # per-stage seconds of the last keyframe
    started_at: float = 0.0  # time.monotonic() at start

    @property
    def skipped(self) -> int:
        """Frames not run through the network, each for a stated reason."""
        return self.dropped + self.not_keyframes


class KeyframeWorker:
    """One background thread running ``process(frame)`` on the newest keyframe, and ``fuse_depth(frame)``
    on skipped frames when there is time.

    Args:
        process: called in the worker thread with each keyframe; returns per-stage seconds.
        policy: keyframe selection.
        on_error: called with one line when a keyframe's processing raises (default: log.error).
        name: thread name.
        fuse_depth: called in the worker thread with a skipped frame, to fuse its depth into the
            occupancy map; None: skipped frames are only counted.
        prepare: called in the worker thread with a frame given to :meth:`ahead`, while it waits for its
            detections (SceneMapper.prepare); None: nothing is done ahead.
    """

    def __init__(self, process: Callable[[Frame], dict[str, float]], policy: KeyframePolicy,
                 on_error: Callable[[str], None] | None = None, name: str = "embodied-keyframes",
                 fuse_depth: Callable[[Frame], object] | None = None,
                 prepare: Callable[[Frame], object] | None = None) -> None:
        self._process = process
        self._fuse_depth = fuse_depth
        self._prepare = prepare
        self._ahead: Frame | None = None  # the newest frame waiting for its detections, not yet prepared
        self._on_error = on_error or log.error
        self.policy = policy
        self.stats = WorkerStats(started_at=time.monotonic())
        self._cond = threading.Condition()
        self._slot: tuple[Frame, float, bool] | None = None  # (frame, submitted at, arrived while busy)
        self._skipped: Frame | None = None  # the newest skipped frame, for its depth
        self._last_key: Frame | None = None
        self._busy = False
        self._ahead_of: int | None = None  # the stamp of the frame the worker is doing ahead, while it does
        self._stop = False
        self._last_arrival: float | None = None
        self.input_period_s = 0.0  # measured time between frames (moving average)
        self.fuse_cost_s = 0.0  # measured cost of fusing one skipped frame's depth (moving average)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, frame: Frame) -> bool:
        """Offer a frame; returns True when it was taken as a keyframe. Never blocks on the network."""
        now = time.perf_counter()
        with self._cond:
            self.stats.received += 1
            if self._last_arrival is not None:
                gap = now - self._last_arrival
                self.input_period_s = gap if not self.input_period_s else (1 - _EMA) * self.input_period_s + _EMA * gap
            self._last_arrival = now
            if not self.policy.is_keyframe(self._last_key, frame):
                self.stats.not_keyframes += 1
                self._skip(frame)
                return False
            self._last_key = frame
            self.stats.keyframes += 1
            if self._ahead is not None and self._ahead.stamp_ns <= frame.stamp_ns:
                self._ahead = None  # too late to do ahead: the keyframe is here
            if self._slot is not None:
                self.stats.dropped += 1
                self._skip(self._slot[0])
            self._slot = (frame, now, self._busy and self._ahead_of != frame.stamp_ns)  # its own work ahead: not late
            self._cond.notify()
            return True

    def skip(self, frame: Frame) -> None:
        """A frame the caller does not run through the network (its detections never came): like a skipped
        keyframe, its depth goes into the occupancy map when there is time. Never blocks."""
        with self._cond:
            self._skip(frame)

    def ahead(self, frame: Frame) -> None:
        """A frame that waits for another detector's output: when the worker is idle and the policy would take it
        as a keyframe, the part of its step that needs the frame alone is done now (the newest such frame only).
        Never blocks."""
        if self._prepare is None:
            return
        with self._cond:
            if self.policy.is_keyframe(self._last_key, frame):
                self._ahead = frame
                self._cond.notify()

    def _skip(self, frame: Frame) -> None:
        """Keep a skipped frame for its depth (the newest one only); called under the lock."""
        if self._fuse_depth is not None:
            self._skipped = frame
            self._cond.notify()

    def wait_idle(self, timeout: float) -> bool:
        """Block until no keyframe is queued and the worker is idle (tests, shutdown); False on timeout."""
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

    def _next_job(self) -> tuple[str, Frame, float] | None:
        """Under the lock: ("key", frame, submitted), ("ahead", frame, 0.0) or ("depth", frame, 0.0) to do now, or
        None to wait."""
        if self._slot is not None:
            frame, submitted, queued = self._slot
            self._slot = None
            wait = self.policy.max_wait
            if queued and wait > 0 and time.perf_counter() - submitted > wait:
                self.stats.dropped += 1
                self.stats.stale += 1
                self._skip(frame)
                if self._last_key is frame:  # never processed: the next frame is the keyframe, however close
                    self._last_key = None
                return None
            return "key", frame, submitted
        if self._ahead is not None:
            frame, self._ahead = self._ahead, None
            return "ahead", frame, 0.0
        if self._skipped is not None:
            frame, self._skipped = self._skipped, None
            # Only when the next frame is not due before the fusion would end; a stream that paused
            # (no frame for two periods) or no measure yet: try.
            due = (self._last_arrival or 0.0) + self.input_period_s - time.perf_counter()
            if not self.input_period_s or due > self.fuse_cost_s or due < -self.input_period_s:
                return "depth", frame, 0.0
        return None

    def _run(self) -> None:
        while True:
            with self._cond:
                job = None
                while job is None:
                    if self._stop:
                        return
                    job = self._next_job()
                    if job is None and self._slot is None and self._skipped is None and self._ahead is None:
                        self._cond.wait()
                kind, frame, submitted = job
                self._busy = True
                self._ahead_of = frame.stamp_ns if kind == "ahead" else None
            try:
                if kind == "key":
                    stages = self._process(frame)
                    self.stats.processed += 1
                    self.stats.last_stage_s = stages
                    self.stats.last_latency_s = time.perf_counter() - submitted
                elif kind == "ahead":
                    self._prepare(frame)  # type: ignore[misc]
                    self.stats.prepared += 1
                else:
                    start = time.perf_counter()
                    self._fuse_depth(frame)  # type: ignore[misc]
                    cost = time.perf_counter() - start
                    self.fuse_cost_s = cost if not self.fuse_cost_s else (1 - _EMA) * self.fuse_cost_s + _EMA * cost
                    self.stats.depth_fused += 1
            except Exception as err:  # noqa: BLE001 - one bad frame must not end perception
                if kind == "key":
                    self.stats.failed += 1
                what = {"key": "keyframe", "ahead": "discovery ahead of frame"}.get(kind, "depth of frame")
                self._on_error(f"{what} {frame.index} "
                               f"(stamp {frame.stamp_ns} ns) failed: {type(err).__name__}: {err}")
            finally:
                with self._cond:
                    self._busy = False
                    self._ahead_of = None
                    self._cond.notify_all()
