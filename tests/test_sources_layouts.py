"""The common RGB-D layouts, each detected from its files and read from real redkitchen frames rewritten into it."""

from __future__ import annotations

import numpy as np
import pytest
from layouts import KITCHEN, K, color, depth_mm, image_folder, rigid_pose, scannet, threedmatch_scene, tum

from embodied_ros.errors import FrameError, InputError
from embodied_ros.frame import Frame
from embodied_ros.recordings import open_source
from embodied_ros.sources import RecordingOptions
from embodied_ros.sources.image_folder import ImageFolder
from embodied_ros.sources.registration import SEVEN_SCENES_DEFAULT, Registration
from embodied_ros.sources.scannet import ScanNetExport
from embodied_ros.sources.threedmatch import ThreeDMatchScene
from embodied_ros.sources.trajectory import read_trajectory
from embodied_ros.sources.tum import TUM_INTRINSICS, TumFolder, associate

pytestmark = pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")
NUMBERS = [0, 10, 20, 30, 40]


def _rgb(n: int) -> np.ndarray:
    return color(n)[:, :, ::-1]


def _assert_frame_is(frame: Frame, n: int, exact_color: bool = True) -> None:
    """The frame holds redkitchen frame n: depth to the millimetre, the recorded pose, the colour."""
    valid = depth_mm(n) > 0
    assert np.array_equal(frame.valid_depth(), valid)
    assert np.abs(frame.depth[valid] - depth_mm(n)[valid] / 1000.0).max() < 1e-4
    np.testing.assert_allclose(frame.T_world_camera, rigid_pose(n), atol=1e-6)
    if exact_color:
        assert np.array_equal(frame.color, _rgb(n))


def test_threedmatch_scene_reads_every_sequence_with_the_scene_intrinsics(tmp_path):
    scene = threedmatch_scene(tmp_path / "7-scenes-redkitchen", {"seq-01": [0, 10, 20], "seq-02": [500, 510]})
    src = open_source(scene, RecordingOptions(registration=Registration.NONE))
    assert isinstance(src, ThreeDMatchScene) and len(src) == 5
    frames = list(src.frames())
    assert [f.extras["sequence"] for f in frames] == ["seq-01"] * 3 + ["seq-02"] * 2
    for frame, n in zip(frames, [0, 10, 20, 500, 510], strict=True):
        _assert_frame_is(frame, n)
    stamps = [f.stamp_ns for f in frames]
    assert stamps == sorted(stamps) and stamps[3] - stamps[2] == 1_000_000_000  # seq-02: 1 s after seq-01
    np.testing.assert_array_equal(frames[0].K, K())
    # one sequence: its own folder, the intrinsics one folder up (the tester's refused case)
    one = open_source(scene / "seq-02", RecordingOptions(registration=Registration.NONE))
    assert len(one) == 2
    _assert_frame_is(one.read(1), 510)
    # 7-Scenes intrinsics: the Kinect v1 colour correction by default, as for the 7-Scenes folder
    assert open_source(scene).registration is SEVEN_SCENES_DEFAULT


def test_threedmatch_scene_without_intrinsics_says_where_it_looked(tmp_path):
    scene = threedmatch_scene(tmp_path / "scene", {"seq-01": [0]})
    (scene / "camera-intrinsics.txt").unlink()
    with pytest.raises(InputError, match="no camera-intrinsics.txt in it or in its parent folder"):
        open_source(scene)


def test_tum_sequence_associates_colour_depth_and_poses_by_time(tmp_path):
    folder = tum(tmp_path / "tum", NUMBERS)
    src = open_source(folder, RecordingOptions(intrinsics=(585.0, 585.0, 320.0, 240.0)))
    assert isinstance(src, TumFolder) and len(src) == 5
    for i, n in enumerate(NUMBERS):
        frame = src.read(i)
        _assert_frame_is(frame, n)  # depth 5000 per metre, quaternion poses, depth 12 ms after colour
        assert frame.stamp_ns == int(round((1305031102.175304 + n / 30) * 1e9 / 1000)) * 1000
    np.testing.assert_array_equal(src.read(0).K, K())
    assert src.registration is Registration.NONE


def test_tum_intrinsics_follow_the_sequence_name_and_the_depth_factor_matters(tmp_path):
    folder = tum(tmp_path / "rgbd_dataset_freiburg1_desk", NUMBERS[:2])
    src = TumFolder(folder)
    fx, fy, cx, cy = TUM_INTRINSICS["freiburg1"]
    np.testing.assert_allclose(src.read(0).K, [[fx, 0, cx], [0, fy, cy], [0, 0, 1]])
    assert "freiburg1" in src.intrinsics_note
    wrong = TumFolder(folder, depth_factor=1000.0).read(0)  # millimetres assumed: everything 5x too far
    valid = depth_mm(0) > 0
    np.testing.assert_allclose(wrong.depth[valid], 5 * depth_mm(0)[valid] / 1000.0, rtol=1e-6)


def test_tum_frames_without_depth_or_pose_are_frame_errors(tmp_path):
    folder = tum(tmp_path / "tum", NUMBERS)
    gt = (folder / "groundtruth.txt").read_text().splitlines()
    # no pose near frame 0 (before the first sample) nor frame 2 (in a 0.66 s gap: not interpolated)
    (folder / "groundtruth.txt").write_text("\n".join(gt[:1] + gt[3:5] + gt[7:]) + "\n")
    depth = (folder / "depth.txt").read_text().splitlines()
    (folder / "depth.txt").write_text("\n".join(depth[:2] + depth[3:]) + "\n")  # no depth for frame 1
    out = list(TumFolder(folder).frames())
    assert [type(f) for f in out] == [FrameError, FrameError, FrameError, Frame, Frame]
    assert "no pose within 20 ms in groundtruth.txt" in str(out[0]) and "no pose within 20 ms" in str(out[2])
    assert "no depth image within 20 ms" in str(out[1]) and "rgb/" in str(out[1])


