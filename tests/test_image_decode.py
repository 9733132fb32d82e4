"""Known-answer cases for the shared 2D decode path and the YOLOX / NanoDet head decodes (no data needed)."""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.network.image_decode import (
    ResizeGeometry,
    best_class,
    finish_detections,
    letterbox,
    paste_resized,
    stretch,
    top_left,
)
from embodied_ros.network.nanodet_detector import (
    MEAN_BGR,
    REG_BINS,
    SCALE_BGR,
    center_points,
    decode_nanodet,
    nanodet_input,
)
from embodied_ros.network.yolox_detector import anchor_points, decode_yolox, yolox_input

IMAGE = (640, 480)  # wider than high: an x clipped to the height (480) instead of the width shows
NET = (416, 416)
NAMES = ("a", "b", "c")


@pytest.mark.parametrize("make", [stretch, letterbox, top_left])
def test_geometry_round_trip_and_clipping_to_width_and_height(make) -> None:
    g: ResizeGeometry = make(IMAGE, NET)
    (sx, sy), (ox, oy) = g.scale, g.offset
    image_box = np.array([[500.0, 100.0, 620.0, 400.0]])  # near the right edge, x > the height
    net_box = image_box * [sx, sy, sx, sy] + [ox, oy, ox, oy]
    np.testing.assert_allclose(g.to_image(net_box), image_box, atol=1e-9)
    # A box running past the right and bottom edges stops at the image's width and height.
    past = np.array([[600.0, 300.0, 700.0, 560.0]]) * [sx, sy, sx, sy] + [ox, oy, ox, oy]
    np.testing.assert_allclose(g.to_image(past), [[600.0, 300.0, 640.0, 480.0]], atol=1e-9)
    # ... and one past the left and top edges at 0.
    np.testing.assert_allclose(g.to_image(np.array([[ox - 10.0, oy - 10.0, ox + 10, oy + 10]]))[0, :2], [0, 0])


def test_geometries_place_the_image_as_each_model_expects() -> None:
    assert stretch(IMAGE, NET) == ResizeGeometry(IMAGE, NET, (0.65, 416 / 480), (0, 0), NET)
    assert letterbox(IMAGE, NET) == ResizeGeometry(IMAGE, NET, (0.65, 0.65), (0, 52), (416, 312))  # centred
    assert top_left(IMAGE, NET) == ResizeGeometry(IMAGE, NET, (0.65, 0.65), (0, 0), (416, 312))  # YOLOX
    tall = letterbox((480, 640), NET)
    assert tall.content_wh == (312, 416) and tall.offset == (52, 0)
    image = np.full((480, 640, 3), 200, np.uint8)
    canvas = paste_resized(image, letterbox(IMAGE, NET), fill=7.0)
    assert canvas.shape == (416, 416, 3) and canvas.dtype == np.float32
    assert np.all(canvas[:52] == 7.0) and np.all(canvas[52:364] == 200.0) and np.all(canvas[364:] == 7.0)
    canvas = paste_resized(image, top_left(IMAGE, NET), fill=114.0)
    assert np.all(canvas[:312] == 200.0) and np.all(canvas[312:] == 114.0)


def test_best_class_and_finish() -> None:
    scores = np.array([[0.1, 0.8, 0.2], [0.05, 0.1, 0.2], [0.6, 0.0, 0.7]], np.float32)
    rows, labels, best = best_class(scores, 0.3)
    assert rows.tolist() == [0, 2] and labels.tolist() == [1, 2]
    np.testing.assert_allclose(best, [0.8, 0.7])
    g = stretch(IMAGE, (320, 320))
    boxes = np.array([[10, 10, 50, 50], [12, 12, 52, 52], [12, 12, 52, 52], [300, 10, 319, 40]], float)
    dets = finish_detections(boxes, [0.5, 0.9, 0.4, 0.7], [0, 0, 1, 2], g, NAMES, iou_threshold=0.45)
    assert dets.labels.tolist() == [0, 2, 1] and dets.class_names == NAMES  # per-class NMS, best first
    np.testing.assert_allclose(dets.scores, [0.9, 0.7, 0.4])
    np.testing.assert_allclose(dets.boxes_xyxy[1], [600, 15, 638, 60])  # x scaled by 2, y by 1.5


def _yolox_output(num_classes: int = 3) -> np.ndarray:
    cells, _ = anchor_points(NET)
    out = np.zeros((1, len(cells), 5 + num_classes), np.float32)
    return out


