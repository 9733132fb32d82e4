"""`embodied-ros inspect`: what a run would see in a recording, before a long run."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .errors import FrameError, InputError
from .sources.base import FrameSource
from .sources.preflight import RecordingOptions, prepare

_DEPTH_SAMPLE_STEP = 8  # every 8th pixel of every frame goes into the depth figures
_PROBLEMS_SHOWN = 10


@dataclass(frozen=True)
class Inspection:
    """The facts ``inspect`` prints, one per line (see ``text``).

    Attributes:
        name, layout: the recording and the kind of recording.
        frames_total: frames the recording holds (0 when unknown).
        frames_read: frames read (good and bad).
        stamps_ns: (N,) int64 stamps of the good frames, in order.
        size: (width, height) of the first good frame, or None.
        K: (3, 3) intrinsics of the first good frame, or None.
        depth_range_m: (1st, 99th) percentile of the valid depth, metres, or None.
        depth_valid: fraction of pixels with valid depth.
        notes: {line label: text} from the source and the preflight checks.
        problems: one message per frame that a run would skip.
        stop: the line a run would stop with (a pose problem, no usable frame), or None.
    """

    name: str
    layout: str
    frames_total: int
    frames_read: int
    stamps_ns: np.ndarray
    size: tuple[int, int] | None
    K: np.ndarray | None
    depth_range_m: tuple[float, float] | None
    depth_valid: float
    notes: dict[str, str]
    problems: tuple[str, ...]
    stop: str | None

    def rate_line(self) -> str:
        good = len(self.stamps_ns)
        head = f"{self.frames_total or 'unknown number of'} in the recording, {self.frames_read} read ({good} good)"
        if good < 2:
            return head
        span = (self.stamps_ns[-1] - self.stamps_ns[0]) / 1e9
        interval = float(np.median(np.diff(self.stamps_ns))) / 1e9
        rate = f"{1 / interval:.1f} per second" if interval > 0 else "no time between frames"
        return f"{head}; {rate} (median interval {1000 * interval:.1f} ms) over {span:.1f} s"

    def text(self) -> str:
        lines = [("recording", self.name), ("layout", self.layout), ("frames", self.rate_line())]
        if self.size is not None and self.K is not None:
            K = self.K
            lines.append(("image", f"{self.size[0]}x{self.size[1]}"))
            lines.append(("intrinsics", f"fx {K[0, 0]:.1f} fy {K[1, 1]:.1f} cx {K[0, 2]:.1f} cy {K[1, 2]:.1f} "
                                        f"({self.notes['intrinsics']})"))
            lines.append(("camera", self.notes["camera"]))
        if self.depth_range_m is not None:
            lo, hi = self.depth_range_m
            lines.append(("depth", f"{lo:.2f}-{hi:.2f} m (1st-99th percentile), {100 * self.depth_valid:.0f} % "
                                   "of pixels valid"))
        lines += [(key, self.notes[key]) for key in ("registration", "gravity", "poses", "details") if self.notes[key]]
        if self.problems:
            shown = list(self.problems[:_PROBLEMS_SHOWN])
            more = len(self.problems) - len(shown)
            lines.append(("problems", f"{len(self.problems)} frames would be skipped:"))
            lines += [("", f"  {p}") for p in shown] + ([("", f"  ... and {more} more")] if more else [])
        else:
            lines.append(("problems", "none in the frames read"))
        lines.append(("a run would", f"not go ahead: {self.stop}" if self.stop else "go ahead"))
        return _lines_text(lines)


def _lines_text(lines: list[tuple[str, str]]) -> str:
    return "\n".join(f"{label + ':' if label else '':13s} {text}" for label, text in lines)


def inspect_recording(source: FrameSource, options: RecordingOptions, stride: int = 1, max_frames: int | None = None,
                      progress: Callable[[Iterator], Iterator] | None = None) -> Inspection:
    """Read the recording as a run would (with the same checks) and gather what ``inspect`` prints.

    Args:
        source: the opened recording.
        options: the recording options of the run.
        stride, max_frames: which frames to read.
        progress: wraps the frame iterator (e.g. tqdm).

    Raises:
        InputError: the camera cannot be a camera's (the line ``run`` stops with, before reading on).
    """
    preflight = prepare(source, options)
    camera = preflight.camera
    if camera is not None and camera.problem:
        raise InputError(preflight.problem)
    stamps: list[int] = []
    problems: list[str] = []
    depths: list[np.ndarray] = []
    valid = total = 0
    size = K = None
    frames = preflight.source.frames(stride=stride, max_frames=max_frames)
    read = 0
    for item in progress(frames) if progress is not None else frames:
        read += 1
        if isinstance(item, FrameError):
            problems.append(str(item))
            continue
        if size is None:
            size, K = (item.width, item.height), item.K.copy()
        stamps.append(item.stamp_ns)
        sample = item.depth[::_DEPTH_SAMPLE_STEP, ::_DEPTH_SAMPLE_STEP]
        ok = np.isfinite(sample) & (sample > 0)
        valid, total = valid + int(ok.sum()), total + sample.size
        depths.append(sample[ok])
    values = np.concatenate(depths) if depths else np.zeros(0)
    depth_range = (float(np.percentile(values, 1)), float(np.percentile(values, 99))) if values.size else None
    check = preflight.pose_check
    notes = {
        "intrinsics": source.intrinsics_note,
        "camera": camera.summary() if camera is not None else "not checked (no readable frame among the first)",
        "registration": source.registration_note,
        "gravity": preflight.gravity,
        "poses": check.summary() if check is not None else "not checked (exact by construction)",
        "details": source.details,
    }
    stop = preflight.problem
    if stop is None and not stamps:  # the run's own words (pipeline.run)
        reason = problems[0] if problems else "the source yielded no frames"
        stop = f"{source.name}: no usable frame ({len(problems)} skipped; first: {reason})"
    return Inspection(source.name, source.layout, len(source), read, np.asarray(stamps, dtype=np.int64), size, K,
                      depth_range, valid / total if total else 0.0, notes, tuple(problems), stop)
