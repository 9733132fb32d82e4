"""YoloDetector2D: a Darknet YOLO (Yolo-Fastest by default) run on any runtime backend (TensorRT, ORT, PyTorch)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import torch

from ..errors import ModelError
from ..runtime.config import RuntimeConfig
from ..runtime.contract import Backend, IOContract, TensorSpec
from ..runtime.engine_cache import sha256_file
from .darknet import Darknet, load_darknet_weights, parse_cfg
from .detector2d import DETECTOR_RUNTIME, NetworkDetector2D, cache_root, check_rgb, read_class_names
from .image_decode import DEFAULT_IOU_THRESHOLD, ResizeGeometry, letterbox, letterbox_size, stretch
from .weights import resolve_known_model
from .yolo_decode import DEFAULT_SCORE_THRESHOLD, YoloHeadSpec, decode_yolo_heads

INPUT_NAME = "image"
_EXPORT_VERSION = 1  # bump when the export changes, so stale cached graphs are not reused
_UNIT_LUT = (np.arange(256, dtype=np.float64) / 255.0).astype(np.float32)  # Darknet: pixel / 255.

__all__ = ["Backend", "YoloDetector2D", "darknet_resize", "preprocess", "read_class_names", "yolo_contract"]


def darknet_resize(image: np.ndarray, width: int, height: int) -> np.ndarray:
    """Darknet's ``resize_image``: separable bilinear with corner-aligned sampling, no antialiasing.

    Reproduces its quirks: the last column copies the source's last column; the last row takes
    only the ``(1 - dy)`` share of its upper neighbour (Darknet skips the lower one there).

    Args:
        image: (H, W, C) float32, or uint8 which is read as Darknet reads pixels (value / 255).
        width, height: output size in pixels (each >= 2).

    Returns:
        (height, width, C) float32.
    """
    src_h, src_w = image.shape[:2]
    w_scale = np.float32(src_w - 1) / np.float32(width - 1)
    h_scale = np.float32(src_h - 1) / np.float32(height - 1)
    # Horizontal pass: (src_h, width, C). In-place products keep Darknet's (1 - d) * a + d * b order.
    sx = np.arange(width - 1, dtype=np.float32) * w_scale
    ix = sx.astype(np.int64)
    dx = (sx - ix.astype(np.float32))[None, :, None]
    part = np.empty((src_h, width, image.shape[2]), np.float32)
    # uint8 columns are gathered before the /255 table: half the bytes moved for a 640-wide frame.
    unit = _to_unit if image.dtype == np.uint8 else np.float32
    left = unit(np.take(image, ix, axis=1))
    left *= np.float32(1) - dx
    right = unit(np.take(image, np.minimum(ix + 1, src_w - 1), axis=1))
    right *= dx
    np.add(left, right, out=part[:, :-1])
    part[:, -1] = unit(image[:, -1])
    # Vertical pass: (height, width, C).
    sy = np.arange(height, dtype=np.float32) * h_scale
    iy = sy.astype(np.int64)
    dy = (sy - iy.astype(np.float32))[:, None, None]
    out = np.take(part, iy, axis=0)
    out *= np.float32(1) - dy
    below = np.take(part, np.minimum(iy[:-1] + 1, src_h - 1), axis=0)
    below *= dy[:-1]
    out[:-1] += below
    return out


def _to_unit(pixels: np.ndarray) -> np.ndarray:
    return _UNIT_LUT[pixels]


def preprocess(image: np.ndarray, net_wh: tuple[int, int], letterbox: bool = False) -> np.ndarray:
    """Colour image -> network input, as Darknet's ``test_detector`` prepares it.

    Args:
        image: (H, W, 3) uint8 RGB.
        net_wh: network input (width, height) in pixels.
        letterbox: keep the aspect ratio and pad with 0.5 grey (Darknet's ``letter_box=1``);
            otherwise stretch to ``net_wh`` (Darknet's default, and Yolo-Fastest's).

    Returns:
        (1, 3, net_h, net_w) float32 RGB in [0, 1].

    Raises:
        InputError: not an (H, W, 3) uint8 image.
    """
    check_rgb(image)
    net_w, net_h = net_wh
    if not letterbox:
        resized = darknet_resize(image, net_w, net_h)
    else:
        new_w, new_h = letterbox_size((image.shape[1], image.shape[0]), net_wh)
        resized = np.full((net_h, net_w, 3), 0.5, np.float32)
        x0, y0 = (net_w - new_w) // 2, (net_h - new_h) // 2
        resized[y0 : y0 + new_h, x0 : x0 + new_w] = darknet_resize(image, new_w, new_h)
    return np.ascontiguousarray(resized.transpose(2, 0, 1)[None])  # (1, 3, H, W)


def yolo_contract(net: Darknet) -> IOContract:
    """The Darknet YOLO graph's interface: ``image`` (1, 3, H, W) float32 -> ``head_i`` raw head tensors.

    Output shapes come from one forward pass on zeros (the grid sizes follow from the cfg's strides).
    """
    width, height = net.input_size
    with torch.inference_mode():
        heads = net(torch.zeros(1, net.channels, height, width))
    image = TensorSpec(INPUT_NAME, (1, net.channels, height, width), "float32",
                       "RGB in [0, 1], Darknet's stretch (or letterbox) resize of the colour image")
    outputs = tuple(
        TensorSpec(f"head_{i}", tuple(h.shape), "float32",
                   f"raw YOLO head {i}: A * (5 + C) channels (x, y, w, h, objectness, classes) per grid cell")
        for i, h in enumerate(heads)
    )
    return IOContract((image,), outputs)


class YoloDetector2D(NetworkDetector2D):
    """COCO 2D detector from a Darknet cfg/weights pair, on ONNX Runtime (default), TensorRT or PyTorch.

    The ONNX graph (``yolo_contract``: input ``image`` (1, 3, H, W) float32, outputs ``head_i`` raw
    head tensors) is exported once and cached under ``<cache>/onnx/``, keyed by the weights' and cfg's
    sha256; TensorRT engines built from it are cached under ``<cache>/engines/``.

    Attributes:
        name: model name (the weights file's stem).
        class_names: label vocabulary from the .names file.
        input_size: network input (width, height) in pixels.
        backend: where the network runs (the resolved choice: never ``auto``).
        runtime: the loaded backend (``run`` dict in, dict out).
        contract: the graph's inputs and outputs.
        onnx_path: the ONNX file in use (None for the torch backend).
    """

    def __init__(
        self,
        cfg_path: str | Path,
        weights_path: str | Path,
        names_path: str | Path,
        *,
        runtime: RuntimeConfig = DETECTOR_RUNTIME,
        score_threshold: float = DEFAULT_SCORE_THRESHOLD,
        iou_threshold: float = DEFAULT_IOU_THRESHOLD,
        letterbox: bool | None = None,
        onnx_path: str | Path | None = None,
        cache: str | Path | None = None,
    ):
        """Build the detector.

        Args:
            cfg_path, weights_path, names_path: the Darknet model files.
            runtime: the backend (``onnxruntime``, ``tensorrt``, ``torch`` or ``auto``: TensorRT if usable, else
                ORT) and its settings (providers, threads, fallback, fp16, engine file).
            score_threshold: minimum objectness * class probability (Darknet's ``-thresh``).
            iou_threshold: per-class NMS IoU.
            letterbox: override the cfg's ``letter_box`` flag (None = as the cfg says).
            onnx_path: use this ONNX file as is instead of the cached export.
            cache: cache folder of ONNX exports and engines (default ``engine_cache.cache_dir()``).

        Raises:
            ModelError: files unreadable or inconsistent, export or backend creation failed, or
                tensorrt asked for without a GPU and without ``allow_fallback``.
        """
        self.name = Path(weights_path).stem
        self._net = Darknet(parse_cfg(cfg_path), source=str(cfg_path))
        self._net.eval().requires_grad_(False)
        self.class_names = read_class_names(names_path)
        counts = {spec.num_classes for spec in self._net.heads}
        if counts != {len(self.class_names)}:
            raise ModelError(
                f"{names_path}: {len(self.class_names)} names, but the cfg's heads have {sorted(counts)} classes"
            )
        self.input_size = self._net.input_size
        self.letterbox = self._net.letterbox if letterbox is None else letterbox
        self.contract = yolo_contract(self._net)
        self._weights_path = Path(weights_path)
        self._weights_loaded = False
        cache_folder = cache_root(cache)

        def onnx_file() -> Path:
            if onnx_path is not None:
                return Path(onnx_path)
            path = self._cached_onnx_path(cfg_path, weights_path, cache_folder)
            if not path.is_file():
                self.export(path)
            return path

        self._start(runtime, cache_folder, onnx_file, score_threshold, iou_threshold)

    @classmethod
    def from_known(
        cls,
        name: str = "yolo-fastest-1.1-xl",
        *,
        search_dirs: Iterable[str | Path] = (),
        download: bool = False,
        cache: str | Path | None = None,
        **kwargs,
    ) -> YoloDetector2D:
        """A registered model (see ``weights.KNOWN_MODELS``), its files found locally or, if allowed, downloaded.

        Raises:
            ModelError: unknown name, files not found and ``download`` not given, or a checksum mismatch.
        """
        files = resolve_known_model(name, search_dirs=search_dirs, download=download, cache=cache)
        if files.family != "darknet" or files.graph is None:
            raise ModelError(f"{name} is not a Darknet model; use registry.build_detector")
        return cls(files.graph, files.weights, files.names, cache=cache, **kwargs)

    @property
    def heads(self) -> list[YoloHeadSpec]:
        """The YOLO heads' anchors and class counts, in output order."""
        return self._net.heads

    def torch_module(self) -> torch.nn.Module:
        """The Darknet network with its weights loaded (what the torch backend runs and the export traces)."""
        if not self._weights_loaded:
            load_darknet_weights(self._net, self._weights_path)
            self._weights_loaded = True
        return self._net

    def preprocess(self, image: np.ndarray) -> tuple[np.ndarray, ResizeGeometry]:
        """Darknet's resize of the RGB image (stretched, or letterboxed when the cfg says so)."""
        image_wh = (image.shape[1], image.shape[0])
        geometry = letterbox(image_wh, self.input_size) if self.letterbox else stretch(image_wh, self.input_size)
        return preprocess(image, self.input_size, self.letterbox), geometry

    def decode(self, outputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Darknet's YOLO decode of the heads (every class above the threshold is a candidate)."""
        return decode_yolo_heads([outputs[n] for n in self.output_names], self._net.heads, self.input_size,
                                 self.score_threshold)

    def _cached_onnx_path(self, cfg_path: str | Path, weights_path: str | Path, cache: Path) -> Path:
        w_sha, c_sha = sha256_file(weights_path), sha256_file(cfg_path)
        width, height = self.input_size
        filename = f"{self.name}-{w_sha[:16]}-cfg{c_sha[:8]}-{width}x{height}-v{_EXPORT_VERSION}.onnx"
        return cache / "onnx" / filename
