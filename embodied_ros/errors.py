"""The project's exceptions: one place, so the CLI and the node can tell user errors from bugs."""

from __future__ import annotations

import json
import re

_WORDS = ("true", "false", "null")  # JSON's literal words


class EmbodiedError(Exception):
    """Base of every error this package raises on purpose; its message is one line for the user."""


class InputError(EmbodiedError):
    """The whole input is unusable (missing folder, unreadable recording, no frames at all)."""


class FrameError(EmbodiedError):
    """One frame is bad; the run skips it with a warning, counts it and goes on."""


class ModelError(EmbodiedError):
    """A model or its weights cannot be loaded, verified or run."""


class ConfigError(EmbodiedError):
    """A parameter has a value that cannot work."""


class OutputError(EmbodiedError):
    """The outputs cannot be written where asked (not a folder, not this tool's, read-only, full)."""


def os_error_line(err: OSError, path: object = None) -> str:
    """``PATH: cause`` for an OSError, without Python's ``[Errno N]`` noise.

    Args:
        err: the error.
        path: the path to name when the error carries none (e.g. a write to an open file).
    """
    where = err.filename if err.filename is not None else path
    cause = err.strerror or str(err) or type(err).__name__
    if err.filename2 is not None:
        where = f"{where} -> {err.filename2}"
    return f"{where}: {cause}" if where is not None else cause


def json_error_line(err: ValueError) -> str:
    """What is wrong with a JSON file, in words: a file cut short says so, not a parser position."""
    if isinstance(err, UnicodeDecodeError):
        return "not a text file"
    if not isinstance(err, json.JSONDecodeError):
        return str(err)
    if not err.doc.strip():
        return "the file is empty"
    tail = err.doc[err.pos:].rstrip()  # cut inside a last token ("1.", "tr"): the parser stops on it
    if (err.pos >= len(err.doc.rstrip()) or err.msg.startswith("Unterminated string")
            or (len(tail) < 5 and (re.fullmatch(r"[-+.\deE]+", tail) or any(w.startswith(tail) for w in _WORDS)))):
        return (f"the file is cut short (its JSON stops mid-way, after {len(err.doc)} characters): whatever wrote it "
                "did not finish (stopped, or the disk was full)")
    return f"not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})"
