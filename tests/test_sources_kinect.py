"""Azure Kinect sources: calibration JSON, depth->colour registration, .mkv reading, live guard."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from pathlib import Path

import av
import cv2
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from embodied_ros.errors import ConfigError, FrameError, InputError
from embodied_ros.frame import Frame, check_rigid
from embodied_ros.geometry.transforms import BODY_TO_OPTICAL, invert_transform
from embodied_ros.sources.kinect_calibration import (
    color_resolution_from_size,
    depth_mode_from_size,
    load_calibration,
    parse_calibration,
    register_depth_to_color,
    registration_for,
)
from embodied_ros.sources.kinect_live import KinectLiveSource
from embodied_ros.sources.kinect_mkv import KinectMkvSource
from embodied_ros.sources.kinect_poses import read_pose_file

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KINECT = DATA / "azure_kinect"
MKV = KINECT / "recording.mkv"
CALIB_JSON = KINECT / "calibration.json"
needs_data = pytest.mark.skipif(
    not MKV.is_file(), reason=f"Azure Kinect recording not found at {MKV} (set EMBODIED_ROS_DATA to the data folder)"
)

# Device time of the recording's only capture: block time 463945 us + K4A_START_OFFSET_NS 336277000.
FRAME_STAMP_NS = 463_945_000 + 336_277_000


@pytest.fixture(scope="module")
def calib():
    return load_calibration(CALIB_JSON)


@pytest.fixture(scope="module")
def raw_depth() -> np.ndarray:
    """(576, 640) uint16 mm: the DEPTH packet's bytes read directly (b16g is big-endian)."""
    with av.open(str(MKV)) as container:
        depth = next(s for s in container.streams if s.metadata.get("title") == "DEPTH")
        for packet in container.demux(depth):
            if packet.size:
                return np.frombuffer(bytes(packet), ">u2").reshape(576, 640).astype(np.uint16)
    raise AssertionError("no depth packet")


@pytest.fixture(scope="module")
def frames() -> list:
    return list(KinectMkvSource(MKV, gravity_from_imu=False).frames())


def _sdk_brown_conrady(xy: np.ndarray, v: np.ndarray, size_binned, crop) -> np.ndarray:
    """Slow reference: the SDK's Brown-Conrady projection from the raw 14 JSON parameters.

    Normalised (x, y) -> pixel (u, v) for a mode with ``size_binned`` sensor and ``crop`` offset.
    """
    cx, cy, fx, fy, k1, k2, k3, k4, k5, k6, _, _, p2, p1 = v
    fx, fy = fx * size_binned[0], fy * size_binned[1]
    cx, cy = cx * size_binned[0] - crop[0] - 0.5, cy * size_binned[1] - crop[1] - 0.5
    out = []
    for x, y in xy:
        r2 = x * x + y * y
        d = (1 + k1 * r2 + k2 * r2**2 + k3 * r2**3) / (1 + k4 * r2 + k5 * r2**2 + k6 * r2**3)
        xd = x * d + (r2 + 2 * x * x) * p2 + 2 * x * y * p1
        yd = y * d + (r2 + 2 * y * y) * p1 + 2 * x * y * p2
        out.append((xd * fx + cx, yd * fy + cy))
    return np.asarray(out)


