"""NanoDet-Plus (COCO, Apache-2.0) from its ncnn files, read into PyTorch (ncnn.py) and exported to ONNX.

Input ``data`` (1, 3, 416, 416) float32: BGR letterboxed (centred, padded with black), then
(pixel - mean) * scale per channel. Output ``output`` (1, 3598, 112): per point of strides
8/16/32/64 the 80 class scores (already sigmoid), then 4 x 8 distance logits (left, top, right,
bottom; softmax over 8 bins, expectation times the stride) from the point (x * stride, y * stride).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import torch
from scipy.special import softmax

from ..errors import ModelError
from ..runtime.config import RuntimeConfig
from ..runtime.contract import IOContract
from ..runtime.engine_cache import sha256_file
from .detector2d import DETECTOR_RUNTIME, NetworkDetector2D, cache_root, image_contract, read_class_names
from .image_decode import DEFAULT_IOU_THRESHOLD, ResizeGeometry, best_class, letterbox, paste_resized
from .ncnn import NcnnNet, load_ncnn_weights, parse_param

INPUT_NAME, OUTPUT_NAME = "data", "output"
INPUT_SIZE = (416, 416)  # NanoDet-Plus-m-416 (the ncnn Input layer leaves it open)
STRIDES = (8, 16, 32, 64)
REG_BINS = 8  # reg_max 7: distances 0..7 strides
MEAN_BGR = np.array([103.53, 116.28, 123.675], np.float32)
SCALE_BGR = np.array([0.017429, 0.017507, 0.017125], np.float32)
DEFAULT_SCORE_THRESHOLD = 0.3  # the data README's figures are at 0.3 (false hits mostly go at 0.4)
_EXPORT_VERSION = 1  # bump when the export changes, so stale cached graphs are not reused


def center_points(net_wh: tuple[int, int], strides: Sequence[int] = STRIDES) -> tuple[np.ndarray, np.ndarray]:
    """Point centres of every level in output order: (P, 2) float64 input pixels (x, y), (P,) strides."""
    centres, sizes = [], []
    for s in strides:
        ys, xs = np.mgrid[0 : -(-net_wh[1] // s), 0 : -(-net_wh[0] // s)]  # ceil: the 7x7 level of 416 / 64
        centres.append(np.stack([xs.ravel(), ys.ravel()], axis=1) * float(s))
        sizes.append(np.full(xs.size, float(s)))
    return np.concatenate(centres), np.concatenate(sizes)


def decode_nanodet(output: np.ndarray, net_wh: tuple[int, int], num_classes: int, score_threshold: float,
                   strides: Sequence[int] = STRIDES) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NanoDet-Plus's head -> candidates: the best class per point, distances as expectations over bins.

    Args:
        output: (1, P, C + 4 * 8) raw output (class scores already sigmoid, distance logits).
        net_wh: network input (width, height).
        num_classes: C.
        score_threshold: minimum class score.
        strides: the levels' strides, in output order.

    Returns:
        (K, 4) xyxy in network-input pixels, (K,) scores, (K,) labels.
    """
    centres, stride = center_points(net_wh, strides)
    p = np.asarray(output, dtype=np.float32)
    if p.ndim != 3 or p.shape[0] != 1 or p.shape[1] != len(centres) or p.shape[2] != num_classes + 4 * REG_BINS:
        raise ValueError(f"NanoDet output has shape {p.shape}, expected (1, {len(centres)}, {num_classes + 32})")
    p = p[0]
    rows, labels, scores = best_class(p[:, :num_classes], score_threshold)
    bins = softmax(p[rows, num_classes:].reshape(-1, 4, REG_BINS).astype(np.float64), axis=2)  # (K, 4, 8)
    ltrb = (bins @ np.arange(REG_BINS, dtype=np.float64)) * stride[rows, None]  # (K, 4) input pixels
    c = centres[rows]
    return np.concatenate([c - ltrb[:, :2], c + ltrb[:, 2:]], axis=1), scores, labels


