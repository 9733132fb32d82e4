"""Ctrl-C and SIGTERM during a run: the first stops it at the next frame with its work kept, the second at once."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType

log = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """SIGINT and SIGTERM handlers for the ``with`` block (installed from the main thread only).

    The first signal only records itself: the run asks ``stop()`` between frames, stops there and
    writes the map of the frames so far. The second raises KeyboardInterrupt wherever the program
    is; the bag writer still closes its file on the way out. Later signals are ignored while that
    closing runs, and no signal raises inside ``shielded()`` (moving finished files into place).
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self._count = 0
        self._shielded = 0
        self._previous: dict[int, object] = {}

    def __call__(self) -> bool:
        """Whether a stop was asked for."""
        return self.signum is not None

    @property
    def name(self) -> str:
        """The first signal's name ("SIGINT"), or "" when none came."""
        return signal.Signals(self.signum).name if self.signum is not None else ""

    @property
    def exit_code(self) -> int:
        """The shell's code for a process ended by the first signal (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + int(self.signum if self.signum is not None else signal.SIGINT)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self._count += 1
        name = signal.Signals(signum).name
        if self.signum is None:
            self.signum = signum
            log.warning("%s: stopping after this frame and writing the map so far (again: stop at once)", name)
        elif self._count == 2 and not self._shielded:
            log.warning("%s again: stopping at once; closing the bag", name)
            raise KeyboardInterrupt
        else:
            log.warning("%s: already stopping, one moment", name)

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """A block that no signal interrupts (it is short: moving files into place)."""
        self._shielded += 1
        try:
            yield
        finally:
            self._shielded -= 1

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for sig in SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, _kind: type[BaseException] | None, _err: BaseException | None,
                 _tb: TracebackType | None) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
        self._previous.clear()