def test_yolox_decode_known_box() -> None:
    out = _yolox_output()
    cells, stride = anchor_points(NET)
    assert len(cells) == 52 * 52 + 26 * 26 + 13 * 13
    # The stride-16 point at cell (x 25, y 3): the last column of its level, near the right edge.
    i = 52 * 52 + 3 * 26 + 25
    assert tuple(cells[i]) == (25.0, 3.0) and stride[i] == 16
    out[0, i, :4] = [0.5, 0.25, np.log(2.0), np.log(1.0)]
    out[0, i, 4], out[0, i, 5 + 2] = 0.9, 0.8
    boxes, scores, labels = decode_yolox(out, NET, 0.3)
    # centre ((25.5) * 16, 3.25 * 16) = (408, 52); w = 2 * 16, h = 16.
    np.testing.assert_allclose(boxes, [[392.0, 44.0, 424.0, 60.0]], atol=1e-4)
    np.testing.assert_allclose(scores, [0.72], rtol=1e-6)
    assert labels.tolist() == [2]
    assert len(decode_yolox(out, NET, 0.75)[0]) == 0  # objectness * class = 0.72
    dets = finish_detections(boxes, scores, labels, top_left(IMAGE, NET), NAMES)
    np.testing.assert_allclose(dets.boxes_xyxy, [[392 / 0.65, 44 / 0.65, 640.0, 60 / 0.65]], atol=1e-3)
    with pytest.raises(ValueError, match="expected"):
        decode_yolox(out[:, :-1], NET, 0.3)


def test_nanodet_decode_known_box() -> None:
    centres, stride = center_points(NET)
    assert len(centres) == 3598  # 52^2 + 26^2 + 13^2 + 7^2: the 416 / 64 level rounds up
    out = np.full((1, len(centres), 3 + 4 * REG_BINS), -30.0, np.float32)
    out[0, :, :3] = 0.0
    i = 2704 + 676 + 169 + 2 * 7 + 6  # stride 64, x 6, y 2: centre (384, 128)
    assert tuple(centres[i]) == (384.0, 128.0) and stride[i] == 64
    out[0, i, 1] = 0.6
    dist = out[0, i, 3:].reshape(4, REG_BINS)
    dist[0, 1] = dist[1, 2] = 30.0  # left 1 bin, top 2 bins: certain
    dist[2, 0] = dist[2, 1] = 30.0  # right: half 0, half 1 -> 0.5 bins
    dist[3, :] = 0.0  # bottom: uniform -> 3.5 bins
    boxes, scores, labels = decode_nanodet(out, NET, 3, 0.3)
    np.testing.assert_allclose(boxes, [[384 - 64, 128 - 128, 384 + 32, 128 + 3.5 * 64]], atol=1e-3)
    assert labels.tolist() == [1] and scores.tolist() == pytest.approx([0.6])
    dets = finish_detections(boxes, scores, labels, letterbox(IMAGE, NET), NAMES)
    np.testing.assert_allclose(dets.boxes_xyxy, [[320 / 0.65, 0.0, 640.0, (352 - 52) / 0.65]], atol=1e-3)
    with pytest.raises(ValueError, match="expected"):
        decode_nanodet(out, NET, 4, 0.3)


def test_each_model_gets_its_own_input() -> None:
    image = np.empty((480, 640, 3), np.uint8)
    image[:] = (10, 20, 30)  # RGB
    x, g = yolox_input(image, NET)  # BGR 0..255, top-left, 114 below
    assert x.shape == (1, 3, 416, 416) and x.dtype == np.float32 and g == top_left(IMAGE, NET)
    np.testing.assert_array_equal(x[0, :, :312, :].reshape(3, -1).max(1), [30, 20, 10])
    np.testing.assert_array_equal(x[0, :, :312, :].reshape(3, -1).min(1), [30, 20, 10])
    assert np.all(x[0, :, 312:] == 114.0)
    x, g = nanodet_input(image, NET)  # BGR, (pixel - mean) * scale, black bands above and below
    assert x.shape == (1, 3, 416, 416) and g == letterbox(IMAGE, NET)
    np.testing.assert_allclose(x[0, :, 200, 100], (np.array([30, 20, 10]) - MEAN_BGR) * SCALE_BGR, rtol=1e-6)
    np.testing.assert_allclose(x[0, :, 10, 100], -MEAN_BGR * SCALE_BGR, rtol=1e-6)
    np.testing.assert_allclose(x[0, :, 400, 100], -MEAN_BGR * SCALE_BGR, rtol=1e-6)
