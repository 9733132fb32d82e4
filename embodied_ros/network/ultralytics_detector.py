"""Detectors with your own vocabulary: an Ultralytics export (YOLOv8, YOLO11, YOLO-World, YOLOE) as it is.

Users who can download stronger or open-vocabulary weights export them with their own class list,
e.g. ``yolo export model=yolov8s-worldv2.pt format=onnx`` after ``model.set_classes([...])``
(docs/custom_detectors.md). The export's layout is the same for all of them:

* input ``(1, 3, H, W)`` float32 RGB in [0, 1], the image letterboxed: resized keeping its aspect,
  centred, the rest filled with grey 114 (Ultralytics' ``LetterBox``);
* output ``(1, 4 + C, A)`` float32: per anchor point the box centre x, y, width and height (in input
  pixels; TFLite exports normalise them to [0, 1]) and the C class scores (already sigmoid, no
  objectness);
* the class names in the model's metadata: ONNX ``metadata_props`` key ``names``, a Python dict
  literal ``{0: 'person', ...}``.

ONNX files run on every backend of runtime/ (ONNX Runtime, TensorRT; the torch backend reads the
graph with onnx_module). A ``.tflite`` export runs on LiteRT (``pip install ai-edge-litert``, an
optional dependency); its names come from a names file beside it (one per line) when the file
carries none we can read.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx
import torch

from ..errors import ModelError
from ..runtime.config import RuntimeConfig
from ..runtime.contract import IOContract
from .detector2d import DETECTOR_RUNTIME, NetworkDetector2D, cache_root, image_contract, read_class_names
from .image_decode import DEFAULT_IOU_THRESHOLD, ResizeGeometry, best_class, letterbox, paste_resized

PAD_VALUE = 114.0  # Ultralytics' LetterBox fills the border with this grey
DEFAULT_SCORE_THRESHOLD = 0.1  # class score; the memory applies the project's 0.075 rule after lifting
MODEL_NAME = "ultralytics-onnx"  # the registry's name for such files


def ultralytics_input(image: np.ndarray, net_wh: tuple[int, int]) -> tuple[np.ndarray, ResizeGeometry]:
    """(H, W, 3) uint8 RGB -> (1, 3, h, w) float32 RGB in [0, 1], letterboxed (centred) with grey 114."""
    geometry = letterbox((image.shape[1], image.shape[0]), net_wh)
    canvas = paste_resized(image, geometry, PAD_VALUE) / 255.0
    return np.ascontiguousarray(canvas.transpose(2, 0, 1)[None], dtype=np.float32), geometry


def decode_ultralytics(output: np.ndarray, net_wh: tuple[int, int], score_threshold: float,
                       num_classes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (1, 4 + C, A) head -> candidates: (K, 4) xyxy in input pixels, (K,) scores, (K,) labels.

    Box coordinates of at most 2 (TFLite exports) are fractions of the input and are scaled to it.

    Raises:
        ValueError: the output does not have the layout.
    """
    p = np.asarray(output, dtype=np.float32)
    if p.ndim != 3 or p.shape[0] != 1 or p.shape[1] != 4 + num_classes:
        raise ValueError(f"Ultralytics output has shape {p.shape}, expected (1, 4 + {num_classes}, anchors)")
    p = p[0].T  # (A, 4 + C)
    rows, labels, scores = best_class(p[:, 4:], score_threshold)
    xywh = p[rows, :4].astype(np.float64)
    if len(p) and np.abs(p[:, :4]).max() <= 2.0:  # normalised coordinates
        xywh *= np.array([net_wh[0], net_wh[1], net_wh[0], net_wh[1]], dtype=np.float64)
    half = xywh[:, 2:] / 2
    return np.concatenate([xywh[:, :2] - half, xywh[:, :2] + half], axis=1), scores, labels


def names_from_metadata(text: str) -> tuple[str, ...]:
    """Class names from the ``names`` metadata entry, ``{0: 'person', 1: 'bicycle'}`` (a list works too).

    Raises:
        ModelError: the text is not such a dict or list.
    """
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError) as err:
        raise ModelError(f"the model's 'names' metadata is not a dict of class names: {err}") from None
    if isinstance(value, dict) and value and all(isinstance(k, int) for k in value):
        if sorted(value) != list(range(len(value))):
            raise ModelError("the model's 'names' metadata does not number its classes 0..C-1")
        return tuple(str(value[k]) for k in range(len(value)))
    if isinstance(value, (list, tuple)) and value:
        return tuple(str(v) for v in value)
    raise ModelError("the model's 'names' metadata is not a dict of class names")


def onnx_layout(path: Path) -> tuple[IOContract, tuple[str, ...] | None]:
    """The contract of an Ultralytics ONNX export (its own tensor names and sizes) and its class names
    (None: no metadata).

    Raises:
        ModelError: not a readable ONNX file, not one fixed (1, 3, H, W) input or not one (1, 4 + C, A) output.
    """
    try:
        model = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # protobuf's DecodeError, OSError
        raise ModelError(f"{path}: not a readable ONNX file ({exc})".splitlines()[0]) from exc
    graph = model.graph
    dims = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim] if graph.input else []
    if len(dims) != 4 or dims[1] != 3 or min(dims) < 1:
        raise ModelError(f"{path}: expected one fixed (1, 3, H, W) input, got {dims} (export with a fixed imgsz)")
    out = [d.dim_value for d in graph.output[0].type.tensor_type.shape.dim] if len(graph.output) == 1 else []
    if len(out) != 3 or out[1] < 5 or out[2] < 1:
        raise ModelError(f"{path}: expected one (1, 4 + classes, anchors) output, got {out or len(graph.output)} "
                         "(an Ultralytics detection export without NMS)")
    meta = {p.key: p.value for p in model.metadata_props}
    contract = _contract((dims[3], dims[2]), out[1] - 4, out[2], graph.input[0].name, graph.output[0].name)
    return contract, names_from_metadata(meta["names"]) if "names" in meta else None


