"""A live Azure Kinect (through pyk4a and the Azure Kinect Sensor SDK) as a frame source."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import cv2
import numpy as np

from ..errors import ConfigError, FrameError, InputError
from ..frame import Frame
from .base import FrameSource
from .kinect_calibration import (
    COLOR_RESOLUTIONS,
    DEPTH_MODES,
    gravity_aligned_pose,
    parse_calibration,
    registration_for,
)
from .kinect_mkv import CAMERA_FRAME

log = logging.getLogger(__name__)

INSTALL_HINT = (
    "install the Azure Kinect Sensor SDK (on Ubuntu: libk4a1.4 and libk4a1.4-dev from Microsoft's "
    "package repository packages.microsoft.com) and then `pip install pyk4a`"
)
"""What a user must install for KinectLiveSource; part of its InputError message."""

PoseProvider = Callable[[int], "np.ndarray | None"]
"""Callable: colour device timestamp in ns -> (4, 4) camera-to-world (OpenCV optical) or None."""

_FPS = (5, 15, 30)
_IMU_SAMPLES = 50  # ~0.03 s of the 1.6 kHz IMU, enough to average the noise of a camera at rest


def _import_pyk4a():
    """The pyk4a module, or InputError naming what to install (pyk4a also fails without libk4a)."""
    try:
        import pyk4a
    except ImportError as err:
        raise InputError(f"Azure Kinect: pyk4a is not usable ({err}); {INSTALL_HINT}") from None
    return pyk4a


class KinectLiveSource(FrameSource):
    """Posed RGB-D frames from a connected Azure Kinect.

    Colour is captured as BGRA and converted to RGB; depth is the SDK's ``transformed_depth``
    (already registered to the colour camera). Both are then undistorted into the pinhole colour
    camera of the device's factory calibration (depth with nearest-neighbour sampling), so the
    frames match those of KinectMkvSource. ``stamp_ns`` is the colour device timestamp.

    Poses come from ``pose_provider`` (stamp_ns -> 4x4 camera-to-world or None; None makes that
    frame a FrameError). Without one every frame gets one fixed pose and a warning says so:
    identity, or levelled by the accelerometer when ``gravity_from_imu`` (camera assumed static).

    Args:
        device_id: index of the device (0 for the first).
        color_resolution: "720P", "1080P", "1440P", "1536P", "2160P" or "3072P".
        depth_mode: "NFOV_UNBINNED", "NFOV_2X2BINNED", "WFOV_2X2BINNED" or "WFOV_UNBINNED".
        fps: 5, 15 or 30 (the SDK allows 30 only below 3072P and WFOV_UNBINNED).
        pose_provider: source of camera poses, e.g. a TF lookup or a SLAM system.
        gravity_from_imu: level the fallback pose with the accelerometer.
        timeout_ms: wait for one capture before yielding a FrameError.

    Raises:
        ConfigError: an unknown mode or frame rate.
        InputError: pyk4a or the SDK missing (the message says what to install), or the device
            cannot be opened.
    """

    layout = "live Azure Kinect"

    def __init__(
        self,
        device_id: int = 0,
        color_resolution: str = "720P",
        depth_mode: str = "NFOV_UNBINNED",
        fps: int = 30,
        pose_provider: PoseProvider | None = None,
        gravity_from_imu: bool = True,
        timeout_ms: int = 1000,
    ) -> None:
        if color_resolution not in COLOR_RESOLUTIONS:
            raise ConfigError(f"color_resolution {color_resolution!r} is not one of {', '.join(COLOR_RESOLUTIONS)}")
        depth_modes = [m for m in DEPTH_MODES if m != "PASSIVE_IR"]  # passive IR has no depth
        if depth_mode not in depth_modes:
            raise ConfigError(f"depth_mode {depth_mode!r} is not one of {', '.join(depth_modes)}")
        if fps not in _FPS:
            raise ConfigError(f"fps {fps} is not one of 5, 15, 30")
        self.name = f"Azure Kinect {device_id}"
        self._pyk4a = pyk4a = _import_pyk4a()
        self._timeout_ms = int(timeout_ms)
        self._pose_provider = pose_provider
        config = pyk4a.Config(
            color_resolution=getattr(pyk4a.ColorResolution, f"RES_{color_resolution}"),
            color_format=pyk4a.ImageFormat.COLOR_BGRA32,
            depth_mode=getattr(pyk4a.DepthMode, depth_mode),
            camera_fps=getattr(pyk4a.FPS, f"FPS_{fps}"),
            synchronized_images_only=True,  # every capture then has colour and depth
        )
        self._device = pyk4a.PyK4A(config, device_id=device_id)
        try:
            self._device.start()
            raw = self._device.calibration_raw
        except pyk4a.K4AException as err:
            if self._device.opened:
                self._device.close()
            why = str(err) or "is it connected and not used by another program?"
            raise InputError(f"{self.name}: cannot start the device ({why})") from None
        self.calibration = parse_calibration(raw, depth_mode, color_resolution, source=self.name)
        self._registration = registration_for(self.calibration)
        self.K = self._registration.K.copy()
        self._fixed_pose = np.eye(4)
        if pose_provider is None:
            self._fixed_pose = self._fallback_pose(gravity_from_imu)

    def _fallback_pose(self, gravity_from_imu: bool) -> np.ndarray:
        """One pose for every frame without a pose provider, levelled by the IMU when possible."""
        what = f"{self.name}: no pose_provider, every frame gets one fixed pose (camera assumed static)"
        if gravity_from_imu:
            try:
                samples = [self._device.get_imu_sample(self._timeout_ms) for _ in range(_IMU_SAMPLES)]
                acc = np.array([s["acc_sample"] for s in samples], dtype=np.float64)
            except (self._pyk4a.K4AException, KeyError, TypeError) as err:
                log.warning("%s; identity, not gravity-aligned (IMU unreadable: %s)", what, err)
                return np.eye(4)
            mean = acc.mean(axis=0)
            if 8.8 <= np.linalg.norm(mean) <= 10.8:
                self.gravity_aligned = True
                self.gravity_note = f"levelled with the IMU's gravity (mean of {len(acc)} accelerometer samples)"
                log.warning("%s, levelled by gravity from %d accelerometer samples (world z up)", what, len(acc))
                return gravity_aligned_pose(mean, self.calibration)
            magnitude = float(np.linalg.norm(mean))
            log.warning("%s; identity, not gravity-aligned (|accel| %.2f m/s^2: camera moving?)", what, magnitude)
            return np.eye(4)
        log.warning("%s; identity, world not gravity-aligned", what)
        return np.eye(4)

    def frames(self, stride: int = 1, max_frames: int | None = None) -> Iterator[Frame | FrameError]:
        """Captures as they arrive: every ``stride``-th, at most ``max_frames`` (None: until closed)."""
        if self._device is None:
            raise InputError(f"{self.name}: source is closed")
        stride = max(1, stride)
        produced = index = 0
        while max_frames is None or produced < max_frames:
            try:
                capture = self._device.get_capture(timeout=self._timeout_ms)
            except self._pyk4a.K4ATimeoutException:
                produced += 1
                yield FrameError(f"{self.name} frame {index}: no capture within {self._timeout_ms} ms")
                index += 1
                continue
            except self._pyk4a.K4AException as err:
                raise InputError(f"{self.name}: capture failed, device lost? ({err})") from None
            index += 1
            if (index - 1) % stride:
                continue
            produced += 1
            try:
                yield self._make_frame(index - 1, capture)
            except FrameError as err:
                yield err

    def _make_frame(self, index: int, capture) -> Frame:
        where = f"{self.name} frame {index}"
        bgra, depth = capture.color, capture.transformed_depth
        if bgra is None or depth is None:
            raise FrameError(f"{where}: capture lacks a colour or depth image")
        stamp = int(capture.color_timestamp_usec) * 1000
        if self._pose_provider is None:
            pose = self._fixed_pose.copy()
        else:
            pose = self._pose_provider(stamp)
            if pose is None:
                raise FrameError(f"{where}: pose_provider has no pose for {stamp / 1e9:.6f} s")
            pose = np.asarray(pose, dtype=np.float64)
        reg = self._registration
        rgb = reg.undistort_color(cv2.cvtColor(bgra, cv2.COLOR_BGRA2RGB))
        depth_m = reg.undistort_color(depth, nearest=True).astype(np.float32) * np.float32(1e-3)
        return Frame(
            color=rgb,
            depth=reg.mask_invalid(depth_m),
            K=self.K.copy(),
            T_world_camera=pose,
            stamp_ns=stamp,
            index=index,
            source_name=self.name,
            camera_frame=CAMERA_FRAME,
        )

    def close(self) -> None:
        """Stop the cameras and IMU and release the device."""
        device, self._device = getattr(self, "_device", None), None
        if device is not None and device.is_running:
            device.stop()
