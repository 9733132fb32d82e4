"""RosbagSource on rosbag2 recordings (sqlite3 and MCAP) written with rosbags from real frames."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest
from bagtools import T_, BagBuilder, BagFrame, header, pose, record_frames
from scipy.spatial.transform import Rotation

from embodied_ros.errors import FrameError, InputError
from embodied_ros.frame import Frame
from embodied_ros.sources.rosbag_source import RosbagSource

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"
needs_kitchen = pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"real data folder {KITCHEN} is absent")

T0 = 1_700_000_000_000_000_000
PERIOD = 33_333_333


def _rigid(T: np.ndarray) -> np.ndarray:
    """Nearest rigid transform (the 7-Scenes text poses are rounded; a quaternion is exactly rigid)."""
    U, _, Vt = np.linalg.svd(T[:3, :3])
    out = T.copy()
    out[:3, :3] = U @ Vt
    return out


@pytest.fixture(scope="module")
def kitchen_frames() -> list[BagFrame]:
    """Five real redkitchen frames (colour, depth in metres, K, rigid pose), 30 fps stamps."""
    if not KITCHEN.is_dir():
        pytest.skip(f"real data folder {KITCHEN} is absent")
    K = np.loadtxt(KITCHEN / "camera-intrinsics.txt")
    frames = []
    for i, n in enumerate([0, 20, 40, 60, 80]):
        rgb = cv2.imread(str(KITCHEN / f"frame-{n:06d}.color.jpg"))[:, :, ::-1].copy()
        depth = cv2.imread(str(KITCHEN / f"frame-{n:06d}.depth.png"), cv2.IMREAD_UNCHANGED) / 1000.0
        T = _rigid(np.loadtxt(KITCHEN / f"frame-{n:06d}.pose.txt"))
        frames.append(BagFrame(rgb, depth, K, T, T0 + i * PERIOD))
    return frames


def _tiny_frames(n: int = 3) -> list[BagFrame]:
    """Small synthetic frames for the error cases (fast to write)."""
    rng = np.random.default_rng(3)
    K = np.array([[20.0, 0, 4], [0, 20.0, 3], [0, 0, 1]])
    return [
        BagFrame(rng.integers(0, 256, (6, 8, 3), dtype=np.uint8), np.full((6, 8), 1.5), K,
                 np.eye(4), T0 + i * PERIOD)
        for i in range(n)
    ]


def _check_equal(got: list, frames: list[BagFrame], exact_color: bool = True) -> None:
    assert len(got) == len(frames)
    for i, (frame, ref) in enumerate(zip(got, frames, strict=True)):
        assert isinstance(frame, Frame), str(frame)
        assert frame.index == i and frame.stamp_ns == ref.stamp_ns
        if exact_color:
            assert np.array_equal(frame.color, ref.rgb)
        else:
            assert np.abs(frame.color.astype(int) - ref.rgb).mean() < 3
        valid = ref.depth_m > 0
        assert np.array_equal(frame.valid_depth(), valid)
        assert np.abs(frame.depth[valid] - ref.depth_m[valid]).max() <= 0.001
        np.testing.assert_allclose(frame.T_world_camera, ref.T_world_camera, atol=1e-6)
        np.testing.assert_array_equal(frame.K, ref.K)
        assert frame.world_frame == "map" and frame.camera_frame == "rgb_camera_link"


VARIANTS = {
    # name: (record_frames keyword arguments, RosbagSource keyword arguments)
    "rgb8-16UC1-tf": (dict(color="rgb8"), {}),
    "bgra8-16UC1-tf-namespaced": (dict(color="bgra8", ns="/k4a"), {}),
    "bgr8-32FC1-posestamped": (dict(color="bgr8", depth="32FC1", pose_mode="pose"), dict(pose_topic="camera_pose")),
    "rgba8-bigendian16-odometry": (
        dict(color="rgba8", depth_bigendian=True, pose_mode="odom"), dict(pose_topic="odom")
    ),
    "png-compressed-16UC1-tf": (dict(color="png"), dict(color_topic="rgb/image_raw/compressed")),
}


@needs_kitchen
@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_real_frames_round_trip(tmp_path, kitchen_frames, storage, variant):
    record_args, source_args = VARIANTS[variant]
    path = record_frames(kitchen_frames, **record_args).write(tmp_path / "bag", storage)
    with RosbagSource(path, **source_args) as src:
        assert len(src) == 5 and src.gravity_aligned
        _check_equal(list(src.frames()), kitchen_frames)


@needs_kitchen
def test_jpeg_compressed_colour(tmp_path, kitchen_frames):
    path = record_frames(kitchen_frames[:2], color="jpeg").write(tmp_path / "bag", "mcap")
    with RosbagSource(path, color_topic="/rgb/image_raw/compressed") as src:
        _check_equal(list(src.frames()), kitchen_frames[:2], exact_color=False)


@needs_kitchen
def test_stride_and_max_frames(tmp_path, kitchen_frames):
    path = record_frames(kitchen_frames).write(tmp_path / "bag", "mcap")
    with RosbagSource(path) as src:
        assert [f.index for f in src.frames(stride=2)] == [0, 2, 4]
        assert [f.index for f in src.frames(stride=3, max_frames=1)] == [0]
        assert [f.stamp_ns for f in src.frames(max_frames=2)] == [T0, T0 + PERIOD]


def test_pose_topic_is_interpolated_between_samples(tmp_path):
    # Pose samples 10 ms either side of each image, symmetric about the true pose: linear
    # interpolation + slerp must give the true pose back at the image stamp.
    frames = _tiny_frames(2)
    truth = [np.eye(4), np.eye(4)]
    truth[0][:3, :3] = Rotation.from_euler("xyz", [0.3, -0.2, 1.0]).as_matrix()
    truth[0][:3, 3] = [1.0, 2.0, 0.5]
    truth[1][:3, :3] = Rotation.from_euler("xyz", [-0.1, 0.4, 2.5]).as_matrix()
    truth[1][:3, 3] = [-1.0, 0.0, 1.5]
    posed = [BagFrame(f.rgb, f.depth_m, f.K, T, f.stamp_ns) for f, T in zip(frames, truth, strict=True)]
    bag = record_frames(posed, pose_mode="none")
    twist = Rotation.from_rotvec([0.05, -0.02, 0.08]).as_matrix()
    for f, T in zip(frames, truth, strict=True):
        for sign in (-1, 1):
            sample = T.copy()
            sample[:3, :3] = T[:3, :3] @ (twist if sign > 0 else twist.T)
            sample[:3, 3] += sign * np.array([0.01, 0.02, -0.03])
            stamp = f.stamp_ns + sign * 10_000_000
            bag.add("/slam/pose", T_["geometry_msgs/msg/PoseStamped"](header=header("odom", stamp), pose=pose(sample)),
                    stamp)
    path = bag.write(tmp_path / "bag")
    with RosbagSource(path, pose_topic="pose") as src:
        got = list(src.frames())
    assert all(isinstance(f, Frame) for f in got)
    for frame, T in zip(got, truth, strict=True):
        np.testing.assert_allclose(frame.T_world_camera, T, atol=1e-9)
        assert frame.world_frame == "odom"


def test_unknown_encoding_is_a_frame_error(tmp_path):
    path = record_frames(_tiny_frames(), color="nv21").write(tmp_path / "bag")
    with RosbagSource(path) as src:
        got = list(src.frames())
    assert len(got) == 3 and all(isinstance(e, FrameError) for e in got)
    assert "'nv21'" in str(got[0]) and "frame 0" in str(got[0])


def test_frames_without_pose_or_depth_are_frame_errors(tmp_path):
    bag = record_frames(_tiny_frames(4))
    # no /tf for the first image (33 ms before the next sample: beyond the 20 ms tolerance),
    # and no depth for the third image
    bag.messages = [m for m in bag.messages if not (m[0] == "/tf" and m[3].transforms[0].header.stamp.nanosec == 0)]
    bag.messages = [m for m in bag.messages
                    if not (m[0] == "/depth_to_rgb/image_raw" and m[3].header.stamp.nanosec == 2 * PERIOD)]
    path = bag.write(tmp_path / "bag")
    with RosbagSource(path) as src:
        got = list(src.frames())
    assert [type(f).__name__ for f in got] == ["FrameError", "Frame", "FrameError", "Frame"]
    assert "no camera pose" in str(got[0]) and "map -> base_link" in str(got[0])
    assert "no depth" in str(got[2]) and "frame 2" in str(got[2])


def test_depth_pairs_within_tolerance_only(tmp_path):
    bag = record_frames(_tiny_frames(2))
    for topic, _, _, msg in bag.messages:
        if topic == "/depth_to_rgb/image_raw":
            msg.header.stamp.nanosec += 500_000  # 0.5 ms late
    path = bag.write(tmp_path / "bag")
    with RosbagSource(path) as src:
        assert all(isinstance(f, Frame) for f in src.frames())
    with RosbagSource(path, pair_tolerance_ns=100_000) as src:
        assert all(isinstance(f, FrameError) and "no depth" in str(f) for f in src.frames())


@pytest.mark.parametrize("storage", ["sqlite3", "mcap"])
def test_truncated_bag_is_an_input_error(tmp_path, storage):
    path = record_frames(_tiny_frames(40)).write(tmp_path / "bag", storage)
    data_file = next(p for p in path.iterdir() if p.suffix in (".db3", ".mcap"))
    raw = data_file.read_bytes()
    for keep in (len(raw) // 2, len(raw) - 100):
        data_file.write_bytes(raw[:keep])
        if storage == "mcap" and keep == len(raw) - 100:  # cut in its summary: the one chunk is whole
            with RosbagSource(path) as src:  # read up to its last complete record (sources/mcap_truncation.py)
                assert len(list(src.frames())) == 40 and "truncated" in src.details
            continue
        with pytest.raises(InputError) as info:
            with RosbagSource(path) as src:
                list(src.frames())
        message = str(info.value)
        assert str(path) in message and "\n" not in message


def test_missing_topic_lists_the_available_ones(tmp_path):
    path = record_frames(_tiny_frames(1), ns="/cam").write(tmp_path / "bag")
    with pytest.raises(InputError) as info:
        RosbagSource(path, depth_topic="depth/image_raw")
    message = str(info.value)
    assert "'depth/image_raw'" in message and "/cam/depth_to_rgb/image_raw" in message
    assert "/cam/rgb/camera_info [sensor_msgs/msg/CameraInfo]" in message


def test_ambiguous_topic_and_missing_pose_source(tmp_path):
    bag = record_frames(_tiny_frames(1), ns="/left")
    for topic, _, log_ns, msg in list(bag.messages):
        if topic.startswith("/left/"):
            bag.add(topic.replace("/left/", "/right/"), msg, log_ns)
    path = bag.write(tmp_path / "bag")
    with pytest.raises(InputError, match="ambiguous .*/left/rgb/image_raw, /right/rgb/image_raw"):
        RosbagSource(path)
    with RosbagSource(path, color_topic="/left/rgb/image_raw", depth_topic="left/depth_to_rgb/image_raw",
                      info_topic="left/rgb/camera_info") as src:
        assert isinstance(next(iter(src.frames())), Frame)
    no_pose = record_frames(_tiny_frames(1), pose_mode="none").write(tmp_path / "nopose")
    with pytest.raises(InputError, match="no pose source"):
        RosbagSource(no_pose)


def test_world_frame_must_exist_and_missing_bag_is_an_input_error(tmp_path):
    path = record_frames(_tiny_frames(1)).write(tmp_path / "bag")
    with pytest.raises(InputError, match="world frame 'odom' is not in the recorded transforms"):
        RosbagSource(path, world_frame="odom")
    with pytest.raises(InputError, match="does not exist"):
        RosbagSource(tmp_path / "nothing")
    with pytest.raises(InputError, match="cannot read rosbag"):
        RosbagSource(BagBuilder().write(tmp_path / "empty") / "metadata.yaml")
