"""ROS image encodings <-> arrays, compressed images, and image files."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import cv2
import numpy as np
import pytest

from embodied_ros.errors import FrameError
from embodied_ros.outputs.image_encoding import depth_to_compressed, depth_to_ros, rgb_to_compressed, rgb_to_ros
from embodied_ros.sources.images import (
    decode_compressed_depth,
    decode_compressed_rgb,
    depth_to_metres,
    image_to_rgb,
    read_color_file,
    read_depth_file,
)

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"

RED_BLUE = np.array([[[255, 0, 0], [0, 0, 255]]], np.uint8)  # 1x2: a red and a blue pixel


@pytest.mark.parametrize(
    ("encoding", "raw"),
    [
        ("rgb8", [255, 0, 0, 0, 0, 255]),
        ("bgr8", [0, 0, 255, 255, 0, 0]),
        ("rgba8", [255, 0, 0, 9, 0, 0, 255, 9]),
        ("bgra8", [0, 0, 255, 9, 255, 0, 0, 9]),
        ("8UC3", [0, 0, 255, 255, 0, 0]),
    ],
)
def test_colour_encodings_known_answers(encoding, raw):
    assert np.array_equal(image_to_rgb(encoding, 1, 2, len(raw), bytes(raw)), RED_BLUE)


def test_mono_and_16_bit_colour():
    mono = image_to_rgb("mono8", 1, 2, 2, bytes([7, 200]))
    assert mono.tolist() == [[[7, 7, 7], [200, 200, 200]]]
    # rgb16 little endian 0xFF00 -> 255 after >> 8; big endian reads the other way round
    little = image_to_rgb("rgb16", 1, 1, 6, bytes([0x00, 0xFF, 0x00, 0x80, 0x00, 0x01]))
    assert little.tolist() == [[[255, 128, 1]]]
    big = image_to_rgb("rgb16", 1, 1, 6, bytes([0xFF, 0x00, 0x80, 0x00, 0x01, 0x00]), is_bigendian=True)
    assert big.tolist() == [[[255, 128, 1]]]


def test_row_padding_is_dropped():
    rows = np.array([[1, 2, 3, 4, 5, 6, 99, 99], [7, 8, 9, 10, 11, 12, 99, 99]], np.uint8)
    rgb = image_to_rgb("rgb8", 2, 2, 8, rows.tobytes())
    assert rgb.reshape(-1).tolist() == list(range(1, 13))
    with pytest.raises(FrameError, match="buffer too small"):
        image_to_rgb("rgb8", 3, 2, 8, rows.tobytes())


def test_depth_encodings_and_byte_order():
    mm = np.array([[1000, 0, 65535]], np.uint16)
    np.testing.assert_allclose(depth_to_metres("16UC1", 1, 3, 6, mm.astype("<u2").tobytes()), [[1.0, 0.0, 65.535]])
    big = depth_to_metres("16UC1", 1, 3, 6, mm.astype(">u2").tobytes(), is_bigendian=True)
    np.testing.assert_allclose(big, [[1.0, 0.0, 65.535]], rtol=1e-6)
    metres = np.array([[1.25, np.inf, -1.0, np.nan]], np.float32)
    out = depth_to_metres("32FC1", 1, 4, 16, metres.astype(">f4").tobytes(), is_bigendian=True)
    assert out.dtype == np.float32 and out[0, 0] == np.float32(1.25) and np.isnan(out[0, 1:]).all()


def test_unknown_encodings_name_themselves():
    with pytest.raises(FrameError, match="'yuv422_yuy2'"):
        image_to_rgb("yuv422_yuy2", 1, 1, 2, bytes(2))
    with pytest.raises(FrameError, match="'8UC1'"):
        depth_to_metres("8UC1", 1, 1, 1, bytes(1))
    with pytest.raises(ValueError, match="'hsv8'"):
        rgb_to_ros(RED_BLUE, "hsv8")
    with pytest.raises(ValueError, match="'16SC1'"):
        depth_to_ros(np.ones((2, 2)), "16SC1")


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "rgba8", "bgra8"])
def test_rgb_round_trip(encoding):
    rgb = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    msg = rgb_to_ros(rgb, encoding)
    assert msg.encoding == encoding and msg.is_bigendian == 0 and msg.step == 7 * len(encoding.rstrip("8"))
    assert msg.data.dtype == np.uint8 and msg.data.size == msg.step * 5
    assert np.array_equal(image_to_rgb(msg.encoding, msg.height, msg.width, msg.step, msg.data), rgb)


def test_mono_encoding_is_luma():
    msg = rgb_to_ros(RED_BLUE, "mono8")
    assert msg.data.tolist() == [76, 29]  # 0.299 * 255 and 0.114 * 255


def test_depth_round_trip():
    depth = np.array([[0.5, 1.2344, 0.0], [np.nan, -1.0, 70.0]])
    msg = depth_to_ros(depth, "16UC1")
    assert msg.step == 6 and msg.data.view("<u2").tolist() == [500, 1234, 0, 0, 0, 65535]
    back = depth_to_metres(msg.encoding, msg.height, msg.width, msg.step, msg.data)
    np.testing.assert_allclose(back, [[0.5, 1.234, 0], [0, 0, 65.535]], atol=1e-6)
    msg = depth_to_ros(depth, "32FC1")
    back = depth_to_metres(msg.encoding, msg.height, msg.width, msg.step, msg.data)
    np.testing.assert_allclose(back[0, :2], depth[0, :2], rtol=1e-7)
    assert np.isnan(back[0, 2]) and np.isnan(back[1, :2]).all() and back[1, 2] == 70.0


def test_compressed_colour():
    rgb = np.random.default_rng(1).integers(0, 256, (16, 24, 3), dtype=np.uint8)
    fmt, data = rgb_to_compressed(rgb, "png")
    assert fmt == "rgb8; png compressed bgr8" and data.dtype == np.uint8
    assert np.array_equal(decode_compressed_rgb(fmt, data), rgb)
    smooth = np.dstack([np.tile(np.arange(0, 240, 10, dtype=np.uint8), (16, 1))] * 3)
    smooth[:, :, 0] = 200
    fmt, data = rgb_to_compressed(smooth, "jpeg", quality=95)
    assert np.abs(decode_compressed_rgb(fmt, data).astype(int) - smooth).mean() < 3
    with pytest.raises(FrameError, match="cannot decode"):
        decode_compressed_rgb("jpeg", np.frombuffer(b"garbage", np.uint8))


def test_compressed_depth_variants():
    mm = np.array([[0, 1000], [2500, 65000]], np.uint16)
    ok, png = cv2.imencode(".png", mm)
    assert ok
    plain = decode_compressed_depth("16UC1; png compressed", png.tobytes())
    np.testing.assert_allclose(plain, mm / 1000.0, rtol=1e-7)
    # image_transport compressedDepth: 12-byte header (format, quantA, quantB) then the PNG
    blob = struct.pack("<iff", 0, 0.0, 0.0) + png.tobytes()
    np.testing.assert_allclose(decode_compressed_depth("16UC1; compressedDepth png", blob), mm / 1000.0, rtol=1e-7)
    q = np.array([[0, 50], [100, 200]], np.uint16)  # inverse depth: A / (q - B)
    ok, qpng = cv2.imencode(".png", q)
    blob = struct.pack("<iff", 0, 100.0, 0.0) + qpng.tobytes()
    out = decode_compressed_depth("32FC1; compressedDepth png", blob)
    assert np.isnan(out[0, 0])
    np.testing.assert_allclose(out[0, 1:].tolist() + out[1].tolist(), [2.0, 1.0, 0.5])
    with pytest.raises(FrameError, match="RVL"):
        decode_compressed_depth("16UC1; compressedDepth rvl", blob)


@pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")
def test_read_real_files(tmp_path):
    rgb = read_color_file(KITCHEN / "frame-000000.color.jpg")
    assert rgb.shape == (480, 640, 3) and rgb.dtype == np.uint8
    assert np.array_equal(rgb, cv2.imread(str(KITCHEN / "frame-000000.color.jpg"))[:, :, ::-1])
    depth = read_depth_file(KITCHEN / "frame-000000.depth.png")
    assert depth.dtype == np.float32 and abs(float(depth.max()) - 3.493) < 1e-6
    with pytest.raises(FrameError, match="frame-000000.color.jpg"):
        read_depth_file(KITCHEN / "frame-000000.color.jpg")  # 8-bit colour is not depth
    sentinel = tmp_path / "d.png"
    cv2.imwrite(str(sentinel), np.array([[65535, 1200]], np.uint16))
    assert read_depth_file(sentinel, invalid_values=(65535,)).tolist() == [[0.0, pytest.approx(1.2)]]
    with pytest.raises(FrameError, match="cannot read image file"):
        read_color_file(tmp_path / "missing.jpg")


def test_compressed_depth_encoder_is_image_transports_and_lossless():
    depth = np.array([[0.5, 1.2344, 0.0], [np.nan, -1.0, 3.999]])
    fmt, data = depth_to_compressed(depth)
    assert fmt == "16UC1; compressedDepth png" and data.dtype == np.uint8
    assert struct.unpack("<iff", data[:12].tobytes()) == (0, 0.0, 0.0)  # ConfigHeader: INV_DEPTH, unused params
    png = cv2.imdecode(data[12:], cv2.IMREAD_UNCHANGED)  # an independent PNG reader sees millimetres
    assert png.dtype == np.uint16 and png.tolist() == [[500, 1234, 0], [0, 0, 3999]]
    np.testing.assert_allclose(decode_compressed_depth(fmt, data), [[0.5, 1.234, 0], [0, 0, 3.999]], atol=1e-6)


@pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")
def test_real_depth_compresses_five_times_losslessly():
    depth = read_depth_file(KITCHEN / "frame-000500.depth.png")
    fmt, data = depth_to_compressed(depth)
    raw = depth_to_ros(depth, "16UC1").data
    assert raw.size / data.size > 5  # measured: 614400 / ~88000 bytes
    np.testing.assert_array_equal(decode_compressed_depth(fmt, data), depth)


@pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")
def test_truncated_or_corrupt_files_are_frame_errors_naming_them_without_decoder_noise(tmp_path, capfd):
    jpeg = (KITCHEN / "frame-000000.color.jpg").read_bytes()
    png = (KITCHEN / "frame-000000.depth.png").read_bytes()
    cut_jpeg, corrupt_jpeg, cut_png = tmp_path / "cut.color.jpg", tmp_path / "corrupt.color.jpg", tmp_path / "cut.png"
    cut_jpeg.write_bytes(jpeg[: len(jpeg) // 3])  # OpenCV gives back a picture two thirds grey for this
    damaged = bytearray(jpeg)
    for i in range(20000, 20400, 7):  # bit errors in the middle of the entropy-coded data
        damaged[i] = (damaged[i] * 31 + 7) % 256
    corrupt_jpeg.write_bytes(bytes(damaged))
    cut_png.write_bytes(png[: len(png) // 2])
    for path, reader, why in [(cut_jpeg, read_color_file, "truncated"), (corrupt_jpeg, read_color_file, "broken"),
                              (cut_png, read_depth_file, "truncated")]:
        with pytest.raises(FrameError, match=why) as err:
            reader(path)
        assert str(path) in str(err.value) and "\n" not in str(err.value)
    assert capfd.readouterr().err == ""  # no "Premature end of JPEG file" / "libpng error" without a name
