"""What every 2D detector network shares: its files' class names, the runtime backend, export and ``detect``.

A detector subclass says how an image becomes its input (``preprocess``, returning the
``ResizeGeometry`` it used) and how its outputs become candidate boxes (``decode``, boxes in
network-input pixels); ``detect`` then goes through the one shared path (image_decode) to
Detections2D. The graph runs on any backend of ``runtime/`` behind the detector's IOContract.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..detections import Detections2D
from ..errors import InputError, ModelError
from ..runtime.config import RuntimeConfig
from ..runtime.contract import Backend, InferenceBackend, IOContract, TensorSpec
from ..runtime.engine_cache import cache_dir
from ..runtime.select import create_backend
from .image_decode import DEFAULT_IOU_THRESHOLD, ResizeGeometry, finish_detections

if TYPE_CHECKING:  # torch only for export and the torch backend: an ONNX file runs without it
    import torch

__all__ = [
    "DEFAULT_IOU_THRESHOLD", "DETECTOR_RUNTIME", "NetworkDetector2D", "cache_root", "check_rgb", "image_contract",
    "read_class_names",
]


def read_class_names(path: str | Path) -> tuple[str, ...]:
    """Class names, one per non-empty line (Darknet's .names format, which every model here ships)."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ModelError(f"cannot read class names {path}: {exc.strerror or exc}") from exc
    return tuple(s.strip() for s in lines if s.strip())


def check_rgb(image: np.ndarray) -> None:
    """Raise InputError unless ``image`` is an (H, W, 3) uint8 image of at least 2x2 pixels."""
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8 or min(image.shape[:2]) < 2:
        raise InputError(f"expected an (H, W, 3) uint8 RGB image, got {image.dtype} {image.shape}")


# A detector built without a runtime config runs on ONNX Runtime (the tests' and benchmarks' choice);
# the registry passes the user's (``auto`` by default).
DETECTOR_RUNTIME = RuntimeConfig(backend=Backend.ONNXRUNTIME)


def image_contract(net_wh: tuple[int, int], input_name: str, input_text: str, output_name: str,
                   output_shape: tuple[int, ...], output_text: str) -> IOContract:
    """A single-output detector's interface: one (1, 3, H, W) float32 image in, one float32 tensor out."""
    return IOContract((TensorSpec(input_name, (1, 3, net_wh[1], net_wh[0]), "float32", input_text),),
                      (TensorSpec(output_name, output_shape, "float32", output_text),))


def cache_root(cache: str | Path | None) -> Path:
    """The folder of a detector's cached ONNX exports (``onnx/``) and TensorRT engines (``engines/``)."""
    return Path(cache) if cache is not None else cache_dir()


class NetworkDetector2D:
    """Base of the 2D detectors: a graph behind an IOContract on a runtime backend, one shared decode path.

    Attributes:
        name: model name (for logs and cache file names).
        class_names: the model's label vocabulary (from the names file that comes with its weights).
        input_size: network input (width, height) in pixels.
        contract: the graph's inputs and outputs.
        output_names: the contract's output names, in order.
        runtime: the loaded backend (``run``: dict in, dict out).
        backend: where the network runs (the resolved choice: never ``auto``).
        onnx_path: the ONNX file in use (None for the torch backend).
        score_threshold / iou_threshold: candidate score and per-class NMS IoU.
    """

    name: str
    class_names: tuple[str, ...]
    input_size: tuple[int, int]
    contract: IOContract

    def _start(self, runtime: RuntimeConfig, cache: Path, onnx_file: Callable[[], Path], score_threshold: float,
               iou_threshold: float, mismatch_hint: str = "") -> None:
        """Check the thresholds and load the network on ``runtime`` (subclasses call this last in
        ``__init__``): the one place a detector's session is built. TensorRT engines are cached under
        ``cache/engines`` unless ``runtime`` names its own folder; ``mismatch_hint`` is added to the
        error of a graph that does not match the contract (which file of the model's is likely wrong)."""
        if not 0.0 <= score_threshold <= 1.0 or not 0.0 <= iou_threshold <= 1.0:
            raise ModelError(f"thresholds must lie in [0, 1], got score {score_threshold}, IoU {iou_threshold}")
        self.score_threshold, self.iou_threshold = score_threshold, iou_threshold
        self.output_names = self.contract.output_names
        self.onnx_path: Path | None = None
        config = runtime if runtime.engine_cache is not None else replace(runtime, engine_cache=cache / "engines")

        def onnx_path() -> Path:
            self.onnx_path = onnx_file()
            return self.onnx_path

        try:
            self.runtime: InferenceBackend = create_backend(config, self.contract, onnx_path=onnx_path,
                                                            torch_module=self.torch_module)
        except ModelError as err:
            if mismatch_hint and "does not match the expected contract" in str(err):
                raise ModelError(f"{err} ({mismatch_hint})") from err
            raise
        self.backend = self.runtime.kind

    def torch_module(self) -> torch.nn.Module:
        """The network as a torch module with its weights loaded (the torch backend; what export traces)."""
        raise NotImplementedError

    def preprocess(self, image: np.ndarray) -> tuple[np.ndarray, ResizeGeometry]:
        """(H, W, 3) uint8 RGB -> the graph's (1, 3, H, W) float32 input and where the image lies in it."""
        raise NotImplementedError

    def decode(self, outputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Graph outputs -> candidates above ``score_threshold``: (K, 4) xyxy input pixels, (K,) scores, labels."""
        raise NotImplementedError

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        """Zero inputs of the graph's shapes, in contract order (for export)."""
        import torch

        return tuple(torch.zeros(shape) for shape in self.contract.example_shapes().values())

    def export(self, path: str | Path) -> Path:
        """Export the torch module to ONNX at ``path`` with the contract's names; returns ``path``.

        Raises:
            ModelError: the export fails.
        """
        from .onnx_export import export_onnx

        export_onnx(self.torch_module(), self.example_inputs(), path, input_names=self.contract.input_names,
                    output_names=self.contract.output_names, dynamic_axes=self.contract.onnx_dynamic_axes())
        return Path(path)

    def infer(self, batch: np.ndarray) -> tuple[np.ndarray, ...]:
        """Raw outputs, in contract order, for a preprocessed input."""
        out = self.runtime.run({self.contract.input_names[0]: batch})
        return tuple(out[n] for n in self.output_names)

    def detect(self, image: np.ndarray) -> Detections2D:
        """Detect objects in one colour image.

        Args:
            image: (H, W, 3) uint8 RGB (``Frame.color``).

        Returns:
            Detections2D: boxes (N, 4) xyxy in the image's pixels, the model's labels, scores, best first.

        Raises:
            InputError: the image is not (H, W, 3) uint8.
            ModelError: the runtime failed.
        """
        check_rgb(image)
        batch, geometry = self.preprocess(image)
        outputs = dict(zip(self.output_names, self.infer(batch), strict=True))
        boxes, scores, labels = self.decode(outputs)
        return finish_detections(boxes, scores, labels, geometry, self.class_names, self.iou_threshold)

