"""Object colour: naming Lab colours, the robust per-view sample, the accumulator, the memory's hook, and
real redkitchen objects (ground-truth boxes projected into frames where they are seen)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import KITCHEN

from embodied_ros.detections import Detections3D, FramePerception
from embodied_ros.frame import Frame
from embodied_ros.memory import SceneMemory
from embodied_ros.memory.object_colour import (
    ColourAccumulator,
    colour_name,
    colour_similarity,
    colour_word,
    object_pixels,
    sample_colour,
    to_lab,
)


def _lab(L: float, chroma: float, hue_deg: float) -> tuple[float, float, float]:
    h = math.radians(hue_deg)
    return L, chroma * math.cos(h), chroma * math.sin(h)


@pytest.mark.parametrize(("lab", "name"), [
    # achromatic: by lightness; light colours tolerate a little more chroma (white under warm light)
    ((80, 0, 0), "white"), ((67, 5, 5), "white"), ((65, 5, 5), "grey"), ((31, 0, 0), "grey"), ((29, 0, 0), "black"),
    (_lab(75, 13.5, 80), "white"), (_lab(60, 13.5, 80), "brown"),
    # hue sectors on both sides of each boundary (chroma 60: vivid)
    (_lab(45, 60, 40), "red"), (_lab(60, 60, 50), "orange"), (_lab(60, 60, 70), "orange"), (_lab(80, 60, 80), "yellow"),
    (_lab(80, 60, 100), "yellow"), (_lab(60, 60, 110), "green"), (_lab(50, 60, 195), "green"),
    (_lab(50, 60, 205), "blue"), (_lab(40, 60, 305), "blue"), (_lab(40, 60, 315), "purple"),
    (_lab(40, 60, 340), "purple"), (_lab(45, 60, 350), "red"),
    # dull orange/yellow is brown (wood), light dull red is pink
    (_lab(66, 25, 72), "brown"), (_lab(70, 16, 30), "pink"), (_lab(30, 35, 28), "red"),
    ((18.8, 26.1, 14.1), "red"),  # redkitchen's red cabinets, as the camera sees them
])
def test_colour_names(lab: tuple[float, float, float], name: str) -> None:
    assert colour_name(lab) == name


def test_srgb_primaries_are_named_as_people_name_them() -> None:
    rgb = {"red": (220, 30, 30), "green": (40, 160, 60), "blue": (30, 60, 200), "yellow": (240, 220, 40),
           "white": (245, 245, 240), "black": (20, 20, 25), "grey": (128, 128, 128), "purple": (110, 40, 140),
           "orange": (245, 140, 20), "pink": (240, 170, 190), "brown": (120, 80, 50)}
    labs = to_lab(np.array(list(rgb.values()), dtype=np.uint8))
    assert [colour_name(lab) for lab in labs] == list(rgb)


def test_colour_words_and_similarity() -> None:
    assert colour_word("gray") == "grey" and colour_word("golden") == "yellow" and colour_word("plastic") is None
    assert colour_similarity("white", "white") == 1.0 and colour_similarity("gray", "grey") == 1.0
    assert colour_similarity("white", "grey") > colour_similarity("white", "red") > 0.0
    assert colour_similarity("red", None) == 0.5  # never seen: neither for nor against


def _square_image(inner: tuple[int, int, int], outer: tuple[int, int, int], size: int = 640) -> np.ndarray:
    image = np.empty((480, size, 3), np.uint8)
    image[:] = outer
    image[200:280, 280:360] = inner
    return image


def test_sample_drops_the_misregistered_border() -> None:
    """The object's depth pixels spill 3 px over its colour edge (registration error): without the
    erosion a quarter of the pixels would be background; the sample keeps the object's colour."""
    image = _square_image((200, 30, 30), (30, 30, 200))
    v, u = np.mgrid[197:283:2, 277:363:2]  # the square grown by 3 px, subsampled every 2 px (as lifting does)
    sample = sample_colour(image, np.stack([u.ravel(), v.ravel()], axis=1))
    assert sample is not None and colour_name(sample.lab) == "red"
    assert sample.weights.sum() == pytest.approx(1.0) and len(sample.bins) == 1  # nothing of the blue border left
    unroded = sample_colour(image, np.stack([u.ravel(), v.ravel()], axis=1), erode_px=0)
    assert unroded is not None and len(unroded.bins) == 2  # the border is there without the erosion
    assert sample_colour(image, np.array([[300, 240]] * 5)) is None  # too few pixels: no sample


