"""Pixel head regions -> image boxes (hand-made logits), and through a real perceptor to a world cup box."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pytest

from embodied_ros.errors import ConfigError
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.network.perceptron_perceptor import PerceptronPerceptor
from embodied_ros.network.pixel_detections import PIXEL_LIFTING, PixelDecodeParams, pixel_decode
from embodied_ros.synthetic.classes import class_index
from embodied_ros.synthetic.scene import generate_scene
from embodied_ros.training.config import synthetic_model

NAMES = ("chair", "cup", "book")


def _logits(labels: np.ndarray, n_classes: int, confidence: float = 8.0) -> np.ndarray:
    """(C + 1, h, w) logits whose argmax is ``labels`` (values in 0..C, C = other)."""
    logits = np.zeros((n_classes + 1, *labels.shape), np.float32)
    np.put_along_axis(logits, labels[None], confidence, axis=0)
    return logits


def test_each_connected_region_of_a_chosen_class_is_one_box_in_frame_pixels() -> None:
    labels = np.full((10, 20), 3)  # other
    labels[2:4, 3:6] = 1  # a cup: rows 2-3, columns 3-5
    labels[7:9, 14:16] = 1  # a second cup, apart
    labels[5, 10] = 1  # one stray pixel: below min_pixels
    labels[0:3, 15:19] = 2  # a book, not asked for
    decoded = pixel_decode(_logits(labels, 3), NAMES, (40, 20), PixelDecodeParams(classes=("cup",), min_pixels=2))
    regions = decoded.detections
    assert regions.labels.tolist() == [1, 1]
    order = np.argsort(regions.boxes_xyxy[:, 0])
    # Head pixel (u, v) covers frame pixels [2u, 2u + 2) x [2v, 2v + 2) (40 x 20 frame, 20 x 10 head).
    np.testing.assert_allclose(regions.boxes_xyxy[order], [[6, 4, 12, 8], [28, 14, 32, 18]])
    assert np.all(regions.scores > 0.99)  # confident logits: mean probability near 1
    # The region image names each region's own pixels (for lifting), nothing else.
    owner = decoded.regions
    assert owner.shape == labels.shape and sorted(np.unique(owner).tolist()) == [-1, 0, 1]
    assert (owner[2:4, 3:6] == owner[2, 3]).all() and (owner[7:9, 14:16] == owner[7, 14]).all()
    assert owner[2, 3] != owner[7, 14] and np.count_nonzero(owner >= 0) == 10
    assert owner[5, 10] == -1 and (owner[0:3, 15:19] == -1).all()  # too small; not asked for
    assert (decoded.labels[owner >= 0] == 1).all() and decoded.labels[5, 10] == 1  # labels keep the stray


def test_specks_of_a_merged_class_within_the_gap_are_one_region() -> None:
    labels = np.full((12, 24), 3)
    labels[2:5, 2:4] = 1  # three specks of one unsure cup mask: 2 and 3 pixels apart ...
    labels[2:5, 6:8] = 1
    labels[6:9, 6:8] = 1
    labels[2:5, 20:22] = 1  # ... and a cup 12 pixels away
    logits = _logits(labels, 3)
    apart = pixel_decode(logits, NAMES, (24, 12), PixelDecodeParams(classes=("cup",), merge_px=()))
    assert len(apart.detections) == 4
    merged = pixel_decode(logits, NAMES, (24, 12), PixelDecodeParams(classes=("cup",), merge_px=(("cup", 3),)))
    boxes = merged.detections.boxes_xyxy[np.argsort(merged.detections.boxes_xyxy[:, 0])]
    np.testing.assert_allclose(boxes, [[2, 2, 8, 9], [20, 2, 22, 5]])  # head pixels = frame pixels here
    # The merged region is the specks' own pixels, not the gaps between them.
    assert np.count_nonzero(merged.regions == merged.regions[2, 2]) == 18
    assert (merged.regions[2:5, 4:6] == -1).all()
    with pytest.raises(ConfigError, match="merge_px"):
        PixelDecodeParams(merge_px=(("door", -1),))


def test_low_probability_pixels_are_not_regions_and_bad_settings_are_errors() -> None:
    labels = np.full((6, 6), 3)
    labels[1:4, 1:4] = 1
    unsure = _logits(labels, 3, confidence=0.5)  # argmax cup, probability ~0.35
    assert len(pixel_decode(unsure, NAMES, (6, 6), PixelDecodeParams(classes=("cup",))).detections) == 0
    sure_enough = PixelDecodeParams(classes=("cup",), min_probability=0.3)
    assert len(pixel_decode(unsure, NAMES, (6, 6), sure_enough).detections) == 1
    with pytest.raises(ConfigError, match="lamp"):
        pixel_decode(unsure, NAMES, (6, 6), PixelDecodeParams(classes=("lamp",)))
    with pytest.raises(ConfigError, match="min_pixels"):
        PixelDecodeParams(min_pixels=0)


@pytest.mark.parametrize("from_region", [False, True])
def test_perceptor_lifts_pixel_classes_through_depth_to_the_true_cup(from_region: bool) -> None:
    """Pixel logits made from a real render's class map (an ideal pixel head) give world cup boxes on the
    cups, lifted from the regions' boxes or from the regions' own pixels."""
    config = replace(synthetic_model(), image_size=240, box_stride=1, feature_stride=4, pixel_head=True)
    scene = generate_scene(3)
    cups = np.flatnonzero(scene.labels == config.classes.index("cup"))
    assert len(cups)
    best = None
    for i in range(len(scene)):  # the frame that shows a cup best
        r = scene.render(i)
        shown = r.visible_pixels[cups].max()
        if best is None or shown > best[0]:
            best = (shown, i, r)
    _, index, rendered = best
    n = config.num_classes
    classes = np.where((rendered.class_id >= 0) & (rendered.class_id < n), rendered.class_id, n)
    s = config.image_size // 2
    step = rendered.class_id.shape[0] // s
    head = classes[step // 2::step, step // 2::step][:s, :s]
    x, y, z = config.box_shape
    outputs = {
        "occupancy": np.zeros((1, config.empty_label + 1, *config.grid_shape), np.float32),
        "box_cls": np.full((1, n, x, y, z), -10.0, np.float32),  # the box head finds nothing
        "box_ctr": np.zeros((1, 1, x, y, z), np.float32),
        "box_dist": np.full((1, 6, x, y, z), 0.1, np.float32),
        "box_rot": np.tile(np.array([1, 0, 0, 0, 1, 0], np.float32)[:, None, None, None], (1, 1, x, y, z))[None],
        "features": np.zeros((1, config.box_channels, x, y, z), np.float32),
        "pixel_cls": _logits(head, n)[None],
    }
    lifting = dataclasses.replace(PIXEL_LIFTING, region_classes=("cup",) if from_region else ())
    perceptor = PerceptronPerceptor(lambda _: outputs, config, floor_z=0.0,
                                    pixels=PixelDecodeParams(classes=("cup",)), lifting=lifting)
    result = perceptor.perceive(rendered.frame)
    det = result.detections
    assert len(det) and set(det.names) == {"cup"}  # only the pixel class, lifted
    assert result.detections_2d is not None and len(result.detections_2d) >= 1
    labels = result.pixel_labels  # for the world map's class votes: the cup pixels, nothing else
    assert labels is not None and labels.shape == (120, 120)
    assert set(np.unique(labels)) == {-1, config.classes.index("cup")}
    iou = box_iou_3d(det.boxes, scene.boxes[cups])
    assert iou.max() > 0.25, iou  # the lifted box lies on a true cup
    assert class_index("cup") == config.classes.index("cup")
    with pytest.raises(ConfigError, match="mug"):  # a class the network does not have: said at construction
        PerceptronPerceptor(lambda _: outputs, config, pixels=PixelDecodeParams(classes=("mug",)))