def test_trajectory_interpolates_between_close_samples(tmp_path):
    path = tmp_path / "groundtruth.txt"
    # 50 ms apart: 0 -> 1 m along x, 0 -> 90 deg about z (quaternion x y z w)
    half = 0.5 ** 0.5
    path.write_text(f"# t tx ty tz qx qy qz qw\n10.00 0 0 0 0 0 0 1\n10.05 1 0 0 0 0 {half} {half}\n")
    track = read_trajectory(path)
    between = track.pose_at(10_010_000_000, "frame")  # a fifth of the way
    np.testing.assert_allclose(between[:3, 3], [0.2, 0, 0], atol=1e-12)
    np.testing.assert_allclose(between[:2, 0], [np.cos(np.pi / 10), np.sin(np.pi / 10)], atol=1e-9)
    np.testing.assert_allclose(track.pose_at(10_062_000_000, "frame")[:3, 3], [1, 0, 0])  # nearest, 12 ms out
    with pytest.raises(FrameError, match="frame: no pose within 20 ms in groundtruth.txt"):
        track.pose_at(10_080_000_000, "frame")


def test_scannet_export_reprojects_the_big_colour_image_onto_depth(tmp_path):
    folder = scannet(tmp_path / "scene0000_00", NUMBERS[:3])
    src = open_source(folder)
    assert isinstance(src, ScanNetExport) and src.registration is Registration.CALIBRATED
    for i, n in enumerate(NUMBERS[:3]):
        frame = src.read(i)
        assert frame.color.shape == (480, 640, 3)
        _assert_frame_is(frame, n, exact_color=False)
        # the 1296x972 colour camera reprojected through the depth gives back the 640x480 image
        diff = np.abs(frame.color.astype(int) - _rgb(n))[8:-8, 8:-8]
        assert diff.mean() < 4, diff.mean()
    resized = ScanNetExport(folder, registration="none").read(0)  # the usual shortcut: resize
    assert resized.color.shape == (480, 640, 3) and np.abs(resized.color.astype(int) - _rgb(0)).mean() < 4


def test_scannet_invalid_pose_is_a_skipped_frame(tmp_path):
    folder = scannet(tmp_path / "scan", NUMBERS[:2])
    (folder / "pose" / "1.txt").write_text("-inf -inf -inf -inf\n" * 4)  # tracking lost, as ScanNet writes it
    out = list(ScanNetExport(folder).frames())
    assert isinstance(out[0], Frame) and isinstance(out[1], FrameError) and "NaN or inf" in str(out[1])


@pytest.mark.parametrize("trajectory", ["matrices", "tum"])
def test_image_folder_with_a_trajectory(tmp_path, trajectory):
    folder = image_folder(tmp_path / "scan", NUMBERS, trajectory)
    with pytest.raises(InputError, match="--intrinsics FX FY CX CY"):
        open_source(folder)
    src = open_source(folder, RecordingOptions(intrinsics=(585.0, 585.0, 320.0, 240.0)))
    assert isinstance(src, ImageFolder) and len(src) == 5
    for i, n in enumerate(NUMBERS):
        _assert_frame_is(src.read(i), n)
    assert ("TUM lines" if trajectory == "tum" else "4x4") in src.details


def test_image_folder_trajectory_that_does_not_fit_is_an_input_error(tmp_path):
    folder = image_folder(tmp_path / "scan", NUMBERS, "matrices")
    lines = (folder / "trajectory.txt").read_text().splitlines()
    (folder / "trajectory.txt").write_text("\n".join(lines[:-4]) + "\n")  # 4 poses for 5 images
    with pytest.raises(InputError, match="4 poses in trajectory.txt for 5 images"):
        ImageFolder(folder, intrinsics=(585.0, 585.0, 320.0, 240.0))


def test_trajectory_formats(tmp_path):
    T = rigid_pose(40)
    for text, form in [
        ("\n".join(" ".join(repr(float(v)) for v in row) for row in T), "4x4"),
        ("\n".join(" ".join(repr(float(v)) for v in row) for row in T[:3]), "3x4"),
        (" ".join(repr(float(v)) for v in T[:3].reshape(-1)), "3x4 matrix per line"),
    ]:
        path = tmp_path / "t.txt"
        path.write_text(text + "\n")
        got = read_trajectory(path)
        assert form in got.form and got.stamps_ns is None
        np.testing.assert_allclose(got.poses[0], T, atol=1e-12)
    (tmp_path / "bad.txt").write_text("1 2 3 4 5\n")
    with pytest.raises(InputError, match="line 1: 5 numbers"):
        read_trajectory(tmp_path / "bad.txt")


def test_association_takes_the_closest_pairs_first():
    # colour at 0 and 5 ms, one depth image at 4 ms: it belongs to the 5 ms colour image
    assert associate(np.array([0, 5_000_000]), np.array([4_000_000]), 20_000_000) == {1: 0}
    assert associate(np.array([0, 100_000_000]), np.array([30_000_000]), 20_000_000) == {}  # beyond 20 ms
