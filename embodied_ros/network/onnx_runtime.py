"""ONNX Runtime sessions: kept under this name for existing imports; the backend lives in runtime/."""

from __future__ import annotations

from ..runtime.onnxruntime_backend import OnnxRuntimeBackend

OrtSession = OnnxRuntimeBackend  # one implementation, runtime.onnxruntime_backend owns it

__all__ = ["OrtSession"]
