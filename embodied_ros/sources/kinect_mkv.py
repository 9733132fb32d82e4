"""Azure Kinect recordings (.mkv from k4arecorder) as a frame source, read with PyAV (no SDK).

The recorder writes Matroska with tracks titled COLOR (MJPG, NV12, YUY2 or BGRA), DEPTH and IR
(codec b16g: 16-bit big-endian grey, depth in millimetres), IMU (40-byte little-endian samples:
uint64 accelerometer time ns, float32[3] m/s^2, uint64 gyro time ns, float32[3] rad/s) and the
factory calibration as the attachment ``calibration.json``. Block timestamps are relative to the
first capture; adding the ``K4A_START_OFFSET_NS`` tag gives the device timestamp.
"""

from __future__ import annotations

import logging
import struct
from collections import deque
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from ..errors import FrameError, InputError
from ..frame import Frame
from .base import FrameSource
from .images import decode_compressed_rgb
from .kinect_calibration import (
    DepthRegistration,
    KinectCalibration,
    color_resolution_from_size,
    depth_mode_from_size,
    gravity_aligned_pose,
    load_calibration,
    parse_calibration,
    registration_for,
)
from .kinect_poses import PoseTrack, find_pose_file, read_pose_file

log = logging.getLogger(__name__)

CAMERA_FRAME = "rgb_camera_link"
"""The Azure Kinect ROS driver's optical colour frame, used as Frame.camera_frame."""

_IMU_SAMPLE = struct.Struct("<Q3fQ3f")
_IMU_WINDOW_NS = 1_000_000_000  # average the accelerometer over the first second
_GRAVITY_RANGE = (8.8, 10.8)  # |mean accel| outside this: not at rest, or not a usable IMU
_MAX_ACCEL_SPREAD = 0.5  # m/s^2 RMS around the mean; more means the camera moved


_EBML_HEADER, _SEGMENT = b"\x1a\x45\xdf\xa3", b"\x18\x53\x80\x67"


def _vint(data: bytes, at: int) -> tuple[int, int, bool]:
    """An EBML variable-length size at ``at``: (value, its length in bytes, all value bits set = unknown)."""
    first = data[at]
    length = next((n for n in range(1, 9) if first & (0x80 >> (n - 1))), 8)
    value = first & (0xFF >> length)
    for b in data[at + 1: at + length]:
        value = (value << 8) | b
    return value, length, value == (1 << (7 * length)) - 1


def matroska_truncation(path: Path) -> str | None:
    """Why a Matroska file is shorter than its Segment says (k4arecorder writes the size on close), or None.

    A file cut while recording (a killed recorder, a full disk) keeps the frames before the cut;
    without this, its last colour frame reads as a depth timing problem.
    """
    with path.open("rb") as f:
        head = f.read(64)
        size = path.stat().st_size
    try:
        if not head.startswith(_EBML_HEADER):
            return None
        header, n, _ = _vint(head, 4)
        at = 4 + n + header
        if head[at: at + 4] != _SEGMENT:
            return None
        segment, n, unknown = _vint(head, at + 4)
    except IndexError:
        return None
    end = at + 4 + n + segment
    if unknown or size >= end:
        return None
    return f"truncated: {size} of the {end} bytes its Matroska header gives"


def _reason(err: Exception) -> str:
    """Short cause of a PyAV/OS error without the file name it repeats."""
    return str(getattr(err, "strerror", None) or err)


