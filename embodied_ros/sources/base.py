"""The FrameSource contract: what every recording or live camera reader provides."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..errors import FrameError
from ..frame import Frame


class FrameSource:
    """Yields posed RGB-D frames in capture order.

    A bad frame is not raised: it is yielded as a FrameError so the caller can warn, count
    it and go on. An input that is unusable as a whole raises InputError, at construction
    when possible.

    Attributes:
        name: short description for logs (path or device).
        layout: what kind of recording it is, in words (``embodied-ros inspect``).
        gravity_aligned: True when the world frame is known to be z-up.
        gravity_note: where that gravity comes from, or why there is none.
        registration_note: how colour was put onto the depth pixels, and why.
        intrinsics_note: where K comes from.
        details: other facts worth a line in ``inspect`` (depth factor, pairing, trajectory).
        poses_need_check: False for sources whose poses are right by construction (synthetic).
        T_align: (4, 4) the source's own world alignment, already in every pose
            (``T_world_camera = T_align @ recorded pose``); identity when none.
    """

    name: str = ""
    layout: str = "recording"
    gravity_aligned: bool = False
    gravity_note: str = "not given by the recording"
    registration_note: str = "colour and depth as delivered (registered)"
    intrinsics_note: str = "from the recording"
    details: str = ""
    poses_need_check: bool = True
    T_align: np.ndarray = np.eye(4)

    def __len__(self) -> int:
        """Number of frames when known up front (0 when unknown, e.g. a live camera)."""
        return 0

    def read(self, index: int) -> Frame:
        """Random access to frame ``index`` (sources that cannot seek raise NotImplementedError)."""
        raise NotImplementedError(f"{type(self).__name__} cannot seek")

    def frames(self, stride: int = 1, max_frames: int | None = None) -> Iterator[Frame | FrameError]:
        """Every ``stride``-th frame, at most ``max_frames`` of them (errors count as frames).

        The default walks ``read``; streaming sources override it.
        """
        produced = 0
        for i in range(0, len(self), max(1, stride)):
            if max_frames is not None and produced >= max_frames:
                return
            produced += 1
            try:
                yield self.read(i)
            except FrameError as err:
                yield err

    def close(self) -> None:
        """Release files or devices."""

    def __enter__(self) -> FrameSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
