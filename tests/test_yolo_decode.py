"""Known-answer cases for the shared YOLO decode: box maths, letterbox undo, thresholds, per-class NMS."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from embodied_ros.network.yolo_decode import YoloHeadSpec, decode_yolo, letterbox_size, nms_per_class

NAMES = ("a", "b", "c")
NET = (320, 320)
IMAGE = (640, 480)
SPEC = YoloHeadSpec(anchors=np.array([[32.0, 64.0], [64.0, 32.0]]), num_classes=3)
OFF = -20.0  # logit of "nothing here"


def _head(grid: int, spec: YoloHeadSpec = SPEC) -> np.ndarray:
    return np.full((1, spec.channels, grid, grid), OFF, np.float32)


def _put(head: np.ndarray, anchor: int, row: int, col: int, cls: int, obj: float = 10.0, txywh=(0, 0, 0, 0)) -> None:
    """Write one cell/anchor's logits: (tx, ty, tw, th), objectness, one class."""
    base = anchor * (5 + SPEC.num_classes)
    head[0, base : base + 4, row, col] = txywh
    head[0, base + 4, row, col] = obj
    head[0, base + 5 + cls, row, col] = 10.0


def test_single_cell_decodes_to_known_box() -> None:
    head = _head(10)
    _put(head, anchor=0, row=3, col=4, cls=1)
    dets = decode_yolo([head], [SPEC], NET, IMAGE, NAMES)
    # Centre (4.5, 3.5) cells of 32 px, size = anchor 32x64 of 320 px; stretched to 640x480.
    np.testing.assert_allclose(dets.boxes_xyxy, [[256.0, 120.0, 320.0, 216.0]], atol=1e-4)
    assert dets.labels.tolist() == [1] and dets.class_names == NAMES
    np.testing.assert_allclose(dets.scores, [expit(10.0) ** 2], rtol=1e-6)


def test_letterbox_is_undone() -> None:
    assert letterbox_size(IMAGE, NET) == (320, 240)
    head = _head(10)
    _put(head, anchor=0, row=3, col=4, cls=1)
    dets = decode_yolo([head], [SPEC], NET, IMAGE, NAMES, letterbox=True)
    # 40 px grey bands above and below; the image fills 320x240 of the input, scale 2 to pixels.
    np.testing.assert_allclose(dets.boxes_xyxy, [[256.0, 80.0, 320.0, 208.0]], atol=1e-4)


def test_scale_x_y_and_exp_size() -> None:
    spec = YoloHeadSpec(SPEC.anchors, 3, scale_x_y=2.0)
    head = _head(10, spec)
    _put(head, anchor=0, row=0, col=4, cls=0, txywh=(30.0, 0.0, np.log(2.0), 0.0))
    (box,) = decode_yolo([head], [spec], NET, NET, NAMES).boxes_xyxy
    # x = col + sigmoid(30) * 2 - 0.5 = col + 1.5 cells; w doubled by exp(log 2).
    cx, w = (box[0] + box[2]) / 2, box[2] - box[0]
    assert cx == pytest.approx(5.5 * 32, abs=1e-3) and w == pytest.approx(64.0, abs=1e-3)


def test_thresholds_and_multi_label() -> None:
    head = _head(10)
    _put(head, anchor=0, row=3, col=4, cls=0, obj=-2.0)  # objectness 0.12 < 0.25: not a candidate
    _put(head, anchor=1, row=5, col=5, cls=2)
    head[0, 13 + 0, 5, 5] = 0.0  # anchor 1, class 0 at probability 0.5: 0.5 * ~1 > 0.25, a second label
    dets = decode_yolo([head], [SPEC], NET, IMAGE, NAMES, score_threshold=0.25)
    assert sorted(dets.labels.tolist()) == [0, 2]
    np.testing.assert_allclose(dets.boxes_xyxy[0], dets.boxes_xyxy[1])
    assert len(decode_yolo([head], [SPEC], NET, IMAGE, NAMES, score_threshold=0.6)) == 1


@pytest.mark.parametrize(("cls_b", "iou", "kept"), [(1, 0.45, 1), (2, 0.45, 2), (1, 0.5, 2)])
def test_nms_across_heads_is_per_class(cls_b: int, iou: float, kept: int) -> None:
    coarse, fine = _head(10), _head(20)
    _put(coarse, anchor=0, row=3, col=4, cls=1, obj=10.0)
    _put(fine, anchor=0, row=6, col=8, cls=cls_b, obj=3.0)  # 8 px off in x and y: IoU 1344/2752 = 0.488
    dets = decode_yolo([coarse, fine], [SPEC, SPEC], NET, NET, NAMES, iou_threshold=iou)
    assert len(dets) == kept
    assert dets.scores[0] == dets.scores.max() and dets.labels[0] == 1


def test_nms_per_class_direct() -> None:
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [0, 0, 10, 10], [50, 50, 60, 60]], float)
    keep = nms_per_class(boxes, np.array([0.9, 0.8, 0.7, 0.6]), np.array([0, 0, 1, 0]), 0.45)
    assert sorted(keep.tolist()) == [0, 2, 3]
    assert nms_per_class(np.zeros((0, 4)), np.zeros(0), np.zeros(0, int), 0.45).shape == (0,)


def test_boxes_are_clipped_to_the_image_and_wrong_shapes_refused() -> None:
    head = _head(10)
    _put(head, anchor=1, row=0, col=0, cls=0, txywh=(0, 0, 3.0, 3.0))
    (box,) = decode_yolo([head], [SPEC], NET, IMAGE, NAMES).boxes_xyxy
    assert box[0] == 0.0 and box[1] == 0.0 and box[2] <= IMAGE[0] and box[3] <= IMAGE[1]
    with pytest.raises(ValueError, match="expected \\(1, 16"):
        decode_yolo([head[:, :8]], [SPEC], NET, IMAGE, NAMES)
    empty = decode_yolo([_head(10)], [SPEC], NET, IMAGE, NAMES)
    assert len(empty) == 0 and empty.boxes_xyxy.shape == (0, 4)


def test_a_box_at_the_right_edge_of_a_wide_image_keeps_its_x() -> None:
    # Column 9 of 10: net x 288..320, image x 576..640 of a 640x480 image: x > the height is no error.
    head = _head(10)
    _put(head, anchor=0, row=3, col=9, cls=0, txywh=(0, 0, 0, 0))
    (box,) = decode_yolo([head], [SPEC], NET, IMAGE, NAMES).boxes_xyxy
    np.testing.assert_allclose(box, [576.0, 120.0, 640.0, 216.0], atol=1e-4)
    _put(head, anchor=0, row=3, col=9, cls=0, txywh=(0, 0, np.log(2.0), 0))  # wider: runs past the edge
    (box,) = decode_yolo([head], [SPEC], NET, IMAGE, NAMES).boxes_xyxy
    np.testing.assert_allclose(box, [544.0, 120.0, 640.0, 216.0], atol=1e-4)
