"""The project's exceptions: one place, so the CLI and the node can tell user errors from bugs."""

from __future__ import annotations


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