# ----------------------------------------------------------------------------- calibration
@needs_data
def test_calibration_pixel_intrinsics_follow_the_sdk_modes(calib):
    doc = json.loads(CALIB_JSON.read_text())
    cams = {c["Purpose"]: c for c in doc["CalibrationInformation"]["Cameras"]}
    vc = cams["CALIBRATION_CameraPurposePhotoVideo"]["Intrinsics"]["ModelParameters"]
    vd = cams["CALIBRATION_CameraPurposeDepth"]["Intrinsics"]["ModelParameters"]
    # 720p is the 4:3 sensor scaled to 1280x960 and cropped 120 rows top and bottom.
    assert calib.color.K[0, 2] == pytest.approx(vc[0] * 1280 - 0.5)
    assert calib.color.K[1, 2] == pytest.approx(vc[1] * 960 - 120 - 0.5)
    assert calib.color.K[0, 0] == pytest.approx(vc[2] * 1280)
    assert calib.color.K[1, 1] == pytest.approx(vc[3] * 960)
    assert calib.depth.K[0, 2] == pytest.approx(vd[0] * 1024 - 192 - 0.5)
    assert (calib.color.width, calib.color.height, calib.depth.width, calib.depth.height) == (1280, 720, 640, 576)
    # Sanity of the result: square pixels; the colour principal point near the image centre (the
    # NFOV depth crop is off-centre by design: cy ~ 349 of 576).
    for cam in (calib.color, calib.depth):
        assert cam.K[0, 0] == pytest.approx(cam.K[1, 1], rel=5e-3)
    assert abs(calib.color.K[0, 2] - 640) < 20 and abs(calib.color.K[1, 2] - 360) < 20
    # Depth -> colour: a rotation and the ~32 mm baseline, in metres.
    check_rigid(calib.T_color_depth, "T_color_depth")
    assert 0.025 < np.linalg.norm(calib.T_color_depth[:3, 3]) < 0.04


@needs_data
def test_opencv_distortion_matches_the_sdk_model(calib):
    doc = json.loads(CALIB_JSON.read_text())
    cams = {c["Purpose"]: c for c in doc["CalibrationInformation"]["Cameras"]}
    rng = np.random.default_rng(0)
    xy = rng.uniform(-0.7, 0.7, size=(200, 2)) * [1.0, 0.6]
    pts = np.concatenate([xy, np.ones((200, 1))], axis=1)
    cases = [
        (calib.color, cams["CALIBRATION_CameraPurposePhotoVideo"], (1280, 960), (0, 120)),
        (calib.depth, cams["CALIBRATION_CameraPurposeDepth"], (1024, 1024), (192, 180)),
    ]
    for model, cam, binned, crop in cases:
        expected = _sdk_brown_conrady(xy, cam["Intrinsics"]["ModelParameters"], binned, crop)
        got, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), model.K, model.dist)
        np.testing.assert_allclose(got.reshape(-1, 2), expected, atol=1e-6)


@needs_data
def test_calibration_attachment_equals_the_file_beside_it():
    with av.open(str(MKV)) as container:
        attachment = next(s for s in container.streams if s.type == "attachment")
        a = parse_calibration(bytes(attachment.data))
    b = load_calibration(CALIB_JSON)
    np.testing.assert_array_equal(a.color.K, b.color.K)
    np.testing.assert_array_equal(a.T_color_depth, b.T_color_depth)


def test_calibration_errors_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not a valid Azure Kinect calibration"):
        parse_calibration('{"CalibrationInformation": {}}')
    with pytest.raises(InputError, match="unknown depth mode"):
        parse_calibration("{}", depth_mode="NFOV_HUGE")
    with pytest.raises(InputError, match="cannot read calibration"):
        load_calibration(tmp_path / "missing.json")
    assert color_resolution_from_size(1280, 720) == "720P"
    assert depth_mode_from_size(640, 576) == "NFOV_UNBINNED"
    assert color_resolution_from_size(10, 10) is None


# ----------------------------------------------------------------------------- registration
@needs_data
def test_registration_round_trips_to_the_raw_depth(calib, raw_depth):
    depth = register_depth_to_color(raw_depth, calib, (1280, 720))
    assert depth.shape == (720, 1280) and depth.dtype == np.float32
    v, u = np.nonzero(depth > 0)
    z = depth[v, u].astype(np.float64)
    K = calib.color.K
    points = np.stack([(u - K[0, 2]) / K[0, 0] * z, (v - K[1, 2]) / K[1, 1] * z, z], axis=1)
    T = invert_transform(calib.T_color_depth)
    points = points @ T[:3, :3].T + T[:3, 3]  # into the depth camera
    uv, _ = cv2.projectPoints(points, np.zeros(3), np.zeros(3), calib.depth.K, calib.depth.dist)
    ui, vi = np.round(uv.reshape(-1, 2)).astype(int).T
    inside = (ui >= 0) & (ui < 640) & (vi >= 0) & (vi < 576)
    assert inside.mean() > 0.99
    raw = raw_depth[vi[inside], ui[inside]] / 1000.0
    err = np.abs(points[inside, 2] - raw)[raw > 0]
    assert err.size > 100_000
    assert np.median(err) < 0.001
    assert (err < 0.005).mean() > 0.9


