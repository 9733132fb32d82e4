"""The node's health on /diagnostics: input and keyframe rates, drops, per-stage latency, memory size."""

from __future__ import annotations

import time
from typing import Any

from .keyframes import WorkerStats


class RateMeter:
    """Events per second between two reads."""

    def __init__(self) -> None:
        self._last_count, self._last_t = 0, time.monotonic()

    def rate(self, count: int) -> float:
        now = time.monotonic()
        dt = max(now - self._last_t, 1e-9)
        value = (count - self._last_count) / dt
        self._last_count, self._last_t = count, now
        return value


def diagnostic_status(name: str, stats: WorkerStats, input_rate: float, keyframe_rate: float,
                      extra: dict[str, Any], problems: list[str]) -> Any:
    """diagnostic_msgs/DiagnosticStatus: OK, or WARN naming the problems (dropped frames, failures, bad input)."""
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

    values = {
        "input_rate_hz": f"{input_rate:.2f}", "keyframe_rate_hz": f"{keyframe_rate:.2f}",
        "frames_received": stats.received, "keyframes": stats.keyframes, "keyframes_processed": stats.processed,
        "keyframes_dropped": stats.dropped, "keyframes_stale": stats.stale, "keyframes_failed": stats.failed,
        "frames_not_keyframes": stats.not_keyframes, "skipped_frames_depth_fused": stats.depth_fused,
        "last_keyframe_latency_ms": f"{1000 * stats.last_latency_s:.1f}",
    }
    for stage, seconds in (stats.last_stage_s or {}).items():
        values[f"stage_{stage}_ms"] = f"{1000 * seconds:.1f}"
    values.update(extra)
    status = DiagnosticStatus(name=name, hardware_id="embodied_ros")
    status.level = DiagnosticStatus.WARN if problems else DiagnosticStatus.OK
    status.message = "; ".join(problems) if problems else "ok"
    status.values = [KeyValue(key=k, value=str(v)) for k, v in values.items()]
    return status
