"""The node's own faults: what is wrong with its input, said once, and kept out of the map.

Every fault of one kind (a camera_info no camera has, an image whose size disagrees with its
camera_info, a depth encoding the node cannot read, a camera pose that jumps, no pose at an
image's stamp, images far behind the clock, a keyframe whose network failed) is:

- logged once when it starts, and once more when it ends ("no longer: ...", after
  :data:`QUIET_S` seconds without it), never once a frame;
- named in /diagnostics (WARN, with its count) while it lasts, its count kept in the values after;
- a frame skipped before it reaches the scene memory (the images that are only old are the
  exception: their poses are looked up at their own stamps, so they still map right).

What a real camera is comes from ``sources/camera_checks.py`` (the CLI's rule too). A camera pose
faster than ``max_camera_speed`` from the last frame the node took is a jump (a TF glitch, a
relocalisation): its frames are skipped until the time since that frame makes the move plausible,
so a glitch is never mapped and a lasting relocalisation is taken after ``distance / speed``
seconds. ROS-free: the node passes its logger and clock.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import FrameError
from ..frame import Frame
from ..sources.camera_checks import check_camera

QUIET_S = 5.0  # a fault not seen for this long has ended (logged once more, and no longer in /diagnostics)
# images further than this behind / ahead of the node's clock are reported (and still processed): the defaults
# of ROS's diagnostic_updater TimeStampStatus (5 s behind, 1 s ahead). Lateness is measured when the node's
# executor gets to the pair, so it includes the node's own queueing: on a loaded 2-core machine that reaches a
# second or more (seen: 1.0 s) with the stamps right; a stamp ahead of the clock never comes from load.
BEHIND_S, AHEAD_S = 5.0, 1.0


def fault_kind(message: str) -> str:
    """One kind per problem, whatever the stamps, sizes or counts in its message."""
    return re.sub(r"\d+(\.\d+)?", "#", message)[:160]


@dataclass
class _Fault:
    message: str  # the latest message of this kind
    count: int = 0  # since start
    last_s: float = 0.0  # time.monotonic() of the latest
    active: bool = False  # logged as started and not yet as ended


class FaultLog:
    """Faults by kind: counted always, logged when they start and end, listed while they last.

    Args:
        logger: an rclpy logger (``warning``, ``info``).
        quiet_s: a fault unseen for this long has ended.
    """

    def __init__(self, logger: Any, quiet_s: float = QUIET_S) -> None:
        self.logger, self.quiet_s = logger, quiet_s
        self.faults: dict[str, _Fault] = {}
        self._lock = threading.Lock()

    def report(self, message: str, now: float | None = None) -> None:
        """One occurrence of a fault (one line); logged when its kind was not already active."""
        now = time.monotonic() if now is None else now
        kind = fault_kind(message)
        with self._lock:
            fault = self.faults.setdefault(kind, _Fault(message))
            fault.message, fault.count, fault.last_s = message, fault.count + 1, now
            started, fault.active = not fault.active, True
        if started:
            self.logger.warning(f"{message} (said once while it lasts; /diagnostics counts it)")

    def active(self, now: float | None = None) -> list[str]:
        """"N x message" of the faults still going on; those that ended are logged as such, once."""
        now = time.monotonic() if now is None else now
        lasting, ended = [], []
        with self._lock:
            for fault in self.faults.values():
                if fault.active and now - fault.last_s > self.quiet_s:
                    fault.active = False
                    ended.append(fault)
                elif fault.active:
                    lasting.append(f"{fault.count} x {fault.message}")
        for fault in ended:
            self.logger.info(f"no longer: {fault.message} ({fault.count} in all)")
        return lasting

    def counts(self) -> dict[str, int]:
        """{kind: count since start}."""
        with self._lock:
            return {kind: fault.count for kind, fault in self.faults.items()}


class InputChecks:
    """The checks the node runs on its input, each raising FrameError (or returning a problem) in one line.

    Args:
        camera_info_topic: named in the camera_info problems.
        max_camera_speed: m/s; a pose further than this from the last frame taken is a jump (0: no check).
    """

    def __init__(self, camera_info_topic: str, max_camera_speed: float) -> None:
        self.topic, self.max_speed = camera_info_topic, max_camera_speed
        self._camera: tuple[bytes, int, int, str] | None = None  # the last camera_info checked, and its problem
        self._last: tuple[int, np.ndarray] | None = None  # (stamp ns, camera position) of the last frame taken
        self._lock = threading.Lock()

    def camera_info(self, msg: Any) -> tuple[str, str]:
        """(why this camera_info cannot be a camera's, or ""; what is unusual about it, said the first time it
        comes only, or ""), cached per K and size (a driver sends the same camera_info with every image)."""
        K = np.asarray(msg.k, dtype=np.float64).reshape(3, 3)
        key = (K.tobytes(), int(msg.width), int(msg.height))
        if self._camera is not None and self._camera[:3] == key:
            return self._camera[3], ""
        found = check_camera(K, key[1], key[2])
        problem = (f"camera_info on {self.topic} cannot be a camera's: {found.problem}: ignored (frames wait for a "
                   "usable one)") if found.problem else ""
        self._camera = (*key, problem)
        unusual = f"camera_info on {self.topic}: an unusual camera ({'; '.join(found.unusual)}): used" if (
            found.unusual and not problem) else ""
        return problem, unusual

    def image_age(self, frame: Frame, now_ns: int) -> str:
        """A problem line when the frame's stamp is far from the node's clock, else "" (the frame is still used)."""
        age = (now_ns - frame.stamp_ns) * 1e-9
        if -AHEAD_S <= age <= BEHIND_S:
            return ""
        where = f"{age:.1f} s behind" if age > 0 else f"{-age:.1f} s ahead of"
        return (f"images on {frame.source_name} are {where} this node's clock (a bag played without --clock and "
                "use_sim_time, a delayed driver, or clocks out of sync): processed at their own stamps")

    def pose_jump(self, frame: Frame) -> None:
        """FrameError when the camera moved faster than ``max_camera_speed`` since the last frame taken;
        otherwise the frame becomes that last frame."""
        position = frame.T_world_camera[:3, 3].copy()
        with self._lock:
            last = self._last
            if self.max_speed > 0 and last is not None and frame.stamp_ns > last[0]:
                dt = (frame.stamp_ns - last[0]) * 1e-9
                moved = float(np.linalg.norm(position - last[1]))
                if moved > self.max_speed * dt:
                    raise FrameError(f"frame at stamp {frame.stamp_ns}: the camera pose jumped {moved:.2f} m in "
                                     f"{dt:.3f} s (over max_camera_speed {self.max_speed:g} m/s; a TF glitch or a "
                                     "relocalisation?): skipped until the move is plausible")
            self._last = (frame.stamp_ns, position)