@needs_data
def test_registration_is_a_2x2_z_buffered_splat(calib, raw_depth):
    """Against a slow reference: each point covers the 2x2 pixels nearest it; nearest wins."""
    reg = registration_for(calib)
    got = reg.register(raw_depth)
    rays = np.stack([reg._rx, reg._ry, reg._rz], axis=1)
    d = raw_depth.reshape(-1)[reg._pixel].astype(np.float32) * np.float32(1e-3)
    keep = d > 0
    P = rays[keep] * d[keep, None] + reg._t
    u = np.floor(reg.K[0, 0] * P[:, 0] / P[:, 2] + reg.K[0, 2]).astype(int)
    v = np.floor(reg.K[1, 1] * P[:, 1] / P[:, 2] + reg.K[1, 2]).astype(int)
    want = np.full((720, 1280), np.inf, dtype=np.float32)
    for du in (0, 1):
        for dv in (0, 1):
            m = (u + du >= 0) & (u + du < 1280) & (v + dv >= 0) & (v + dv < 720)
            np.minimum.at(want, (v[m] + dv, u[m] + du), P[m, 2])
    want[np.isinf(want)] = 0
    want[~reg._color_valid] = 0
    np.testing.assert_array_equal(got, want)
    # Metres in, metres out: float metres give the same image as millimetres (up to pixels whose
    # projection sits on a pixel border, where the last float bit decides).
    same = np.isclose(reg.register(raw_depth.astype(np.float32) / 1000), got, atol=1e-6)
    assert same.mean() > 0.9999


@needs_data
def test_registration_rejects_a_wrong_colour_size(calib, raw_depth):
    with pytest.raises(ValueError, match="does not match"):
        register_depth_to_color(raw_depth, calib, (1920, 1080))


# ----------------------------------------------------------------------------- mkv source
@needs_data
def test_mkv_yields_registered_rgbd_frames(frames, calib):
    source = KinectMkvSource(MKV, gravity_from_imu=False)
    assert len(frames) == len(source) == 1
    frame = frames[0]
    assert isinstance(frame, Frame)
    assert frame.color.shape == (720, 1280, 3) and frame.color.dtype == np.uint8
    assert frame.color.mean() > 40  # a real image, not a black decode
    valid = frame.valid_depth()
    assert 0.4 < valid.mean() < 0.95
    # Mostly 0.25-6 m; the table top right below the camera is really ~0.18 m away. (Reading b16g
    # as little-endian would give tens of metres.)
    d = frame.depth[valid]
    assert ((d > 0.25) & (d < 6.0)).mean() > 0.9
    assert 0.1 < d.min() and d.max() < 6.0
    assert 1.0 < np.median(d) < 2.0
    np.testing.assert_allclose(frame.K, calib.color.K)
    assert frame.stamp_ns == FRAME_STAMP_NS and frame.index == 0
    assert frame.camera_frame == "rgb_camera_link"


