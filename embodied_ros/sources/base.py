"""The FrameSource contract: what every recording or live camera reader provides."""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import FrameError
from ..frame import Frame


class FrameSource:
    """Yields posed RGB-D frames in capture order.

    A bad frame is not raised: it is yielded as a FrameError so the caller can warn, count
    it and go on. An input that is unusable as a whole raises InputError, at construction
    when possible.

    Attributes:
        name: short description for logs (path or device).
        gravity_aligned: True when the world frame is known to be z-up.
    """

    name: str = ""
    gravity_aligned: bool = False

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
