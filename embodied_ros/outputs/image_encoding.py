"""Image encoding for the outputs: numpy arrays -> sensor_msgs/Image and CompressedImage fields.

Core conventions as sources/images.py, which decodes what this writes: colour is (H, W, 3) uint8
RGB, depth is (H, W) metres with 0, NaN or inf where invalid. The encoders always write
little-endian samples and ``is_bigendian=0``, which is what every ROS 2 driver on x86 and ARM
publishes, and unpadded rows. They raise ValueError: asking for an unsupported encoding is a
programming or configuration error, not a bad frame.
"""

from __future__ import annotations

from typing import NamedTuple

import cv2
import numpy as np

from ..sources.images import COMPRESSED_DEPTH_HEADER, MM_PER_M

__all__ = ["RosImage", "depth_to_compressed", "depth_to_ros", "rgb_to_compressed", "rgb_to_ros"]


class RosImage(NamedTuple):
    """The pixel fields of a sensor_msgs/Image, in the message's field order.

    ``data`` is a 1-D uint8 array (what rosbags message classes expect); build a message with
    ``Image(header=..., **ros_image._asdict())``.
    """

    height: int
    width: int
    encoding: str
    is_bigendian: int
    step: int
    data: np.ndarray


def rgb_to_ros(rgb: np.ndarray, encoding: str = "rgb8") -> RosImage:
    """Encode (H, W, 3) uint8 RGB as sensor_msgs/Image pixel fields.

    Args:
        rgb: (H, W, 3) uint8 RGB.
        encoding: "rgb8", "bgr8", "rgba8", "bgra8" (alpha 255) or "mono8" (ITU-R 601 luma).

    Returns:
        RosImage with little-endian samples, unpadded rows.

    Raises:
        ValueError: bad array or unsupported encoding.
    """
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"rgb must be HxWx3 uint8, got {rgb.shape} {rgb.dtype}")
    h, w = rgb.shape[:2]
    if encoding == "mono8":
        pixels = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)[:, :, None]
    elif encoding in ("rgb8", "bgr8", "rgba8", "bgra8"):
        pixels = rgb[:, :, ::-1] if encoding.startswith("bgr") else rgb
        if encoding.endswith("a8"):
            pixels = np.dstack([pixels, np.full((h, w), 255, np.uint8)])
    else:
        raise ValueError(f"cannot encode colour as {encoding!r} (use rgb8, bgr8, rgba8, bgra8 or mono8)")
    flat = np.ascontiguousarray(pixels, dtype=np.uint8).reshape(-1)
    return RosImage(h, w, encoding, 0, w * pixels.shape[2], flat)


def depth_to_ros(depth_m: np.ndarray, encoding: str = "16UC1") -> RosImage:
    """Encode (H, W) depth in metres as sensor_msgs/Image pixel fields.

    Args:
        depth_m: (H, W) depth, metres; NaN, inf and <= 0 mean invalid.
        encoding: "16UC1" (millimetres, rounded, clipped to 65535, invalid -> 0) or
            "32FC1" (metres, invalid -> NaN, the REP-118 convention).

    Returns:
        RosImage with little-endian samples, unpadded rows.

    Raises:
        ValueError: bad array or unsupported encoding.
    """
    depth = np.asarray(depth_m, dtype=np.float64)
    if depth.ndim != 2:
        raise ValueError(f"depth must be HxW, got shape {depth.shape}")
    h, w = depth.shape
    invalid = ~np.isfinite(depth) | (depth <= 0)
    if encoding == "16UC1":
        mm = np.clip(np.rint(np.where(invalid, 0.0, depth) * MM_PER_M), 0, 65535).astype("<u2")
        return RosImage(h, w, encoding, 0, w * 2, mm.reshape(-1).view(np.uint8))
    if encoding == "32FC1":
        metres = np.where(invalid, np.nan, depth).astype("<f4")
        return RosImage(h, w, encoding, 0, w * 4, metres.reshape(-1).view(np.uint8))
    raise ValueError(f"cannot encode depth as {encoding!r} (use 16UC1 or 32FC1)")


def rgb_to_compressed(rgb: np.ndarray, fmt: str = "jpeg", quality: int = 90) -> tuple[str, np.ndarray]:
    """Encode (H, W, 3) uint8 RGB for a sensor_msgs/CompressedImage, as image_transport does.

    Args:
        rgb: (H, W, 3) uint8 RGB.
        fmt: "jpeg" or "png".
        quality: JPEG quality 1-100 (ignored for PNG).

    Returns:
        (format field, 1-D uint8 data), format as image_transport writes it,
        e.g. "rgb8; jpeg compressed bgr8".

    Raises:
        ValueError: bad array, unknown format or an encoder failure.
    """
    rgb = np.asarray(rgb)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or rgb.dtype != np.uint8:
        raise ValueError(f"rgb must be HxWx3 uint8, got {rgb.shape} {rgb.dtype}")
    if fmt not in ("jpeg", "png"):
        raise ValueError(f"cannot compress colour as {fmt!r} (use jpeg or png)")
    params = [cv2.IMWRITE_JPEG_QUALITY, int(quality)] if fmt == "jpeg" else []
    ok, buf = cv2.imencode(".jpg" if fmt == "jpeg" else ".png", rgb[:, :, ::-1], params)
    if not ok:
        raise ValueError(f"OpenCV could not encode a {rgb.shape[1]}x{rgb.shape[0]} image as {fmt}")
    return f"rgb8; {fmt} compressed bgr8", buf.reshape(-1)


def depth_to_compressed(depth_m: np.ndarray, png_level: int = 4) -> tuple[str, np.ndarray]:
    """Encode depth for a sensor_msgs/CompressedImage the way image_transport's compressedDepth does.

    16UC1 millimetres in a PNG (lossless at 1 mm), after the plugin's 12-byte ConfigHeader
    (int32 format 0 = INV_DEPTH, two float32 quantisation parameters, unused for 16UC1 and
    written as 0). ROS tools read it on ``<depth topic>/compressedDepth``; ``decode_compressed_depth``
    reads it back.

    Args:
        depth_m: (H, W) depth, metres; NaN, inf and <= 0 mean invalid (written as 0), beyond
            65.535 m clipped.
        png_level: zlib level 0-9; 4 is about as small as 9 on Kinect depth at 1/30 of the time.

    Returns:
        (format field "16UC1; compressedDepth png", 1-D uint8 data).

    Raises:
        ValueError: bad array or an encoder failure.
    """
    mm = depth_to_ros(depth_m, "16UC1").data.view("<u2").reshape(np.shape(depth_m))
    ok, png = cv2.imencode(".png", mm, [cv2.IMWRITE_PNG_COMPRESSION, int(png_level)])
    if not ok:
        raise ValueError(f"OpenCV could not encode a {mm.shape[1]}x{mm.shape[0]} depth image as PNG")
    header = np.frombuffer(COMPRESSED_DEPTH_HEADER.pack(0, 0.0, 0.0), dtype=np.uint8)
    return "16UC1; compressedDepth png", np.concatenate([header, png.reshape(-1)])
