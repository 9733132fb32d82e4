"""The map node's detections from a topic: each posed frame waits for the Detection2DArray of its stamp.

With ``detections_topic`` set, another detector (the ``embodied_detector`` node, isaac_ros, a user's)
names what the images show. A colour/depth pair becomes a posed frame as always (inputs.py); here it
waits for the detections with exactly its stamp (a detector stamps its output with the image's
header), up to ``detections_wait`` seconds, and detections that come first wait for their frame. A
paired frame goes to the keyframe worker carrying its detections (network.given_detections), which
lifts and maps them as a detector run in the node would. A frame whose detections never come is
counted with the reason and handed to the worker as skipped, so its depth still goes into the
occupancy map: "detector silent" (no Detection2DArray at all came while the frame waited: not
running, another topic, another domain; after SILENT_FRAMES such frames in a row, frames no longer
wait until detections come again) or "detector slower than the camera" (detections came, but not
for this stamp in time). Detections whose frame was given up (late) or never came are counted too.
:class:`DetectionPairing` is the rule in plain Python (tests); :class:`DetectionsInput` the subscription.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..detections import Detections2D
from ..errors import FrameError, InputError
from ..frame import Frame
from ..frame_detections import named_detections, with_detections
from ..messages.detections2d import detections_from_cdr

MAX_WAITING = 30  # frames (and detection arrays) waiting at most: 1 s at 30 Hz, ~65 MB of 640x480 frames
SILENT_FRAMES = 3  # frames in a row given up with no detections at all meanwhile: later frames do not wait
SLOWER = "detector slower than the camera (no detections for this stamp in time)"
SILENT = "detector silent (no Detection2DArray came while the frame waited)"


class DetectionPairing:
    """Frames and Detection2DArrays paired by equal stamps; what goes unpaired is counted by reason.

    Args:
        wait_s: how long a frame waits for its detections.
        on_paired: called with (frame, detections) of one stamp.
        on_unpaired: called with (frame, reason) for a frame given up.
        silent_frames: frames in a row without any detections coming meanwhile, after which frames are given
            up at once (until detections come again).
        clock: seconds, monotonic (tests give their own).
    """

    def __init__(self, wait_s: float, on_paired: Callable[[Frame, Detections2D], None],
                 on_unpaired: Callable[[Frame, str], None], silent_frames: int = SILENT_FRAMES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.wait_s, self.silent_frames, self.clock = wait_s, silent_frames, clock
        self._on_paired, self._on_unpaired = on_paired, on_unpaired
        self._frames: OrderedDict[int, tuple[Frame, float, float]] = OrderedDict()  # stamp -> (frame, deadline, came)
        self._detections: OrderedDict[int, tuple[Detections2D, float]] = OrderedDict()  # stamp -> (dets, deadline)
        self._given_up: OrderedDict[int, None] = OrderedDict()  # stamps of frames given up (late detections)
        self._lock = threading.Lock()
        self._last_detections = -float("inf")  # clock() of the latest Detection2DArray
        self._silent_run = 0  # frames given up in a row with no detections at all while they waited
        self.paired = 0
        self.received = 0  # Detection2DArrays
        self.without: dict[str, int] = {}  # reason -> frames given up
        self.late = 0  # detections that came after their frame was given up
        self.orphans = 0  # detections whose frame never came (lost, unposed, or from another camera)

    @property
    def waiting(self) -> int:
        """Frames waiting for their detections now."""
        return len(self._frames)

    @property
    def silent(self) -> bool:
        """The last ``silent_frames`` frames waited in vain with no detections at all coming meanwhile."""
        return self._silent_run >= self.silent_frames

    def add_frame(self, frame: Frame) -> None:
        now = self.clock()
        with self._lock:
            found = self._detections.pop(frame.stamp_ns, None)
            given_up = []
            if found is None and self.silent:
                given_up = [self._give_up(frame.stamp_ns, (frame, now, now))]
            elif found is None:
                self._frames[frame.stamp_ns] = (frame, now + self.wait_s, now)
                given_up = self._trim(self._frames, self._give_up)
        if found is not None:
            self._pair(frame, found[0])
        self._report(given_up)

    def add_detections(self, stamp_ns: int, detections: Detections2D) -> None:
        now = self.clock()
        with self._lock:
            self.received += 1
            self._last_detections, self._silent_run = now, 0
            waiting = self._frames.pop(stamp_ns, None)
            if waiting is None:
                if stamp_ns in self._given_up:
                    self.late += 1
                else:
                    self._detections[stamp_ns] = (detections, now + self.wait_s)
                    self._trim(self._detections, self._orphan)
        if waiting is not None:
            self._pair(waiting[0], detections)

    def expire(self) -> None:
        """Give up frames (and forget detections) that waited too long; call it often (a timer)."""
        now = self.clock()
        with self._lock:
            given_up = []
            while self._frames and next(iter(self._frames.values()))[1] <= now:
                given_up.append(self._give_up(*self._frames.popitem(last=False)))
            while self._detections and next(iter(self._detections.values()))[1] <= now:
                self._orphan(*self._detections.popitem(last=False))
        self._report(given_up)

    def _trim(self, queue: OrderedDict, drop: Callable[..., Any]) -> list:
        return [drop(*queue.popitem(last=False)) for _ in range(max(0, len(queue) - MAX_WAITING))]

    def _give_up(self, stamp_ns: int, item: tuple[Frame, float, float]) -> tuple[Frame, str]:
        self._given_up[stamp_ns] = None
        while len(self._given_up) > 4 * MAX_WAITING:
            self._given_up.popitem(last=False)
        frame, _deadline, came = item
        if self._last_detections >= came:  # detections came while it waited, not its own
            return frame, SLOWER
        self._silent_run += 1
        return frame, SILENT

    def _orphan(self, _stamp_ns: int, _item: object) -> None:
        self.orphans += 1

    def _pair(self, frame: Frame, detections: Detections2D) -> None:
        self.paired += 1
        self._on_paired(frame, detections)

    def _report(self, given_up: list[tuple[Frame, str]]) -> None:
        for frame, reason in given_up:
            self.without[reason] = self.without.get(reason, 0) + 1
            self._on_unpaired(frame, reason)

    def diagnostics(self) -> dict[str, Any]:
        """/diagnostics values: arrays received, frames paired, frames without detections by reason, late, orphans."""
        return {"detections_received": self.received, "frames_with_detections": self.paired,
                "frames_without_detections": sum(self.without.values()),
                **{f"without_detections: {reason}": n for reason, n in self.without.items()},
                "detections_late": self.late, "detections_without_frame": self.orphans}


class DetectionsInput:
    """The Detection2DArray subscription of the map node, feeding a :class:`DetectionPairing`.

    Args:
        node: the rclpy node.
        config: ``detections_topic``, ``detections_wait``, ``detections_class_names``, ``input_qos``.
        submit: the keyframe worker's ``submit`` (frames with detections).
        skip: the keyframe worker's ``skip`` (frames without: their depth only).
        callback_group: of the subscription and the expiry timer.
        ahead: the keyframe worker's ``ahead`` (a frame that starts waiting: its discovery can be done meanwhile).
    """

    def __init__(self, node: Any, config: Any, submit: Callable[[Frame], Any], skip: Callable[[Frame], Any],
                 callback_group: Any = None, ahead: Callable[[Frame], Any] | None = None) -> None:
        try:
            from vision_msgs.msg import Detection2DArray
        except ImportError:
            raise InputError(f"detections_topic {config.detections_topic} needs vision_msgs "
                             "(apt install ros-$ROS_DISTRO-vision-msgs)") from None
        from .inputs import QosMatch

        self.node, self.topic, self.class_names = node, config.detections_topic, tuple(config.detections_class_names)
        self._submit, self._skip, self._ahead = submit, skip, ahead
        self.pairing = DetectionPairing(config.detections_wait, self._paired, self._unpaired)
        self.qos = QosMatch(node, config.input_qos, (self.topic,))
        self.skipped_in_messages = 0  # detections without a usable class or box
        self.unreadable = 0  # messages that are no Detection2DArray of vision_msgs 4
        # raw: the CDR bytes, read in well under 1 ms (rclpy's own conversion of a nested message takes longer)
        node.create_subscription(Detection2DArray, self.topic, self._on_detections, self.qos.profile(MAX_WAITING),
                                 callback_group=callback_group, raw=True)
        node.create_timer(0.05, self.pairing.expire, callback_group=callback_group)

    def _on_detections(self, data: bytes) -> None:
        try:
            found = detections_from_cdr(data, self.class_names)
        except FrameError as err:
            self.unreadable += 1
            if self.unreadable == 1 or self.unreadable % 100 == 0:
                self.node.get_logger().warning(f"message on {self.topic} skipped: {err} (x{self.unreadable})")
            return
        self.skipped_in_messages += found.skipped
        self.pairing.add_detections(found.stamp_ns, named_detections(found.names, found.scores, found.boxes_xyxy))

    def add_frame(self, frame: Frame) -> None:
        """A posed frame from the camera topics: it waits here for its detections. When no earlier frame waits (its
        keyframe would come first), the worker may do the frame's discovery meanwhile."""
        if self._ahead is not None and not self.pairing.silent and not self.pairing.waiting:
            self._ahead(frame)
        self.pairing.add_frame(frame)

    def _paired(self, frame: Frame, detections: Detections2D) -> None:
        self._submit(with_detections(frame, detections))

    def _unpaired(self, frame: Frame, reason: str) -> None:
        n = self.pairing.without[reason]
        if n == 1 or n % 100 == 0:
            self.node.get_logger().warning(f"frame at stamp {frame.stamp_ns} has no detections on {self.topic}: "
                                           f"{reason}; its depth only goes into the map (x{n})")
        self._skip(frame)

    def problems(self) -> list[str]:
        """One line per reason frames went without detections (the diagnostics' WARN message)."""
        return [f"{n} frames without detections on {self.topic}: {reason}"
                for reason, n in self.pairing.without.items()]

    def diagnostics(self) -> dict[str, Any]:
        return {"detections_topic": self.topic, **self.pairing.diagnostics(),
                "detections_unusable": self.skipped_in_messages, "detections_unreadable": self.unreadable}
