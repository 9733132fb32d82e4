"""Before a run: poses in the wrong convention or unit are caught, gravity is estimated when not given."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from layouts import KITCHEN, image_folder, inverted, millimetres, rigid_pose, seven_scenes, tum

from embodied_ros.geometry.transforms import gravity_alignment
from embodied_ros.recordings import open_source
from embodied_ros.sources import RecordingOptions
from embodied_ros.sources.folders import SevenScenesFolder
from embodied_ros.sources.gravity import estimate_gravity
from embodied_ros.sources.pose_check import PoseConvention, PoseUnits, check_poses
from embodied_ros.sources.preflight import prepare, sample_frames

pytestmark = pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")
NUMBERS = list(range(0, 200, 10))  # the first 20 redkitchen frames (every 10th of the recording)
INTRINSICS = (585.0, 585.0, 320.0, 240.0)


def _angle_deg(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.degrees(np.arccos(np.clip(a @ b / np.linalg.norm(a) / np.linalg.norm(b), -1, 1))))


def _file_gravity() -> np.ndarray:
    return np.loadtxt(KITCHEN / "gravity-direction.txt")


WRITERS = {
    "7-scenes": lambda dst, edit: seven_scenes(dst, NUMBERS, pose_edit=edit),
    "tum": lambda dst, edit: tum(dst, NUMBERS, pose_edit=edit),
    "image-folder": lambda dst, edit: image_folder(dst, NUMBERS, pose_edit=edit),
}


def test_recorded_poses_fit_their_depth():
    check = check_poses(sample_frames(SevenScenesFolder(KITCHEN)))
    assert check.fits and check.mismatch is None and check.moving
    assert check.agreement["as given"] > 0.35 > check.agreement["inverted"]  # measured: 46 % vs 14 %
    assert "the poses fit" in check.summary()


@pytest.mark.parametrize("layout", list(WRITERS))
@pytest.mark.parametrize(("edit", "found", "fix"), [
    (inverted, "inverted", dict(pose_convention=PoseConvention.WORLD_TO_CAMERA)),
    (millimetres, "millimetres", dict(pose_units=PoseUnits.MILLIMETRES)),
])
def test_wrong_pose_convention_stops_with_the_option_that_fixes_it(tmp_path, layout, edit, found, fix):
    folder = WRITERS[layout](tmp_path / layout, edit)
    options = RecordingOptions(intrinsics=INTRINSICS)
    result = prepare(open_source(folder, options), options)
    assert result.pose_check.mismatch == found
    option = "--pose-convention world-to-camera" if found == "inverted" else "--pose-units mm"
    assert result.problem is not None and option in result.problem and "\n" not in result.problem
    # with the option the poses are the recorded ones again (up to the world's gravity rotation)
    fixed_options = RecordingOptions(intrinsics=INTRINSICS, gravity=tuple(_file_gravity()), **fix)
    fixed = prepare(open_source(folder, fixed_options), fixed_options)
    assert fixed.problem is None and fixed.pose_check.fits
    R = gravity_alignment(_file_gravity())  # --gravity is given in the recording's world
    for i, n in [(0, 0), (7, 70), (19, 190)]:
        np.testing.assert_allclose(fixed.source.read(i).T_world_camera, R @ rigid_pose(n), atol=1e-5)


def test_pose_check_off_runs_the_poses_as_they_are(tmp_path):
    folder = seven_scenes(tmp_path / "inv", NUMBERS, pose_edit=inverted)
    options = RecordingOptions(pose_check=False)
    result = prepare(open_source(folder), options)
    assert result.problem is None and result.pose_check.mismatch == "inverted"


def test_gravity_estimated_from_the_floor_and_tables_without_a_gravity_file(tmp_path):
    folder = seven_scenes(tmp_path / "seq", NUMBERS, gravity=False)
    source = open_source(folder)
    assert not source.gravity_aligned
    result = prepare(source, RecordingOptions())
    assert result.estimate.method == "horizontal surfaces" and result.estimate.sure
    # the hand-made gravity file and the floor/table planes differ by 1.5-1.8 deg (data README)
    assert _angle_deg(result.estimate.down, _file_gravity()) < 3.0
    line = result.gravity
    assert "gravity-direction.txt" in line and "estimated from the upward-facing surfaces" in line and "sure" in line
    frames = list(result.source.frames(stride=4))
    assert result.source.gravity_aligned and all(f.T_world_camera[2, 1] < -0.5 for f in frames)  # cameras level
    up = gravity_alignment(result.estimate.down)[:3, :3]
    np.testing.assert_allclose(frames[1].T_world_camera[:3, :3], up @ rigid_pose(40)[:3, :3], atol=1e-9)


def test_gravity_falls_back_to_the_cameras_down_when_no_floor_is_seen():
    frames = [dataclasses.replace(f, depth=np.full_like(f.depth, 2.0))  # only a wall facing the camera
              for f in sample_frames(SevenScenesFolder(KITCHEN, gravity_align=False))]
    estimate = estimate_gravity(frames)
    assert estimate.method == "camera down" and not estimate.sure and "unsure" in estimate.summary()
    mean_down = np.mean([f.T_world_camera[:3, 1] for f in frames], axis=0)
    assert _angle_deg(estimate.down, mean_down) < 1e-6
    # 27 deg off here: the camera looks down at the table most of the time, hence "unsure"
    assert _angle_deg(estimate.down, _file_gravity()) < 30


def test_gravity_given_or_turned_off(tmp_path):
    folder = seven_scenes(tmp_path / "seq", NUMBERS[:5], gravity=False)
    given = prepare(open_source(folder), RecordingOptions(gravity=(0.0, 1.0, 0.0)))
    assert given.gravity.startswith("given (--gravity 0,1,0)")
    np.testing.assert_allclose(given.source.world[:3, :3] @ [0, 1, 0], [0, 0, -1], atol=1e-12)
    off = prepare(open_source(folder), RecordingOptions(estimate_gravity=False))
    assert "not known to be z-up" in off.gravity and not off.source.gravity_aligned
    np.testing.assert_allclose(off.source.read(2).T_world_camera, rigid_pose(20), atol=1e-6)