def test_accumulator_takes_the_mode_merges_and_round_trips() -> None:
    square = np.argwhere(np.ones((80, 80)))[:, ::-1] + [280, 200]
    white = sample_colour(_square_image((235, 235, 230), (0, 0, 0)), square)
    red = sample_colour(_square_image((200, 20, 20), (0, 0, 0)), square)
    acc = ColourAccumulator()
    assert acc.lab() is None and not acc
    for _ in range(3):
        acc.add(white, 0.9)
    acc.add(red, 0.9)  # one view of a red pattern (or of the wrong object): the mode stays white
    assert colour_name(acc.lab()) == "white"
    other = ColourAccumulator()
    for _ in range(5):
        other.add(red, 0.9)
    acc.merge(other)  # a merged object that was red in more views
    assert colour_name(acc.lab()) == "red"
    back = ColourAccumulator.from_json(json.loads(json.dumps(acc.to_json())))
    assert back.lab() == acc.lab()
    assert ColourAccumulator.from_json(None).lab() is None


def _frame(image: np.ndarray) -> Frame:
    depth = np.full(image.shape[:2], 2.0, np.float32)
    K = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])
    return Frame(image, depth, K, np.eye(4), 0, 0)


def test_memory_keeps_each_objects_colour_across_views_merges_and_saves(tmp_path) -> None:
    """Two objects seen in a frame with their pixels; the colour is on the SceneObject, in memory.json,
    and back after load; without the frame (a perceptor that passes none) nothing is sampled."""
    image = _square_image((200, 30, 30), (240, 240, 240))
    image[300:380, 100:180] = (30, 150, 50)
    v, u = np.mgrid[200:280:3, 280:360:3]
    red_px = np.stack([u.ravel(), v.ravel()], axis=1).astype(np.int32)
    v, u = np.mgrid[300:380:3, 100:180:3]
    green_px = np.stack([u.ravel(), v.ravel()], axis=1).astype(np.int32)
    boxes = np.array([[0, 0, 2, 0.3, 0.3, 0.3, 0, 0, 0], [3, 0, 2, 0.3, 0.3, 0.3, 0, 0, 0]], float)
    # The frame is a flat picture on a plane at one depth: discovery would take the green square for a flat thing
    # lying on it (memory/flat_things.py); this test is about the named objects' colours.
    memory = SceneMemory(min_observations=1, discover_unknown=False)
    for i in range(2):
        det = Detections3D(boxes, [0, 1], [0.9, 0.8], ("cup", "book"), "world", pixels=(red_px, green_px))
        memory.update(FramePerception(i, i, det, frame=_frame(image)))
    names = {o.class_name: o.colour_name for o in memory.objects()}
    assert names == {"cup": "red", "book": "green"}
    memory.save(tmp_path / "memory.json")
    loaded = SceneMemory.load(tmp_path / "memory.json")
    assert {o.class_name: o.colour_name for o in loaded.objects()} == names
    assert loaded.objects() == memory.objects()  # colours to the last bit
    blind = SceneMemory()
    blind.update(FramePerception(0, 0, Detections3D(boxes, [0, 1], [0.9, 0.8], ("cup", "book"), "world")))
    assert all(o.colour_lab is None and o.colour_name is None for o in blind.objects())


def test_object_pixels_without_lifting_pixels_come_from_depth_in_the_box() -> None:
    """The fallback when a perceptor gives no pixels: the box's projection, kept where depth lies in it."""
    depth = np.full((480, 640), 3.0, np.float32)
    depth[200:280, 280:360] = 2.0  # a 0.32 m square at 2 m in front of a wall at 3 m
    K = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])
    box = np.array([0.0, 0.0, 2.05, 0.4, 0.4, 0.3, 0, 0, 0])  # camera frame = world here (identity pose)
    px = object_pixels(depth, K, np.eye(4), box)
    assert len(px) > 100 and px[:, 0].min() >= 280 and px[:, 0].max() < 360 and px[:, 1].min() >= 200
    assert len(object_pixels(depth, K, np.eye(4), box + [0, 0, -5, 0, 0, 0, 0, 0, 0])) == 0  # behind the camera


