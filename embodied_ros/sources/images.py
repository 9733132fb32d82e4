"""Image decoding for the sources and the node's inputs (the encoders are outputs/image_encoding.py).

ROS ``sensor_msgs/Image`` pixel buffers -> numpy arrays, ``sensor_msgs/CompressedImage``
decoding, and image files on disk. Core conventions: colour is (H, W, 3) uint8 RGB, depth is
(H, W) float32 metres with 0 or NaN where invalid.

Byte order: ``is_bigendian`` says how multi-byte samples (16UC1, mono16, 32FC1, rgb16, ...)
are stored in ``data``; the decoders honour it either way. Rows may be padded: ``step`` is the row
length in bytes and may exceed ``width * bytes_per_pixel``.

Decoders raise FrameError (a bad or unsupported image is a bad frame).
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
from PIL import Image

from ..errors import FrameError

# encoding -> (channels, numpy sample type, channel order of the first three channels)
_COLOR_LAYOUTS: dict[str, tuple[int, str, str]] = {
    "rgb8": (3, "u1", "rgb"),
    "rgba8": (4, "u1", "rgb"),
    "bgr8": (3, "u1", "bgr"),
    "bgra8": (4, "u1", "bgr"),
    "mono8": (1, "u1", "mono"),
    "8UC1": (1, "u1", "mono"),
    "8UC3": (3, "u1", "bgr"),  # OpenCV's default channel order for untyped 3-channel images
    "rgb16": (3, "u2", "rgb"),
    "rgba16": (4, "u2", "rgb"),
    "bgr16": (3, "u2", "bgr"),
    "bgra16": (4, "u2", "bgr"),
    "mono16": (1, "u2", "mono"),
}
COLOR_ENCODINGS: tuple[str, ...] = tuple(_COLOR_LAYOUTS)
"""sensor_msgs/Image encodings that ``image_to_rgb`` decodes."""

DEPTH_ENCODINGS: tuple[str, ...] = ("16UC1", "mono16", "32FC1")
"""sensor_msgs/Image encodings that ``depth_to_metres`` decodes (16-bit: millimetres; 32FC1: metres)."""

MM_PER_M = 1000.0


def _pixel_rows(
    height: int, width: int, step: int, data: bytes | np.ndarray, channels: int, sample: str, is_bigendian: bool
) -> np.ndarray:
    """View ``data`` as (H, W, C) samples of native byte order, dropping row padding."""
    itemsize = np.dtype(sample).itemsize
    row_bytes = width * channels * itemsize
    buf = np.frombuffer(data, dtype=np.uint8)
    if step < row_bytes or buf.size < step * height:
        raise FrameError(
            f"image buffer too small: {buf.size} bytes for {width}x{height}, step {step} "
            f"(need step >= {row_bytes} and {step * height} bytes)"
        )
    rows = buf[: step * height].reshape(height, step)[:, :row_bytes]
    dtype = np.dtype(sample).newbyteorder(">" if is_bigendian else "<")
    pixels = np.ascontiguousarray(rows).view(dtype).reshape(height, width, channels)
    return pixels.astype(np.dtype(sample), copy=False)


def image_to_rgb(
    encoding: str, height: int, width: int, step: int, data: bytes | np.ndarray, is_bigendian: bool = False
) -> np.ndarray:
    """Decode sensor_msgs/Image fields into RGB.

    Args:
        encoding: one of COLOR_ENCODINGS (16-bit encodings are scaled to 8 bits by >> 8;
            alpha is dropped; mono is replicated to three channels).
        height, width: image size in pixels.
        step: row length in bytes (>= width * bytes per pixel).
        data: the pixel buffer, ``step * height`` bytes or more.
        is_bigendian: byte order of 16-bit samples.

    Returns:
        (height, width, 3) uint8 RGB, a new array.

    Raises:
        FrameError: unknown encoding or a buffer that does not fit the size.
    """
    layout = _COLOR_LAYOUTS.get(encoding)
    if layout is None:
        raise FrameError(f"unsupported colour encoding {encoding!r} (supported: {', '.join(COLOR_ENCODINGS)})")
    channels, sample, order = layout
    pixels = _pixel_rows(height, width, step, data, channels, sample, is_bigendian)
    if sample == "u2":
        pixels = (pixels >> 8).astype(np.uint8)
    if order == "mono":
        return np.repeat(pixels[:, :, :1], 3, axis=2)
    rgb = pixels[:, :, 2::-1] if order == "bgr" else pixels[:, :, :3]
    return np.ascontiguousarray(rgb, dtype=np.uint8)


def depth_to_metres(
    encoding: str, height: int, width: int, step: int, data: bytes | np.ndarray, is_bigendian: bool = False
) -> np.ndarray:
    """Decode sensor_msgs/Image depth fields into metres.

    Args:
        encoding: "16UC1" or "mono16" (unsigned millimetres, 0 = invalid) or "32FC1" (metres).
        height, width, step, data, is_bigendian: as in ``image_to_rgb``.

    Returns:
        (height, width) float32 metres; 0 or NaN where invalid (32FC1 inf and negative
        values become NaN).

    Raises:
        FrameError: unknown encoding or a buffer that does not fit the size.
    """
    if encoding in ("16UC1", "mono16"):
        mm = _pixel_rows(height, width, step, data, 1, "u2", is_bigendian)[:, :, 0]
        return mm.astype(np.float32) / np.float32(MM_PER_M)
    if encoding == "32FC1":
        metres = _pixel_rows(height, width, step, data, 1, "f4", is_bigendian)[:, :, 0].astype(np.float32)
        metres[~np.isfinite(metres) | (metres < 0)] = np.nan
        return metres
    raise FrameError(f"unsupported depth encoding {encoding!r} (supported: {', '.join(DEPTH_ENCODINGS)})")


def decode_image_bytes(data: bytes | np.ndarray, what: str) -> np.ndarray:
    """Decode an encoded image (JPEG, PNG, TIFF, ...) strictly, as RGB/grey samples.

    Pillow refuses a truncated or corrupt stream instead of returning a part-grey picture, and
    prints nothing: libjpeg's and libpng's own messages ("Premature end of JPEG file") carry no
    file name, while the FrameError raised here names ``what``.

    Args:
        data: the encoded bytes.
        what: the file or message they came from, for the error.

    Returns:
        (H, W) grey or (H, W, 3|4) RGB(A) samples, uint8, or uint16 for 16-bit grey.

    Raises:
        FrameError: empty, truncated, corrupt or not an image.
    """
    raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
    if not raw:
        raise FrameError(f"cannot decode {what}: it is empty (0 bytes)")
    try:
        with Image.open(io.BytesIO(raw)) as image:
            image.load()
            if image.mode in ("I;16", "I;16L", "I;16B", "I"):
                samples = np.asarray(image)
                if samples.dtype != np.uint16 and (samples.min() < 0 or samples.max() > 65535):
                    raise FrameError(f"cannot decode {what}: 32-bit integer samples out of the 16-bit range")
                return samples.astype(np.uint16)
            if image.mode not in ("L", "RGB", "RGBA"):
                image = image.convert("RGBA" if "A" in image.mode or image.mode == "P" else "RGB")
            return np.asarray(image)
    except FrameError:
        raise
    except Image.UnidentifiedImageError:
        raise FrameError(f"cannot decode {what}: not an image file ({len(raw)} bytes)") from None
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise FrameError(f"cannot decode {what}: {reason} ({len(raw)} bytes)") from None


def _as_rgb(samples: np.ndarray, what: str) -> np.ndarray:
    """Decoded samples (grey or RGB(A); 8 or 16 bit) -> (H, W, 3) uint8 RGB."""
    if samples.dtype == np.uint16:
        samples = (samples >> 8).astype(np.uint8)
    if samples.dtype != np.uint8:
        raise FrameError(f"{what}: colour image has unsupported sample type {samples.dtype}")
    if samples.ndim == 2:
        return np.repeat(samples[:, :, None], 3, axis=2)
    return np.ascontiguousarray(samples[:, :, :3])


def decode_compressed_rgb(fmt: str, data: bytes | np.ndarray) -> np.ndarray:
    """Decode a sensor_msgs/CompressedImage (JPEG or PNG) into RGB.

    image_transport's "compressed" plugin writes JPEG/PNG in BGR (or gray) order whatever the
    original encoding, so the pixel order comes from the codec, not from ``fmt``.

    Args:
        fmt: the message's ``format`` field, e.g. "jpeg", "rgb8; jpeg compressed bgr8".
        data: the compressed bytes.

    Returns:
        (H, W, 3) uint8 RGB.

    Raises:
        FrameError: undecodable data or a compressedDepth message on a colour topic.
    """
    if "compresseddepth" in fmt.lower():
        raise FrameError(f"compressed format {fmt!r} is depth, not colour")
    what = f"compressed colour image (format {fmt!r})"
    return _as_rgb(decode_image_bytes(data, what), what)


# compressed_depth_image_transport prefixes the PNG with a ConfigHeader:
# int32 format enum, float32 depthQuantA, float32 depthQuantB (little-endian, 12 bytes).
COMPRESSED_DEPTH_HEADER = struct.Struct("<iff")


def decode_compressed_depth(fmt: str, data: bytes | np.ndarray) -> np.ndarray:
    """Decode a compressed depth image into metres.

    Handles image_transport's "compressedDepth" PNG ("16UC1; compressedDepth png": millimetres;
    "32FC1; compressedDepth png": inverse-depth quantised, depth = A / (q - B)) and plain
    16-bit PNG/TIFF in millimetres ("png", "16UC1; png compressed ...").

    Args:
        fmt: the message's ``format`` field.
        data: the compressed bytes.

    Returns:
        (H, W) float32 metres; 0 or NaN where invalid.

    Raises:
        FrameError: undecodable data or an unsupported variant (e.g. RVL).
    """
    raw = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
    lowered = fmt.lower()
    if "compresseddepth" in lowered:
        if "rvl" in lowered:
            raise FrameError(f"compressed depth format {fmt!r} (RVL) is not supported; republish as png")
        if len(raw) <= COMPRESSED_DEPTH_HEADER.size:
            raise FrameError(f"compressed depth message too short ({len(raw)} bytes)")
        _, quant_a, quant_b = COMPRESSED_DEPTH_HEADER.unpack_from(raw)
        image = decode_image_bytes(raw[COMPRESSED_DEPTH_HEADER.size :], f"compressed depth image (format {fmt!r})")
        if lowered.startswith("32fc1"):
            q = image.astype(np.float32)
            with np.errstate(divide="ignore"):
                metres = np.where(q > 0, np.float32(quant_a) / (q - np.float32(quant_b)), np.nan)
            return metres.astype(np.float32)
    else:
        image = decode_image_bytes(raw, f"compressed depth image (format {fmt!r})")
    if image.ndim != 2 or image.dtype != np.uint16:
        raise FrameError(
            f"compressed depth (format {fmt!r}) decoded to {image.dtype} {image.shape}, expected 16-bit millimetres"
        )
    return image.astype(np.float32) / np.float32(MM_PER_M)


def read_color_file(path: Path) -> np.ndarray:
    """Read a colour image file (JPEG, PNG, ...) as (H, W, 3) uint8 RGB.

    Raises:
        FrameError: the file is missing, unreadable, truncated, corrupt or not an image; the
            message names the file.
    """
    return _as_rgb(decode_image_bytes(_read_bytes(path), f"image file {path}"), str(path))


def read_depth_file(path: Path, invalid_values: tuple[int, ...] = (), units_per_metre: float = MM_PER_M) -> np.ndarray:
    """Read a 16-bit depth image (PNG, TIFF) as (H, W) float32 metres.

    Args:
        path: the image file.
        invalid_values: raw values that also mean "no depth" besides 0 (7-Scenes uses 65535).
        units_per_metre: raw value of one metre: 1000 for millimetres, 5000 for TUM RGB-D.

    Raises:
        FrameError: the file is missing, unreadable, truncated, corrupt or not single-channel
            16-bit; the message names the file.
    """
    image = decode_image_bytes(_read_bytes(path), f"depth image file {path}")
    if image.ndim != 2 or image.dtype != np.uint16:
        raise FrameError(f"{path}: depth must be single-channel 16-bit, got {image.dtype} {image.shape}")
    metres = image.astype(np.float32) / np.float32(units_per_metre)
    for value in invalid_values:
        metres[image == value] = 0.0
    return metres


def _read_bytes(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise FrameError(f"cannot read image file {path} ({err.strerror or type(err).__name__})") from None