@needs_data
def test_mkv_without_poses_warns_and_uses_identity(caplog):
    with caplog.at_level(logging.WARNING):
        source = KinectMkvSource(MKV, gravity_from_imu=False)
    assert any("identity pose" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    assert not source.gravity_aligned
    frame = next(source.frames())
    np.testing.assert_array_equal(frame.T_world_camera, np.eye(4))


@needs_data
def test_mkv_levels_the_pose_with_imu_gravity(caplog):
    with caplog.at_level(logging.WARNING):
        source = KinectMkvSource(MKV, gravity_from_imu=True)
    assert source.gravity_aligned
    assert 9.5 < np.linalg.norm(source.gravity_accel) < 10.1  # before any normalising
    assert any("levelled by gravity" in r.getMessage() for r in caplog.records)
    R = next(source.frames()).T_world_camera[:3, :3]
    # Gravity measured in the colour camera maps to world -z.
    up_cam = source.calibration.T_color_accel[:3, :3] @ source.gravity_accel
    np.testing.assert_allclose(R @ (-up_cam / np.linalg.norm(up_cam)), [0, 0, -1], atol=1e-9)
    # World x is the viewing direction levelled: the optical axis lies in the world x-z plane.
    assert abs(R[1, 2]) < 1e-9 and R[0, 2] > 0.5
    assert R[2, 1] < -0.8  # image "down" points mostly down
    check_rigid(np.block([[R, np.zeros((3, 1))], [np.zeros((1, 3)), np.ones((1, 1))]]), "levelled pose")


@needs_data
@pytest.mark.parametrize("fmt", ["embodiedscan", "matrix"])
def test_mkv_applies_a_pose_file(tmp_path, fmt):
    quat = Rotation.from_euler("z", 30, degrees=True).as_quat()  # x y z w
    position = [1.0, 2.0, 0.5]
    expected = np.eye(4)
    expected[:3, :3] = Rotation.from_quat(quat).as_matrix() @ BODY_TO_OPTICAL
    expected[:3, 3] = position
    poses = tmp_path / "poses.txt"
    if fmt == "embodiedscan":  # seconds; one pose far from the frame that must not be picked
        rows = [f"{FRAME_STAMP_NS / 1e9:.6f} " + " ".join(map(str, [*position, *quat])), "5.0 0 0 0 0 0 0 1"]
    else:  # integer nanoseconds + 4x4 row-major
        rows = [f"{FRAME_STAMP_NS + 3_000_000} " + " ".join(f"{x:.12g}" for x in expected.ravel())]
    poses.write_text("# header line, skipped\n" + "\n".join(rows) + "\n")
    frame = next(KinectMkvSource(MKV, poses_path=poses).frames())
    np.testing.assert_allclose(frame.T_world_camera, expected, atol=1e-9)


@needs_data
def test_mkv_pose_file_problems(tmp_path):
    far = tmp_path / "far.txt"
    far.write_text("header\n1000.0 0 0 0 0 0 0 1\n")
    with pytest.raises(InputError, match="do not overlap"):
        KinectMkvSource(MKV, poses_path=far)
    bad = tmp_path / "bad.txt"
    bad.write_text("header\n0.8 0 0 0\n")
    with pytest.raises(InputError, match="columns"):
        read_pose_file(bad)
    bad.write_text("header\nt0 0 0 0 0 0 0 1\n")
    with pytest.raises(InputError, match="timestamps must be numbers"):
        read_pose_file(bad)
    # A pose near the recording but not within half a frame period of the frame: FrameError.
    off = tmp_path / "off.txt"
    off.write_text(f"header\n{FRAME_STAMP_NS / 1e9 + 0.15} 0 0 0 0 0 0 1\n")
    (item,) = KinectMkvSource(MKV, poses_path=off).frames()
    assert isinstance(item, FrameError) and "no pose" in str(item)


@needs_data
@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.6])
def test_truncated_mkv_fails_cleanly(tmp_path, fraction):
    data = MKV.read_bytes()
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(data[: int(len(data) * fraction)])
    try:
        source = KinectMkvSource(cut, calibration_path=CALIB_JSON)
    except InputError as err:
        assert str(cut) in str(err)
        return
    items = list(source.frames())
    assert items, "a readable truncated recording must yield frames or errors"
    kinds = [isinstance(item, FrameError) for item in items]
    assert kinds == sorted(kinds)  # frames, then errors
    assert kinds[-1] or len(items) == len(source)


