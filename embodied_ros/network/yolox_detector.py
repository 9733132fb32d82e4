"""YOLOX-Nano (COCO, Apache-2.0): its published ONNX file as it is, on any runtime backend.

Input ``images`` (1, 3, 416, 416) float32: BGR 0..255, no normalisation, the image resized keeping
its aspect and pasted at the top-left, the rest 114. Output ``output`` (1, 3549, 85): per anchor
point over strides 8/16/32 (x, y, log w, log h, objectness, 80 class scores; the last 81 already
sigmoid). The ONNX file runs on ONNX Runtime and TensorRT unchanged; the torch backend (and
``embodied-ros export``) reads the same graph with onnx_module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ModelError
from ..runtime.config import RuntimeConfig
from ..runtime.contract import IOContract
from .detector2d import DETECTOR_RUNTIME, NetworkDetector2D, cache_root, image_contract, read_class_names
from .image_decode import DEFAULT_IOU_THRESHOLD, ResizeGeometry, best_class, paste_resized, top_left

if TYPE_CHECKING:  # torch only for the torch backend and export: the ONNX file runs without torch and onnx
    import torch

INPUT_NAME, OUTPUT_NAME = "images", "output"
STRIDES = (8, 16, 32)
PAD_VALUE = 114.0  # YOLOX's preprocessing fills the unused input with this grey
DEFAULT_SCORE_THRESHOLD = 0.3  # objectness * class score; the data README's figures are at 0.3


def anchor_points(net_wh: tuple[int, int], strides: Sequence[int] = STRIDES) -> tuple[np.ndarray, np.ndarray]:
    """Grid points of every level in output order: (P, 2) float64 cell (x, y), (P,) float64 stride."""
    cells, sizes = [], []
    for s in strides:
        ys, xs = np.mgrid[0 : net_wh[1] // s, 0 : net_wh[0] // s]  # row-major: x runs fastest
        cells.append(np.stack([xs.ravel(), ys.ravel()], axis=1))
        sizes.append(np.full(xs.size, float(s)))
    return np.concatenate(cells).astype(np.float64), np.concatenate(sizes)


def decode_yolox(output: np.ndarray, net_wh: tuple[int, int], score_threshold: float,
                 strides: Sequence[int] = STRIDES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """YOLOX's head -> candidates: xy = (xy + cell) * stride, wh = exp(wh) * stride, score = obj * class.

    Args:
        output: (1, P, 5 + C) raw output (objectness and class scores already sigmoid).
        net_wh: network input (width, height).
        score_threshold: minimum objectness * class score (the best class of each point).
        strides: the levels' strides, in output order.

    Returns:
        (K, 4) xyxy in network-input pixels, (K,) scores, (K,) labels.
    """
    cells, stride = anchor_points(net_wh, strides)
    p = np.asarray(output, dtype=np.float32)
    if p.ndim != 3 or p.shape[0] != 1 or p.shape[1] != len(cells) or p.shape[2] < 6:
        raise ValueError(f"YOLOX output has shape {p.shape}, expected (1, {len(cells)}, 5 + C)")
    p = p[0]
    rows, labels, scores = best_class(p[:, 4:5] * p[:, 5:], score_threshold)
    s = stride[rows, None]
    centre = (p[rows, 0:2] + cells[rows]) * s
    half = np.exp(p[rows, 2:4].astype(np.float64)) * s / 2
    return np.concatenate([centre - half, centre + half], axis=1), scores, labels


def yolox_input(image: np.ndarray, net_wh: tuple[int, int]) -> tuple[np.ndarray, ResizeGeometry]:
    """(H, W, 3) uint8 RGB -> (1, 3, H, W) float32 BGR 0..255 resized keeping aspect, top-left, padded with 114."""
    geometry = top_left((image.shape[1], image.shape[0]), net_wh)
    canvas = paste_resized(np.ascontiguousarray(image[:, :, ::-1]), geometry, PAD_VALUE)
    return np.ascontiguousarray(canvas.transpose(2, 0, 1)[None]), geometry


def yolox_contract(net_wh: tuple[int, int], num_classes: int) -> IOContract:
    """``images`` (1, 3, H, W) float32 -> ``output`` (1, P, 5 + C) float32."""
    points = len(anchor_points(net_wh)[1])
    return image_contract(net_wh, INPUT_NAME, "BGR 0..255, resized keeping aspect, pasted top-left, padded with 114",
                          OUTPUT_NAME, (1, points, 5 + num_classes),
                          "per point of strides 8/16/32: x, y, log w, log h (cells), objectness, class scores")


class YoloxDetector2D(NetworkDetector2D):
    """YOLOX from its ONNX file (used as it is by ONNX Runtime and TensorRT) and its class-names file."""

    def __init__(
        self,
        onnx_file: str | Path,
        names_path: str | Path,
        *,
        runtime: RuntimeConfig = DETECTOR_RUNTIME,
        score_threshold: float = DEFAULT_SCORE_THRESHOLD,
        iou_threshold: float = DEFAULT_IOU_THRESHOLD,
        cache: str | Path | None = None,
    ):
        """Build the detector (arguments as for ``YoloDetector2D``).

        Raises:
            ModelError: files unreadable, a names file that does not fit the output, or a backend failure.
        """
        self._onnx_file = Path(onnx_file)
        self.name = self._onnx_file.stem
        self.class_names = read_class_names(names_path)
        self.input_size = _input_size(self._onnx_file)
        self.contract = yolox_contract(self.input_size, len(self.class_names))
        self._module: torch.nn.Module | None = None
        self._start(runtime, cache_root(cache), lambda: self._onnx_file, score_threshold, iou_threshold,
                    mismatch_hint=f"does {names_path} hold the model's {len(self.class_names)} names?")

    def torch_module(self) -> torch.nn.Module:
        """The ONNX graph read into torch (onnx_module), for the torch backend and export."""
        if self._module is None:
            from .onnx_module import OnnxModule

            self._module = OnnxModule(self._onnx_file).eval().requires_grad_(False)
        return self._module

    def preprocess(self, image: np.ndarray) -> tuple[np.ndarray, ResizeGeometry]:
        return yolox_input(image, self.input_size)

    def decode(self, outputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return decode_yolox(outputs[OUTPUT_NAME], self.input_size, self.score_threshold)


def _input_size(path: Path) -> tuple[int, int]:
    """(width, height) of the ONNX graph's fixed image input, read by ONNX Runtime (a session without
    graph optimisation, dropped at once), so that the ONNX path needs neither onnx nor torch."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's Fail/InvalidProtobuf, OSError
        raise ModelError(f"{path}: not a readable ONNX file ({exc})".splitlines()[0]) from exc
    inputs = session.get_inputs()
    dims = list(inputs[0].shape) if inputs else []
    if len(dims) != 4 or not all(isinstance(d, int) and d >= 1 for d in dims):
        raise ModelError(f"{path}: expected one fixed (1, 3, H, W) input, got {dims}")
    return dims[3], dims[2]
