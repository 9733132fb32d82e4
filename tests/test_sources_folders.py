"""SevenScenesFolder and EmbodiedScanDemoFolder on the real redkitchen frames."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from embodied_ros.errors import FrameError, InputError
from embodied_ros.frame import Frame
from embodied_ros.geometry.transforms import BODY_TO_OPTICAL, gravity_alignment
from embodied_ros.sources.folders import EmbodiedScanDemoFolder, SevenScenesFolder

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"
needs_kitchen = pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")


def _copy_frames(dst: Path, numbers: list[int], gravity: bool = True) -> Path:
    """A small 7-Scenes folder in ``dst`` with some of the redkitchen frames."""
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(KITCHEN / "camera-intrinsics.txt", dst)
    if gravity:
        shutil.copy(KITCHEN / "gravity-direction.txt", dst)
    for n in numbers:
        for kind in ("color.jpg", "depth.png", "pose.txt"):
            shutil.copy(KITCHEN / f"frame-{n:06d}.{kind}", dst)
    return dst


def _rigid(T: np.ndarray) -> np.ndarray:
    """Nearest rigid transform: the text files round R to 7 digits, a quaternion cannot."""
    U, _, Vt = np.linalg.svd(T[:3, :3])
    out = T.copy()
    out[:3, :3] = U @ Vt
    return out


# ---- 7-Scenes ---------------------------------------------------------------------------------


@needs_kitchen
def test_seven_scenes_reads_real_frames_gravity_aligned():
    src = SevenScenesFolder(KITCHEN, registration="none")
    assert len(src) == 100 and src.gravity_aligned
    g = np.loadtxt(KITCHEN / "gravity-direction.txt")
    assert np.allclose(src.T_align[:3, :3] @ g, [0, 0, -1], atol=1e-9)

    frame = src.read(1)
    assert isinstance(frame, Frame)
    assert frame.color.shape == (480, 640, 3) and frame.color.dtype == np.uint8
    assert frame.depth.dtype == np.float32
    raw_depth = cv2.imread(str(KITCHEN / "frame-000010.depth.png"), cv2.IMREAD_UNCHANGED)
    np.testing.assert_allclose(frame.depth, raw_depth / 1000.0, atol=1e-6)
    raw_rgb = cv2.imread(str(KITCHEN / "frame-000010.color.jpg"))[:, :, ::-1]
    assert np.array_equal(frame.color, raw_rgb)
    assert frame.K[0, 0] == 585 and frame.K[1, 2] == 240
    pose = np.loadtxt(KITCHEN / "frame-000010.pose.txt")
    np.testing.assert_allclose(frame.T_world_camera, src.T_align @ pose, atol=1e-12)
    assert frame.stamp_ns == 333_333_333  # frame number 10 at 30 fps
    assert frame.index == 1 and frame.extras["frame_number"] == 10


def _colour_gradient_under_depth_edges(frame: Frame) -> float:
    """Mean colour gradient magnitude where depth jumps: higher when colour and depth line up."""
    d = np.nan_to_num(frame.depth)
    edges = (np.hypot(cv2.Sobel(d, cv2.CV_32F, 1, 0), cv2.Sobel(d, cv2.CV_32F, 0, 1)) > 0.3) & (d > 0)
    edges[:40], edges[-40:], edges[:, :40], edges[:, -40:] = False, False, False, False
    grey = cv2.cvtColor(frame.color, cv2.COLOR_RGB2GRAY).astype(np.float32)
    grad = np.hypot(cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1))
    return float(grad[edges].mean())


@needs_kitchen
def test_seven_scenes_registers_colour_to_depth_by_default():
    raw, registered = SevenScenesFolder(KITCHEN, registration="none"), SevenScenesFolder(KITCHEN)
    indices = range(0, 100, 14)
    before = [_colour_gradient_under_depth_edges(raw.read(i)) for i in indices]
    after = [_colour_gradient_under_depth_edges(registered.read(i)) for i in indices]
    assert np.mean(after) > 1.15 * np.mean(before)  # measured: ~65 vs ~51
    assert sum(a > b for a, b in zip(after, before, strict=True)) >= len(before) - 1
    np.testing.assert_array_equal(registered.read(3).depth, raw.read(3).depth)  # depth untouched


@needs_kitchen
def test_seven_scenes_aligned_world_has_the_handheld_camera_looking_level():
    # A handheld camera's image "down" axis (optical +y) points mostly down in a z-up world.
    frames = [f for f in SevenScenesFolder(KITCHEN).frames(stride=10)]
    assert len(frames) == 10 and all(isinstance(f, Frame) for f in frames)
    assert all(f.T_world_camera[2, 1] < -0.5 for f in frames)


@needs_kitchen
def test_seven_scenes_stride_and_max_frames():
    got = list(SevenScenesFolder(KITCHEN).frames(stride=7, max_frames=3))
    assert [f.index for f in got] == [0, 7, 14]
    assert [f.extras["frame_number"] for f in got] == [0, 70, 140]


@needs_kitchen
def test_seven_scenes_without_gravity_file_says_so_and_is_not_aligned(tmp_path):
    folder = _copy_frames(tmp_path / "seq", [0, 10], gravity=False)
    src = SevenScenesFolder(folder)
    assert not src.gravity_aligned
    assert "gravity-direction.txt" in src.gravity_note  # the run's preflight estimates it and says so
    np.testing.assert_array_equal(src.read(1).T_world_camera, np.loadtxt(folder / "frame-000010.pose.txt"))
    assert not SevenScenesFolder(_copy_frames(tmp_path / "seq2", [0]), gravity_align=False).gravity_aligned


@needs_kitchen
def test_seven_scenes_bad_frames_are_frame_errors(tmp_path):
    folder = _copy_frames(tmp_path / "seq", [0, 10, 20, 30, 40, 50, 60])
    (folder / "frame-000010.depth.png").unlink()  # missing file
    bad = np.loadtxt(folder / "frame-000020.pose.txt")
    bad[0, 3] = np.nan
    np.savetxt(folder / "frame-000020.pose.txt", bad)  # NaN pose
    sheared = np.loadtxt(folder / "frame-000030.pose.txt")
    sheared[:3, :3] *= 1.5
    np.savetxt(folder / "frame-000030.pose.txt", sheared)  # not rigid
    small = cv2.imread(str(folder / "frame-000040.depth.png"), cv2.IMREAD_UNCHANGED)[::2, ::2]
    cv2.imwrite(str(folder / "frame-000040.depth.png"), small)  # depth 320x240, colour 640x480
    (folder / "frame-000050.color.jpg").write_bytes(b"not a jpeg at all")  # unreadable

    out = list(SevenScenesFolder(folder).frames())
    assert len(out) == 7
    assert isinstance(out[0], Frame) and isinstance(out[6], Frame)
    assert all(isinstance(e, FrameError) for e in out[1:6])
    assert "frame-000010.depth.png" in str(out[1])
    assert "NaN" in str(out[2]) and "frame-000020" in str(out[2])
    assert "not rigid" in str(out[3])
    assert "frame-000040.depth.png" in str(out[4]) and "320x240" in str(out[4])
    assert "frame-000050.color.jpg" in str(out[5])
    assert all("\n" not in str(e) for e in out[1:6])


def test_seven_scenes_whole_input_problems_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        SevenScenesFolder(tmp_path / "nowhere")
    with pytest.raises(InputError, match="camera-intrinsics.txt"):
        SevenScenesFolder(tmp_path)
    np.savetxt(tmp_path / "camera-intrinsics.txt", np.diag([500.0, 500.0, 1.0]))
    with pytest.raises(InputError, match="no frame"):
        SevenScenesFolder(tmp_path)
    np.savetxt(tmp_path / "camera-intrinsics.txt", np.eye(4))
    with pytest.raises(InputError, match="3x3"):
        SevenScenesFolder(tmp_path)


# ---- EmbodiedScan demo ------------------------------------------------------------------------

STAMPS = ["1700000000.000000", "1700000000.333333", "1700000000.666667", "1700000001.000000", "1700000001.5"]
NUMBERS = [0, 10, 20, 30, 40]


def _write_demo(dst: Path, align: np.ndarray | None, pose_tokens: list[str] | None = None) -> dict[str, np.ndarray]:
    """An EmbodiedScan demo folder made of redkitchen frames; returns {timestamp: T_camera (orig world)}."""
    (dst / "rgb").mkdir(parents=True)
    (dst / "depth").mkdir()
    K4 = np.eye(4)
    K4[:3, :3] = np.loadtxt(KITCHEN / "camera-intrinsics.txt")
    np.savetxt(dst / "intrinsic.txt", K4)
    if align is not None:
        np.savetxt(dst / "axis_align_matrix.txt", align)
    lines = ["# timestamp x y z qx qy qz qw"]
    truth = {}
    for n, stamp, token in zip(NUMBERS, STAMPS, pose_tokens or STAMPS, strict=True):
        shutil.copy(KITCHEN / f"frame-{n:06d}.color.jpg", dst / "rgb" / f"{stamp}.jpg")
        shutil.copy(KITCHEN / f"frame-{n:06d}.depth.png", dst / "depth" / f"{stamp}.png")
        T = _rigid(np.loadtxt(KITCHEN / f"frame-{n:06d}.pose.txt"))
        truth[stamp] = T
        # invert the demo's body -> optical convention: R_cam = R_body @ B, so R_body = R_cam @ B^T
        qx, qy, qz, qw = Rotation.from_matrix(T[:3, :3] @ BODY_TO_OPTICAL.T).as_quat()
        x, y, z = T[:3, 3]
        lines.append(" ".join([token] + [repr(float(v)) for v in (x, y, z, qx, qy, qz, qw)]))
    (dst / "poses.txt").write_text("\n".join(lines) + "\n")
    return truth


def test_demo_body_convention_known_answer(tmp_path):
    # identity body pose: camera looks along body x (forward), image right is body -y, image down body -z
    (tmp_path / "rgb").mkdir()
    (tmp_path / "depth").mkdir()
    cv2.imwrite(str(tmp_path / "rgb" / "5.0.jpg"), np.full((4, 6, 3), 128, np.uint8))
    cv2.imwrite(str(tmp_path / "depth" / "5.0.png"), np.full((4, 6), 1500, np.uint16))
    np.savetxt(tmp_path / "intrinsic.txt", np.diag([10.0, 10.0, 1.0, 1.0]))
    (tmp_path / "poses.txt").write_text("header\n5.0 1 2 3 0 0 0 1\n")
    frame = EmbodiedScanDemoFolder(tmp_path).read(0)
    R = frame.T_world_camera[:3, :3]
    np.testing.assert_allclose(R[:, 2], [1, 0, 0], atol=1e-12)  # optical z = forward
    np.testing.assert_allclose(R[:, 0], [0, -1, 0], atol=1e-12)  # optical x = right
    np.testing.assert_allclose(R[:, 1], [0, 0, -1], atol=1e-12)  # optical y = down
    np.testing.assert_allclose(frame.T_world_camera[:3, 3], [1, 2, 3])
    assert frame.stamp_ns == 5_000_000_000 and frame.depth[0, 0] == np.float32(1.5)


@needs_kitchen
def test_demo_folder_round_trips_real_poses(tmp_path):
    align = gravity_alignment(np.loadtxt(KITCHEN / "gravity-direction.txt"))
    align[:3, 3] = [0.5, -1.0, 2.0]
    # line 4 is written with extra trailing zeros: it must still find rgb/1700000001.5.jpg
    tokens = STAMPS[:4] + ["1700000001.500"]
    truth = _write_demo(tmp_path / "demo", align, tokens)
    src = EmbodiedScanDemoFolder(tmp_path / "demo")
    assert len(src) == 5 and src.gravity_aligned
    out = list(src.frames())
    assert all(isinstance(f, Frame) for f in out)
    for frame, stamp, n in zip(out, STAMPS, NUMBERS, strict=True):
        np.testing.assert_allclose(frame.T_world_camera, align @ truth[stamp], atol=1e-6)
        raw_rgb = cv2.imread(str(KITCHEN / f"frame-{n:06d}.color.jpg"))[:, :, ::-1]
        assert np.array_equal(frame.color, raw_rgb)
        raw_depth = cv2.imread(str(KITCHEN / f"frame-{n:06d}.depth.png"), cv2.IMREAD_UNCHANGED)
        np.testing.assert_allclose(frame.depth, raw_depth / 1000.0, atol=1e-6)
        assert frame.K[0, 0] == 585
    assert [f.stamp_ns for f in out] == [
        1_700_000_000_000_000_000, 1_700_000_000_333_333_000, 1_700_000_000_666_667_000,
        1_700_000_001_000_000_000, 1_700_000_001_500_000_000,
    ]


@needs_kitchen
def test_demo_folder_without_axis_align_says_so(tmp_path):
    truth = _write_demo(tmp_path / "demo", None)
    src = EmbodiedScanDemoFolder(tmp_path / "demo")
    assert not src.gravity_aligned and "axis_align_matrix.txt" in src.gravity_note
    np.testing.assert_allclose(src.read(2).T_world_camera, truth[STAMPS[2]], atol=1e-6)


@needs_kitchen
def test_demo_folder_bad_frames_are_frame_errors(tmp_path):
    _write_demo(tmp_path / "demo", None)
    poses = (tmp_path / "demo" / "poses.txt").read_text().splitlines()
    poses[2] = poses[2].rsplit(" ", 1)[0]  # 7 numbers instead of 8
    poses[3] = poses[3].replace(poses[3].split()[1], "nan", 1)
    (tmp_path / "demo" / "poses.txt").write_text("\n".join(poses) + "\n")
    (tmp_path / "demo" / "rgb" / f"{STAMPS[3]}.jpg").unlink()
    out = list(EmbodiedScanDemoFolder(tmp_path / "demo").frames())
    assert [type(f).__name__ for f in out] == ["Frame", "FrameError", "FrameError", "FrameError", "Frame"]
    assert "poses.txt line 3" in str(out[1]) and "found 7 fields" in str(out[1])
    assert "NaN" in str(out[2])
    assert f"rgb/{STAMPS[3]}.jpg" in str(out[3])


def test_demo_folder_whole_input_problems_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        EmbodiedScanDemoFolder(tmp_path / "nowhere")
    with pytest.raises(InputError, match="poses.txt"):
        EmbodiedScanDemoFolder(tmp_path)
    (tmp_path / "poses.txt").write_text("timestamp x y z qx qy qz qw\n")
    with pytest.raises(InputError, match="no pose lines"):
        EmbodiedScanDemoFolder(tmp_path)
    (tmp_path / "poses.txt").write_text("header\n1.0 0 0 0 0 0 0 1\n")
    with pytest.raises(InputError, match="intrinsic.txt"):
        EmbodiedScanDemoFolder(tmp_path)
    np.savetxt(tmp_path / "intrinsic.txt", np.eye(4))
    (tmp_path / "axis_align_matrix.txt").write_text("1 2 3\n")
    with pytest.raises(InputError, match="axis_align_matrix.txt"):
        EmbodiedScanDemoFolder(tmp_path)