def _remux_with_damage(src: Path, dst: Path, captures: int, damage: dict) -> None:
    """Write ``dst``: the recording's video tracks with its one capture repeated ``captures`` times.

    ``damage`` maps (capture, track title) -> bytes -> bytes, to corrupt single packets.
    """
    with av.open(str(src)) as inp, av.open(str(dst), "w", format="matroska", options={"allow_raw_vfw": "1"}) as out:
        out.metadata.update(inp.metadata)
        streams, packets = {}, {}
        for stream in inp.streams.video:
            streams[stream.index] = out.add_stream_from_template(stream)
            streams[stream.index].metadata.update(stream.metadata)
        for packet in inp.demux(*inp.streams.video):
            if packet.size:
                packets[packet.stream.index] = (bytes(packet), packet.pts, packet.time_base)
        for capture in range(captures):
            for index, (data, pts, time_base) in packets.items():
                title = inp.streams[index].metadata["title"]
                data = damage.get((capture, title), lambda b: b)(data)
                copy = av.Packet(data)
                copy.stream, copy.time_base = streams[index], time_base
                copy.pts = copy.dts = pts + capture * 200_000  # 5 fps, microseconds
                out.mux(copy)


@needs_data
def test_corrupt_packets_are_frame_errors_and_reading_goes_on(tmp_path):
    path = tmp_path / "damaged.mkv"
    damage = {(1, "COLOR"): lambda b: b[: len(b) // 2], (2, "DEPTH"): lambda b: b[:1000]}
    _remux_with_damage(MKV, path, 4, damage)
    source = KinectMkvSource(path, calibration_path=CALIB_JSON, gravity_from_imu=False)
    items = list(source.frames())
    assert len(items) == len(source) == 4
    assert [type(item) for item in items] == [Frame, FrameError, FrameError, Frame]
    assert "frame 1" in str(items[1]) and "truncated" in str(items[1])
    assert "frame 2" in str(items[2]) and "depth" in str(items[2])
    assert items[3].index == 3 and items[3].stamp_ns - items[0].stamp_ns == 600_000_000
    # stride and max_frames count colour frames; errors count as frames.
    assert [getattr(i, "index", None) for i in source.frames(stride=3)] == [0, 3]
    assert len(list(source.frames(max_frames=2))) == 2


def test_non_recordings_are_input_errors(tmp_path):
    text = tmp_path / "notes.mkv"
    text.write_text("not a matroska file\n")
    for path in (text, tmp_path / "missing.mkv"):
        with pytest.raises(InputError, match=str(path)):
            KinectMkvSource(path)
    png = tmp_path / "image.png"
    cv2.imwrite(str(png), np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(InputError, match="not a Matroska"):
        KinectMkvSource(png)


def test_mkv_without_depth_track_is_an_input_error(tmp_path):
    path = tmp_path / "color_only.mkv"
    with av.open(str(path), "w", format="matroska") as out:
        stream = out.add_stream("mjpeg", rate=30)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuvj420p"
        stream.metadata["title"] = "COLOR"
        image = av.VideoFrame.from_ndarray(np.zeros((48, 64, 3), np.uint8), format="rgb24").reformat(format="yuvj420p")
        for packet in [*stream.encode(image), *stream.encode()]:
            out.mux(packet)
    with pytest.raises(InputError, match="no DEPTH track"):
        KinectMkvSource(path)


# ----------------------------------------------------------------------------- live source
def test_live_source_without_pyk4a_says_what_to_install():
    if importlib.util.find_spec("pyk4a") is not None:
        pytest.skip("pyk4a is installed here; the guard needs it absent")
    with pytest.raises(InputError) as info:
        KinectLiveSource()
    message = str(info.value)
    assert "pip install pyk4a" in message and "libk4a1.4" in message
    assert "\n" not in message


def test_live_source_rejects_bad_modes_first():
    with pytest.raises(ConfigError, match="color_resolution"):
        KinectLiveSource(color_resolution="4K")
    with pytest.raises(ConfigError, match="fps"):
        KinectLiveSource(fps=60)