class UltralyticsDetector2D(NetworkDetector2D):
    """An Ultralytics-layout export (ONNX on any runtime backend, or TFLite on LiteRT) with its own classes.

    Args:
        model_file: the ``.onnx`` (or ``.tflite``) export.
        names_path: a names file (one class per line); None: the names in the model's metadata.
        runtime, score_threshold, iou_threshold, cache: as for the other detectors (for TFLite only the
            thresholds and ``runtime.intra_op_threads`` count).

    Raises:
        ModelError: unreadable file, no class names, names that do not fit the output, or a backend failure.
    """

    def __init__(
        self,
        model_file: str | Path,
        names_path: str | Path | None = None,
        *,
        runtime: RuntimeConfig = DETECTOR_RUNTIME,
        score_threshold: float = DEFAULT_SCORE_THRESHOLD,
        iou_threshold: float = DEFAULT_IOU_THRESHOLD,
        cache: str | Path | None = None,
    ):
        self._file = Path(model_file)
        self.name = self._file.stem
        self._module: torch.nn.Module | None = None
        self._tflite = None
        if self._file.suffix.lower() == ".tflite":
            self._start_tflite(names_path, score_threshold, iou_threshold, runtime.intra_op_threads)
            return
        self.contract, names = onnx_layout(self._file)
        spec = self.contract.inputs[0]
        self.input_size = (int(spec.shape[3]), int(spec.shape[2]))
        self.class_names = read_class_names(names_path) if names_path is not None else names or ()
        if not self.class_names:
            raise ModelError(f"{self._file}: no class names in its metadata; pass a names file (one class per line)")
        if len(self.class_names) != int(self.contract.outputs[0].shape[1]) - 4:
            raise ModelError(f"{self._file}: {len(self.class_names)} class names for an output of "
                             f"{self.contract.outputs[0].shape[1]} = 4 + {int(self.contract.outputs[0].shape[1]) - 4} "
                             "rows (does the names file fit the model?)")
        self._start(runtime, cache_root(cache), lambda: self._file, score_threshold, iou_threshold,
                    mismatch_hint=f"is it an Ultralytics detection export with {len(self.class_names)} classes, "
                                  "output (1, 4 + classes, anchors)?")

    def _start_tflite(self, names_path: str | Path | None, score_threshold: float, iou_threshold: float,
                      threads: int) -> None:
        """Load a TFLite export on LiteRT (optional: ``pip install ai-edge-litert``)."""
        try:
            from ai_edge_litert.interpreter import Interpreter
        except ImportError:
            raise ModelError(f"{self._file}: a .tflite model needs LiteRT: pip install ai-edge-litert") from None
        if names_path is None:
            beside = sorted(self._file.parent.glob("*.names"))
            if not beside:
                raise ModelError(f"{self._file}: pass a names file (one class per line), or put one beside it")
            names_path = beside[0]
        self.class_names = read_class_names(names_path)
        try:
            self._tflite = Interpreter(model_path=str(self._file), num_threads=threads or None)
            self._tflite.allocate_tensors()
        except (ValueError, RuntimeError) as err:
            raise ModelError(f"{self._file}: LiteRT cannot load it: {err}") from None
        shape = [int(d) for d in self._tflite.get_input_details()[0]["shape"]]  # (1, H, W, 3)
        if len(shape) != 4 or shape[3] != 3:
            raise ModelError(f"{self._file}: expected a (1, H, W, 3) input, got {shape}")
        self.input_size = (shape[2], shape[1])
        out = [int(d) for d in self._tflite.get_output_details()[0]["shape"]]
        self.contract = _contract(self.input_size, len(self.class_names), out[-1] if len(out) == 3 else 0)
        self.output_names = self.contract.output_names
        self.score_threshold, self.iou_threshold = score_threshold, iou_threshold
        self.onnx_path = None
        self.backend = "litert"

    def torch_module(self) -> torch.nn.Module:
        """The ONNX graph read into torch (onnx_module), for the torch backend and export."""
        if self._tflite is not None:
            raise ModelError(f"{self._file}: a TFLite model has no torch module")
        if self._module is None:
            from .onnx_module import OnnxModule

            self._module = OnnxModule(self._file).eval().requires_grad_(False)
        return self._module

    def preprocess(self, image: np.ndarray) -> tuple[np.ndarray, ResizeGeometry]:
        return ultralytics_input(image, self.input_size)

    def infer(self, batch: np.ndarray) -> tuple[np.ndarray, ...]:
        if self._tflite is None:
            return super().infer(batch)
        interpreter = self._tflite
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], batch.transpose(0, 2, 3, 1))  # NHWC
        interpreter.invoke()
        return (interpreter.get_tensor(interpreter.get_output_details()[0]["index"]),)

    def decode(self, outputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        try:
            return decode_ultralytics(outputs[self.output_names[0]], self.input_size, self.score_threshold,
                                      len(self.class_names))
        except ValueError as err:
            raise ModelError(f"{self._file}: {err} (does the names file fit the model?)") from None


def _contract(net_wh: tuple[int, int], num_classes: int, anchors: int, input_name: str = "images",
              output_name: str = "output0") -> IOContract:
    """(1, 3, H, W) float32 -> (1, 4 + C, A) float32, with the export's tensor names (Ultralytics':
    ``images``, ``output0``)."""
    return image_contract(net_wh, input_name, "RGB in [0, 1], letterboxed (centred), padded with grey 114",
                          output_name, (1, 4 + num_classes, anchors),
                          "per anchor point: centre x, y, width, height (input pixels), class scores")
