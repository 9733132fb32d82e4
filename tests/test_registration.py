"""Colour/depth registration is the recording's: 7-Scenes gets its Kinect v1 correction, others are left alone."""

from __future__ import annotations

import numpy as np
import pytest
from layouts import KITCHEN, color, image_folder, seven_scenes, tum

from embodied_ros.errors import InputError
from embodied_ros.recordings import open_source
from embodied_ros.sources import RecordingOptions
from embodied_ros.sources.folders import SevenScenesFolder
from embodied_ros.sources.registration import (
    SEVEN_SCENES_DEFAULT,
    Registration,
    edge_alignment_score,
    register_color,
    resolve_registration,
)

needs_kitchen = pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")
INDICES = range(0, 100, 14)


def test_auto_resolves_per_recording():
    assert resolve_registration("auto", "r", seven_scenes=True)[0] is SEVEN_SCENES_DEFAULT
    assert resolve_registration("auto", "r", calibrated=True)[0] is Registration.CALIBRATED
    assert resolve_registration("auto", "r")[0] is Registration.NONE
    assert resolve_registration("7scenes-kinect", "r")[0] is Registration.SEVEN_SCENES_KINECT  # asked: always
    with pytest.raises(InputError, match="r: --registration calibrated needs a colour calibration"):
        resolve_registration("calibrated", "r")
    with pytest.raises(ValueError):
        register_color(Registration.CALIBRATED, np.zeros((4, 4, 3), np.uint8), np.ones((4, 4), np.float32),
                       np.eye(3))


@needs_kitchen
def test_both_7scenes_models_put_colour_edges_on_depth_edges():
    raw = SevenScenesFolder(KITCHEN, registration="none")
    scores = {m: [] for m in ("none", "7scenes-affine", "7scenes-kinect")}
    for i in INDICES:
        frame = raw.read(i)
        for model in scores:
            registered = register_color(Registration(model), frame.color, frame.depth, frame.K)
            scores[model].append(edge_alignment_score(registered, frame.depth))
    mean = {m: float(np.mean(s)) for m, s in scores.items()}
    # measured on these 8 frames: none ~50, affine ~64, kinect ~80 (bench_registration: 100 frames)
    assert mean["7scenes-affine"] > 1.15 * mean["none"] and mean["7scenes-kinect"] > 1.15 * mean["7scenes-affine"]
    assert all(k > a for k, a in zip(scores["7scenes-kinect"], scores["7scenes-affine"], strict=True))


@needs_kitchen
def test_7scenes_folder_gets_its_correction_by_default_and_a_switch(tmp_path):
    default = SevenScenesFolder(KITCHEN)
    assert default.registration is SEVEN_SCENES_DEFAULT and "7-Scenes" in default.registration_note
    frame = SevenScenesFolder(KITCHEN, registration="none").read(2)
    assert np.array_equal(frame.color, color(20)[:, :, ::-1])
    kinect = open_source(KITCHEN, RecordingOptions(registration=Registration.SEVEN_SCENES_KINECT)).read(2)
    expected = register_color(Registration.SEVEN_SCENES_KINECT, frame.color, frame.depth, frame.K)
    assert np.array_equal(kinect.color, expected) and not np.array_equal(kinect.color, frame.color)
    np.testing.assert_array_equal(kinect.depth, frame.depth)  # depth untouched
    with pytest.raises(InputError, match="calibrated"):
        SevenScenesFolder(KITCHEN, registration="calibrated")


@needs_kitchen
def test_registered_data_in_the_7scenes_layout_is_not_zoomed(tmp_path):
    # The tester's case: a user's own, registered recording in this layout (not a 7-Scenes camera).
    folder = seven_scenes(tmp_path / "mine", [0, 10])
    (folder / "camera-intrinsics.txt").write_text("570.3422 0 320\n0 570.3422 240\n0 0 1\n")  # SUN3D's Xtion
    src = open_source(folder)
    assert src.registration is Registration.NONE and "registered" in src.registration_note
    assert np.array_equal(src.read(1).color, color(10)[:, :, ::-1])
    asked = open_source(folder, RecordingOptions(registration=Registration.SEVEN_SCENES_AFFINE)).read(1)
    assert not np.array_equal(asked.color, color(10)[:, :, ::-1])


@needs_kitchen
@pytest.mark.parametrize("layout", ["tum", "image_folder"])
def test_other_layouts_are_registered_unless_asked(tmp_path, layout):
    write = {"tum": tum, "image_folder": image_folder}[layout]
    folder = write(tmp_path / layout, [0, 10])
    intrinsics = RecordingOptions(intrinsics=(585.0, 585.0, 320.0, 240.0))
    plain = open_source(folder, intrinsics).read(1)
    assert np.array_equal(plain.color, color(10)[:, :, ::-1])
    asked = open_source(folder, RecordingOptions(intrinsics=(585.0, 585.0, 320.0, 240.0),
                                                 registration=Registration.SEVEN_SCENES_AFFINE)).read(1)
    assert np.array_equal(asked.color, SevenScenesFolder(KITCHEN, registration="7scenes-affine").read(1).color)