class KinectMkvSource(FrameSource):
    """Posed RGB-D frames from an Azure Kinect .mkv recording.

    Each colour frame is paired with the depth frame of the same capture (nearest device time
    within half a frame period, after the recording's depth delay), colour is decoded to RGB and
    undistorted, depth is registered into it (see kinect_calibration). Frames are indexed by
    their position in the COLOR track. ``stamp_ns`` is the colour image's device timestamp.

    Poses come from ``poses_path``, else ``<name>.poses.txt`` or ``poses.txt`` beside the
    recording (formats in kinect_poses), matched by device time within half a frame period.
    Without one every frame gets the same pose and a warning says so: identity, or, when
    ``gravity_from_imu`` and the IMU track shows the camera at rest, the rotation that levels
    the camera in a z-up world (``gravity_aligned`` is then True; see gravity_aligned_pose).
    With a poses file the world is whatever the file's is, so ``gravity_aligned`` is False.

    Args:
        path: the .mkv recording.
        poses_path: pose file; None looks beside the recording.
        calibration_path: calibration JSON; None uses the recording's attachment, else
            ``calibration.json`` beside it.
        gravity_from_imu: level the fallback pose with the accelerometer.

    Raises:
        InputError: missing/unreadable/non-Matroska file, no COLOR or DEPTH track, no usable
            calibration, or a bad pose file.
    """

    layout = "Azure Kinect recording (.mkv)"
    intrinsics_note = "factory calibration in the recording: the colour camera, undistorted"
    registration_note = "depth registered to the undistorted colour camera with the factory calibration"
    gravity_note = "not given (the poses file's world)"

    def __init__(
        self,
        path: str | Path,
        poses_path: str | Path | None = None,
        calibration_path: str | Path | None = None,
        gravity_from_imu: bool = True,
    ) -> None:
        self.path = Path(path)
        self.name = str(self.path)
        if not self.path.is_file():
            raise InputError(f"{self.path}: no such recording")
        self.gravity_accel: np.ndarray | None = None  # (3,) mean accelerometer used to level the pose
        try:
            self.truncation = matroska_truncation(self.path) or ""
        except OSError as err:
            raise InputError(f"{self.path}: cannot read it: {err.strerror or err}") from None
        if self.truncation:
            log.warning("%s is %s: reading the frames before the cut", self.path, self.truncation)
            self.details = f"{self.truncation}; the frames before the cut are read"
        with self._open() as container:
            self._probe(container)
            self.calibration = self._load_calibration(container, calibration_path)
            self._find_first_color(container)
        self._length: int | None = None  # counted on first use
        if gravity_from_imu and self._imu_index is not None:
            with self._open() as container:
                imu = self._read_accel(container)
        else:
            imu = np.zeros((0, 3))
        self._registration: DepthRegistration = registration_for(self.calibration)
        self.K = self._registration.K.copy()

        pose_file = Path(poses_path) if poses_path is not None else find_pose_file(self.path)
        self.poses: PoseTrack | None = read_pose_file(pose_file) if pose_file is not None else None
        self._fixed_pose = np.eye(4)
        if self.poses is not None:
            self._check_pose_overlap()
            log.info("%s: poses from %s (%d poses)", self.path.name, self.poses.path, len(self.poses.stamps_ns))
        else:
            self._fixed_pose = self._fallback_pose(imu, gravity_from_imu)

    # ----------------------------------------------------------------------------- set-up
    def _open(self) -> av.container.InputContainer:
        try:
            container = av.open(str(self.path), mode="r")
        except (av.FFmpegError, OSError, UnicodeDecodeError) as err:
            raise InputError(f"{self.path}: not a readable Matroska recording ({_reason(err)})") from None
        if "matroska" not in container.format.name:
            container.close()
            raise InputError(f"{self.path}: is {container.format.long_name}, not a Matroska (.mkv) recording")
        return container

    def _probe(self, container: av.container.InputContainer) -> None:
        """Find the tracks and the modes; InputError when COLOR or DEPTH is missing."""
        tracks = {s.metadata.get("title", "").upper(): s for s in container.streams}
        for title in ("COLOR", "DEPTH"):
            if title not in tracks or tracks[title].type != "video":
                present = ", ".join(sorted(t for t in tracks if t)) or "none"
                raise InputError(f"{self.path}: recording has no {title} track (tracks: {present})")
        self._color_index = tracks["COLOR"].index
        self._depth_index = tracks["DEPTH"].index
        self._imu_index = tracks["IMU"].index if "IMU" in tracks else None
        color, depth = tracks["COLOR"], tracks["DEPTH"]
        cw, ch = color.codec_context.width, color.codec_context.height
        dw, dh = depth.codec_context.width, depth.codec_context.height
        self._color_format, _, res = color.metadata.get("K4A_COLOR_MODE", "").partition("_")
        self._color_format = self._color_format or (color.codec_context.name or "").upper()
        self.color_resolution = res or color_resolution_from_size(cw, ch)
        self.depth_mode = depth.metadata.get("K4A_DEPTH_MODE") or depth_mode_from_size(dw, dh)
        if self.color_resolution is None or self.depth_mode is None:
            raise InputError(f"{self.path}: colour {cw}x{ch} / depth {dw}x{dh} match no Azure Kinect mode")
        self._depth_size = (dw, dh)
        meta = container.metadata
        self._start_offset_ns = int(meta.get("K4A_START_OFFSET_NS", 0) or 0)
        self._depth_delay_ns = int(meta.get("K4A_DEPTH_DELAY_NS", 0) or 0)
        self._time_base = {s.index: s.time_base or Fraction(1, 1_000_000_000) for s in container.streams}
        rate = color.average_rate or color.guessed_rate or 30
        self.period_ns = int(round(1e9 / float(rate)))

    def _find_first_color(self, container: av.container.InputContainer) -> None:
        """Device time span of the recording; InputError when not even one colour frame is readable."""
        color = container.streams[self._color_index]
        first = None
        try:
            for packet in container.demux(color):
                if packet.pts is not None and packet.size > 0:
                    first = self._to_ns(color.index, packet.pts)
                    break
        except (av.FFmpegError, EOFError, OSError) as err:
            raise InputError(f"{self.path}: unreadable before its first colour frame ({_reason(err)})") from None
        if first is None:
            why = self.truncation or "empty or truncated"
            raise InputError(f"{self.path}: no colour frame in the recording ({why})")
        self._first_color_ns = first
        # The recorder's segment duration is the time of its last block (microseconds here).
        duration_ns = (container.duration or 0) * 1000
        self._last_ns = max(first, self._start_offset_ns + duration_ns)

    def _count_color_frames(self) -> int:
        """Colour packets in the file: one pass over it without decoding (the cues are sparse)."""
        count = 0
        with self._open() as container:
            try:
                for packet in container.demux(container.streams[self._color_index]):
                    count += packet.pts is not None and packet.size > 0
            except (av.FFmpegError, EOFError, OSError):
                pass  # a damaged tail: the frames before it are what can be read
        return count

    def _load_calibration(self, container: av.container.InputContainer, path: str | Path | None) -> KinectCalibration:
        modes = (self.depth_mode, self.color_resolution)
        if path is not None:
            return load_calibration(path, *modes)
        for stream in container.streams:
            if stream.type == "attachment" and (
                "K4A_CALIBRATION_FILE" in stream.metadata or stream.metadata.get("filename") == "calibration.json"
            ):
                return parse_calibration(bytes(stream.data), *modes, source=f"{self.path} (calibration attachment)")
        beside = self.path.with_name("calibration.json")
        if beside.is_file():
            log.info("%s: no calibration attachment, using %s", self.path.name, beside)
            return load_calibration(beside, *modes)
        raise InputError(f"{self.path}: no calibration attachment and no calibration.json beside it")

    def _read_accel(self, container: av.container.InputContainer) -> np.ndarray:
        """(N, 3) accelerometer samples (m/s^2) of the first second of the IMU track; may be empty."""
        samples: list[tuple[float, float, float]] = []
        first = None
        try:
            for packet in container.demux(container.streams[self._imu_index]):
                data = bytes(packet)
                for off in range(0, len(data) - _IMU_SAMPLE.size + 1, _IMU_SAMPLE.size):
                    acc_ns, ax, ay, az, *_ = _IMU_SAMPLE.unpack_from(data, off)
                    first = acc_ns if first is None else first
                    if acc_ns - first > _IMU_WINDOW_NS:
                        return np.asarray(samples).reshape(-1, 3)
                    samples.append((ax, ay, az))
        except (av.FFmpegError, EOFError) as err:
            log.warning("%s: IMU track unreadable after %d samples (%s)", self.path.name, len(samples), _reason(err))
        return np.asarray(samples).reshape(-1, 3)

    def _fallback_pose(self, accel: np.ndarray, gravity_from_imu: bool) -> np.ndarray:
        """The one pose for every frame without a pose file, levelled by the IMU when possible."""
        what = f"{self.path.name}: no poses file (looked for {self.path.stem}.poses.txt and poses.txt beside it)"
        if not gravity_from_imu or len(accel) == 0:
            why = "gravity_from_imu is off" if not gravity_from_imu else "the recording has no accelerometer samples"
            log.warning("%s: every frame gets the identity pose (camera assumed static; %s; world not z-up)", what, why)
            return np.eye(4)
        mean = accel.mean(axis=0)
        magnitude = float(np.linalg.norm(mean))
        spread = float(np.sqrt(((accel - mean) ** 2).sum(axis=1).mean()))
        self.gravity_accel = mean
        if not (_GRAVITY_RANGE[0] <= magnitude <= _GRAVITY_RANGE[1]) or spread > _MAX_ACCEL_SPREAD:
            log.warning(
                "%s: every frame gets the identity pose; the accelerometer (|mean| %.2f m/s^2, spread %.2f) "
                "does not show a camera at rest, so the world is not gravity-aligned", what, magnitude, spread,
            )
            return np.eye(4)
        pose = gravity_aligned_pose(mean, self.calibration)
        self.gravity_aligned = True
        self.gravity_note = f"levelled with the IMU's gravity (mean of {len(accel)} accelerometer samples)"
        tilt = float(np.degrees(np.arcsin(np.clip(pose[2, 2], -1.0, 1.0))))
        log.warning(
            "%s: every frame gets one fixed pose (camera assumed static), levelled by gravity from the mean of %d "
            "accelerometer samples (|g| %.2f m/s^2): world z up, x along the view direction, camera pitch %+.1f deg up",
            what, len(accel), magnitude, tilt,
        )
        return pose

    def _check_pose_overlap(self) -> None:
        """InputError when no pose time is anywhere near the recording's time span."""
        assert self.poses is not None
        begin = self._first_color_ns - self.period_ns
        end = self._last_ns + self.period_ns
        stamps = self.poses.stamps_ns
        if stamps[-1] < begin or stamps[0] > end:
            raise InputError(
                f"{self.poses.path}: pose times {stamps[0] / 1e9:.3f}-{stamps[-1] / 1e9:.3f} s do not overlap the "
                f"recording's device times {begin / 1e9:.3f}-{end / 1e9:.3f} s (timestamps must be device time)"
            )

    # ----------------------------------------------------------------------------- reading
    def __len__(self) -> int:
        """Number of colour frames (counted by one pass over the file on first call)."""
        if self._length is None:
            self._length = self._count_color_frames()
        return self._length

    def _to_ns(self, stream_index: int, pts: int) -> int:
        tb = self._time_base[stream_index]
        return int(pts * tb.numerator * 1_000_000_000 // tb.denominator) + self._start_offset_ns

    def frames(self, stride: int = 1, max_frames: int | None = None) -> Iterator[Frame | FrameError]:
        """Every ``stride``-th colour frame in order, at most ``max_frames`` (errors count too)."""
        stride = max(1, stride)
        container = self._open()
        produced = 0
        try:
            for item in self._captures(container):
                if isinstance(item, FrameError):  # the rest of the file is unreadable: always said
                    yield item
                    return
                index, color, depth, error = item
                if index % stride:
                    continue
                if max_frames is not None and produced >= max_frames:
                    return
                produced += 1
                if error is not None:
                    yield error
                    continue
                try:
                    yield self._make_frame(index, color, depth)
                except FrameError as err:
                    yield err
        finally:
            container.close()

    def _captures(self, container: av.container.InputContainer) -> Iterator[tuple]:
        """(index, (stamp, colour packet), (stamp, depth packet), None) per colour frame, in order.

        A colour frame without depth within half a period comes as (index, None, None, FrameError).
        A demuxing failure yields a bare FrameError and ends the iteration (the rest of the file
        cannot be located).
        """
        tol = self.period_ns // 2
        colors: deque = deque()  # (index, stamp_ns, packet)
        depths: deque = deque()  # (stamp_ns - depth delay, stamp_ns, bytes)
        index = 0
        streams = [container.streams[self._color_index], container.streams[self._depth_index]]
        demux = container.demux(streams)
        while True:
            try:
                packet = next(demux, None)
            except (av.FFmpegError, EOFError, OSError) as err:
                why = f"{_reason(err)}; {self.truncation}" if self.truncation else _reason(err)
                yield FrameError(f"{self.path} frame {index}: recording unreadable from here on ({why})")
                return
            done = packet is None
            if not done and packet.pts is not None and packet.size > 0:
                stamp = self._to_ns(packet.stream.index, packet.pts)
                if packet.stream.index == self._color_index:
                    colors.append((index, stamp, packet))
                    index += 1
                else:
                    depths.append((stamp - self._depth_delay_ns, stamp, packet))
            # Emit every colour frame whose partner is known (or known to be missing).
            while colors:
                i, stamp, cpkt = colors[0]
                while depths and depths[0][0] < stamp - tol:
                    depths.popleft()  # depth without colour: nothing to pair it with
                if depths and depths[0][0] <= stamp + tol:
                    _, dstamp, dpkt = depths.popleft()
                    yield i, (stamp, cpkt), (dstamp, dpkt), None
                elif depths or done:
                    why = (f"its depth image is cut off (the recording is {self.truncation})"
                           if done and self.truncation else f"no depth image within {tol / 1e6:.1f} ms of its colour")
                    yield i, None, None, FrameError(f"{self.path} frame {i}: {why}")
                else:
                    break
                colors.popleft()
            if done:
                return

    def _decode_color(self, index: int, packet: av.Packet) -> np.ndarray:
        """(H, W, 3) uint8 RGB of a colour packet, or FrameError."""
        where = f"{self.path} frame {index}"
        if packet.is_corrupt:
            raise FrameError(f"{where}: colour packet is flagged corrupt")
        if self._color_format == "MJPG":
            # strict: a cut-off or corrupt JPEG is an error, never a part-grey picture
            try:
                rgb = decode_compressed_rgb("jpeg", bytes(packet))
            except FrameError as err:
                raise FrameError(f"{where}: {err}") from None
        else:  # NV12, YUY2, BGRA: raw formats FFmpeg knows
            try:
                decoded = packet.stream.codec_context.decode(packet)
            except av.FFmpegError as err:
                raise FrameError(f"{where}: colour image does not decode ({_reason(err)})") from None
            if not decoded:
                raise FrameError(f"{where}: colour image does not decode")
            rgb = decoded[0].to_ndarray(format="rgb24")
        w, h = self._registration.size
        if rgb.shape != (h, w, 3):
            raise FrameError(f"{where}: colour image is {rgb.shape[1]}x{rgb.shape[0]}, expected {w}x{h}")
        return rgb

    def _decode_depth(self, index: int, packet: av.Packet) -> np.ndarray:
        """(h, w) uint16 millimetres of a depth packet, or FrameError."""
        w, h = self._depth_size
        data = bytes(packet)
        if packet.is_corrupt or len(data) != w * h * 2:
            raise FrameError(f"{self.path} frame {index}: depth packet has {len(data)} bytes, expected {w * h * 2}")
        return np.frombuffer(data, dtype=">u2").reshape(h, w).astype(np.uint16)

    def _make_frame(self, index: int, color: tuple, depth: tuple) -> Frame:
        stamp, cpkt = color
        dstamp, dpkt = depth
        if self.poses is not None:
            pose = self.poses.lookup(stamp, self.period_ns // 2)
            if pose is None:
                raise FrameError(
                    f"{self.path} frame {index}: no pose within {self.period_ns / 2e6:.1f} ms of its device time "
                    f"{stamp / 1e9:.6f} s in {self.poses.path}"
                )
        else:
            pose = self._fixed_pose.copy()
        rgb = self._registration.undistort_color(self._decode_color(index, cpkt))
        registered = self._registration.register(self._decode_depth(index, dpkt))
        return Frame(
            color=rgb,
            depth=registered,
            K=self.K.copy(),
            T_world_camera=pose,
            stamp_ns=stamp,
            index=index,
            source_name=self.name,
            camera_frame=CAMERA_FRAME,
            extras={"depth_stamp_ns": dstamp},
        )