def nanodet_input(image: np.ndarray, net_wh: tuple[int, int]) -> tuple[np.ndarray, ResizeGeometry]:
    """(H, W, 3) uint8 RGB -> (1, 3, H, W) float32 BGR letterboxed (black bands), (pixel - mean) * scale."""
    geometry = letterbox((image.shape[1], image.shape[0]), net_wh)
    canvas = paste_resized(np.ascontiguousarray(image[:, :, ::-1]), geometry, 0.0)
    canvas -= MEAN_BGR
    canvas *= SCALE_BGR
    return np.ascontiguousarray(canvas.transpose(2, 0, 1)[None]), geometry


def nanodet_contract(net_wh: tuple[int, int], num_classes: int) -> IOContract:
    """``data`` (1, 3, H, W) float32 -> ``output`` (1, P, C + 32) float32."""
    points = len(center_points(net_wh)[1])
    return image_contract(net_wh, INPUT_NAME, "BGR letterboxed (centred, black bands), (pixel - mean) * scale",
                          OUTPUT_NAME, (1, points, num_classes + 4 * REG_BINS),
                          "per point of strides 8/16/32/64: class scores, then 4 x 8 distance-bin logits (l, t, r, b)")


class NanoDetDetector2D(NetworkDetector2D):
    """NanoDet-Plus from its ncnn .param/.bin and class-names files, on any runtime backend.

    The ONNX export of the PyTorch reading is cached under ``<cache>/onnx/``, keyed by the
    files' sha256; TensorRT engines built from it under ``<cache>/engines/``.
    """

    def __init__(
        self,
        param_path: str | Path,
        bin_path: str | Path,
        names_path: str | Path,
        *,
        runtime: RuntimeConfig = DETECTOR_RUNTIME,
        score_threshold: float = DEFAULT_SCORE_THRESHOLD,
        iou_threshold: float = DEFAULT_IOU_THRESHOLD,
        onnx_path: str | Path | None = None,
        cache: str | Path | None = None,
    ):
        """Build the detector (arguments as for ``YoloDetector2D``).

        Raises:
            ModelError: files unreadable or inconsistent, export or backend creation failed.
        """
        self._bin_path = Path(bin_path)
        self.name = self._bin_path.stem
        self.class_names = read_class_names(names_path)
        self.input_size = INPUT_SIZE
        self._net = NcnnNet(parse_param(param_path), (3, INPUT_SIZE[1], INPUT_SIZE[0]), (OUTPUT_NAME,),
                            source=str(param_path)).eval().requires_grad_(False)
        self.contract = nanodet_contract(self.input_size, len(self.class_names))
        got = tuple(self._net.blob_shapes[OUTPUT_NAME])
        if got != self.contract.outputs[0].shape:
            raise ModelError(f"{param_path}: output {got} does not fit {len(self.class_names)} names in {names_path} "
                             f"(expected {self.contract.outputs[0].shape})")
        self._weights_loaded = False
        cache_folder = cache_root(cache)

        def onnx_file() -> Path:
            if onnx_path is not None:
                return Path(onnx_path)
            key = f"{sha256_file(bin_path)[:16]}-param{sha256_file(param_path)[:8]}"
            path = cache_folder / "onnx" / f"{self.name}-{key}-v{_EXPORT_VERSION}.onnx"
            if not path.is_file():
                self.export(path)
            return path

        self._start(runtime, cache_folder, onnx_file, score_threshold, iou_threshold)

    def torch_module(self) -> torch.nn.Module:
        """The ncnn graph in PyTorch with the .bin's weights loaded."""
        if not self._weights_loaded:
            load_ncnn_weights(self._net, self._bin_path)
            self._weights_loaded = True
        return self._net

    def preprocess(self, image: np.ndarray) -> tuple[np.ndarray, ResizeGeometry]:
        return nanodet_input(image, self.input_size)

    def decode(self, outputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return decode_nanodet(outputs[OUTPUT_NAME], self.input_size, len(self.class_names), self.score_threshold)
