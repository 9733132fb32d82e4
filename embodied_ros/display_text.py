"""Text that people see: user text (phrases, paths, names) escaped for a terminal and drawable in a picture.

A phrase, a file name or a class name can hold control characters: ``ESC ] 0 ; ... BEL`` sets a
terminal's title, ``ESC [ 2 J`` clears it, U+202E turns the rest of a line around. Everything the
command line prints goes through :class:`TerminalStream`, which writes such characters as escapes
(``\\x1b``, ``\\u202e``); line breaks, tabs and the carriage return of progress bars stay as they are.
Pictures (matplotlib) cannot draw characters their font lacks and warn about each ("Glyph ...
missing from font"): :func:`for_picture` writes those as escapes too, so a picture shows what the
name is, and no warning reaches the terminal.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, TextIO

__all__ = ["TerminalStream", "escaped_output", "for_picture", "for_terminal"]

# C0 controls but tab, line feed and carriage return; DEL and C1 (U+009B is a CSI on some terminals);
# zero-width and bidirectional controls (a line that reads differently from what it holds)
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str) -> str:
    """``text`` with every character that could drive a terminal written as an escape."""
    return _UNSAFE.sub(_escape, text)


class TerminalStream:
    """A text stream that writes what it is given through :func:`for_terminal` (the rest is the stream's).

    Args:
        stream: sys.stdout or sys.stderr (or a test's capture of them).
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(for_terminal(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, encoding, fileno, ...
        return getattr(self.stream, name)


@contextmanager
def escaped_output() -> Iterator[None]:
    """sys.stdout and sys.stderr as :class:`TerminalStream` for the ``with`` block (the command line's run)."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalStream(sys.stdout), TerminalStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams


@lru_cache(maxsize=1)
def _plot_font() -> Any:
    from matplotlib import font_manager

    return font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))


def for_picture(text: str) -> str:
    """``text`` as matplotlib's font can draw it: control characters and characters the font lacks as escapes."""
    font = _plot_font()
    return "".join(c if c in "\n\t" or (c.isprintable() and font.get_char_index(ord(c))) else
                   (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" if ord(c) < 0x10000
                    else f"\\U{ord(c):08x}") for c in text)