# Real objects of redkitchen (ground_truth.json ids) and the frame (file number) where each is seen well.
REAL = [(6, 300, "white"), (7, 300, "white"), (37, 250, "red"), (38, 90, "red"), (8, 300, "purple"),
        (17, 460, "purple"), (19, 460, "pink"), (13, 460, "black"), (0, 300, "brown"), (3, 460, "brown")]


@pytest.fixture(scope="module")
def kitchen_frames() -> dict[int, Frame]:
    if not KITCHEN.is_dir():
        pytest.skip(f"real data not found in {KITCHEN}")
    from embodied_ros.recordings import open_source

    wanted = {n for _, n, _ in REAL}
    with open_source(KITCHEN) as source:
        return {n: f for f in source.frames() if not isinstance(f, Exception)
                for n in [int(f.source_name.rsplit("-", 1)[1].split(".")[0])] if n in wanted}


@pytest.mark.parametrize(("gt_id", "number", "name"), REAL)
def test_real_objects_get_their_colour(kitchen_frames: dict[int, Frame], gt_id: int, number: int, name: str) -> None:
    """The white mug, the red cabinets, the purple magazines, ... from their ground-truth boxes' pixels."""
    gt = {o["id"]: o for o in json.loads((KITCHEN / "ground_truth.json").read_text())["objects"]}
    box = np.zeros(9)
    box[:7] = gt[gt_id]["box"]
    frame = kitchen_frames[number]
    sample = sample_colour(frame.color, object_pixels(frame.depth, frame.K, frame.T_world_camera, box))
    assert sample is not None
    assert colour_name(sample.lab) == name, (gt[gt_id]["description"], sample.lab)


def test_merged_objects_pool_their_colours() -> None:
    """A red and a green object; a later detection spans both, so the memory merges them: the survivor
    keeps the views of both (two colours in its histogram), not only its own."""
    image = _square_image((200, 30, 30), (240, 240, 240))
    image[200:280, 360:440] = (30, 150, 50)
    v, u = np.mgrid[200:280:3, 280:360:3]
    red_px = np.stack([u.ravel(), v.ravel()], axis=1).astype(np.int32)
    green_px = red_px + [80, 0]
    a = [0.0, 0.0, 2.0, 0.3, 0.3, 0.3, 0, 0, 0]
    b = [0.32, 0.0, 2.0, 0.3, 0.3, 0.3, 0, 0, 0]
    both = [0.16, 0.0, 2.0, 0.62, 0.3, 0.3, 0, 0, 0]
    memory = SceneMemory(min_observations=1, discover_unknown=False)  # a flat picture: no things on it
    memory.update(FramePerception(0, 0, Detections3D(np.array([a, b]), [0, 0], [0.9, 0.9], ("box",), "world",
                                                     pixels=(red_px, green_px)), frame=_frame(image)))
    assert len(memory) == 2
    result = memory.update(FramePerception(1, 1, Detections3D(np.array([both]), [0], [0.9], ("box",), "world",
                                                              pixels=(red_px,)), frame=_frame(image)))
    assert len(memory) == 1 and result.merged, result
    bins = memory.to_dict()["objects"][0]["colour"]
    hues = {colour_name(np.array(row[4:7]) / row[3]) for row in bins}
    assert {"red", "green"} <= hues, hues


def test_the_mode_is_the_densest_neighbourhood_not_the_fullest_bin() -> None:
    """A white object in shading (its pixels spread over three lightness bins) with a red logo in one
    bin: the logo fills the fullest single bin, the object the densest neighbourhood."""
    image = np.zeros((480, 640, 3), np.uint8)
    image[200:280, 280:310] = (245, 245, 245)  # lit, L* ~97
    image[200:280, 310:340] = (212, 212, 212)  # L* ~85
    image[200:280, 340:370] = (184, 184, 184)  # shade, L* ~75
    image[200:280, 370:420] = (200, 20, 20)  # the logo: 50 of 140 columns, the largest single colour
    v, u = np.mgrid[190:290, 270:430]
    inside = (u >= 280) & (u < 420) & (v >= 200) & (v < 280)
    sample = sample_colour(image, np.stack([u[inside], v[inside]], axis=1), erode_px=0)
    assert sample is not None and sample.weights.max() == pytest.approx(50 / 140, abs=0.02)
    assert colour_name(sample.lab) == "white"
