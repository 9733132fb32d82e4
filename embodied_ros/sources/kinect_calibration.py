"""Azure Kinect factory calibration (the SDK's JSON) and registration of depth to the colour camera.

The calibration JSON (``k4a_device_get_raw_calibration``, the ``calibration.json`` attachment of
a recording) stores, per camera, 14 *normalised* Brown–Conrady parameters for the full sensor:
``cx, cy, fx, fy, k1, k2, k3, k4, k5, k6, codx, cody, p2, p1`` (note p2 before p1). Principal
point and focal length are divided by the sensor's width/height and (0, 0) is the top-left
*corner* of the top-left pixel. The SDK turns them into pixel intrinsics for a camera mode by
scaling to the mode's binned sensor size, subtracting the mode's crop offset and then 0.5 px
(OpenCV convention: (0, 0) is the *centre* of the top-left pixel); see ``_MODE_INFO``. Each
sensor's ``Rt`` maps depth-camera coordinates into that sensor, translation in metres. The
SDK's Brown–Conrady model is OpenCV's rational model with ``(k1, k2, p1, p2, k3, k4, k5, k6)``.

Registration target: the Frame contract has a pinhole K and no distortion field, so colour is
*undistorted* into a pinhole camera with the colour camera's own K (same focal length and
principal point; the few border pixels the lens pulls inwards become black and their depth 0),
and depth is registered into that undistorted camera.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..errors import InputError
from ..geometry.transforms import BODY_TO_OPTICAL, gravity_alignment, invert_transform, make_transform

# SDK mode tables: (binned calibration image size, crop offset, output size), all (x, y) in px.
_COLOR_MODE_INFO: dict[str, tuple[tuple[int, int], tuple[int, int], tuple[int, int]]] = {
    "720P": ((1280, 960), (0, 120), (1280, 720)),
    "1080P": ((1920, 1440), (0, 180), (1920, 1080)),
    "1440P": ((2560, 1920), (0, 240), (2560, 1440)),
    "1536P": ((2048, 1536), (0, 0), (2048, 1536)),
    "2160P": ((3840, 2880), (0, 360), (3840, 2160)),
    "3072P": ((4096, 3072), (0, 0), (4096, 3072)),
}
_DEPTH_MODE_INFO: dict[str, tuple[tuple[int, int], tuple[int, int], tuple[int, int]]] = {
    "NFOV_2X2BINNED": ((512, 512), (96, 90), (320, 288)),
    "NFOV_UNBINNED": ((1024, 1024), (192, 180), (640, 576)),
    "WFOV_2X2BINNED": ((512, 512), (0, 0), (512, 512)),
    "WFOV_UNBINNED": ((1024, 1024), (0, 0), (1024, 1024)),
    "PASSIVE_IR": ((1024, 1024), (0, 0), (1024, 1024)),
}
COLOR_RESOLUTIONS = tuple(_COLOR_MODE_INFO)
"""Colour resolutions the SDK knows ("720P", ... "3072P")."""
DEPTH_MODES = tuple(_DEPTH_MODE_INFO)
"""Depth modes the SDK knows ("NFOV_UNBINNED", ...)."""

_DEFAULT_METRIC_RADIUS = 1.7  # the SDK's value when the factory left it at 0 (~120 deg field of view)


def color_resolution_from_size(width: int, height: int) -> str | None:
    """SDK colour resolution name ("720P", ...) of an image size, or None when no mode has it."""
    return next((k for k, v in _COLOR_MODE_INFO.items() if v[2] == (width, height)), None)


def depth_mode_from_size(width: int, height: int) -> str | None:
    """SDK depth mode name of an image size (1024x1024 reads as WFOV_UNBINNED), or None."""
    return next((k for k, v in _DEPTH_MODE_INFO.items() if v[2] == (width, height)), None)


@dataclass(frozen=True, eq=False)
class CameraModel:
    """Pixel intrinsics of one camera in one mode.

    Attributes:
        width, height: image size in pixels.
        K: (3, 3) float64 pixel intrinsics, OpenCV convention ((0, 0) = centre of the top-left pixel).
        dist: (8,) float64 OpenCV rational-model coefficients k1, k2, p1, p2, k3, k4, k5, k6.
        metric_radius: largest normalised radius sqrt(x^2 + y^2) where the lens model is valid.
    """

    width: int
    height: int
    K: np.ndarray
    dist: np.ndarray
    metric_radius: float


@dataclass(frozen=True, eq=False)
class KinectCalibration:
    """Factory calibration of one Azure Kinect for one depth mode and colour resolution.

    Attributes:
        depth: depth camera model for ``depth_mode``.
        color: colour camera model for ``color_resolution``.
        T_color_depth: (4, 4) depth camera -> colour camera, metres.
        T_accel_depth: (4, 4) depth camera -> accelerometer, metres; None when absent.
        depth_mode: SDK depth mode name, e.g. "NFOV_UNBINNED".
        color_resolution: SDK colour resolution name, e.g. "720P".
        serial: device serial number from the JSON metadata ("" when absent).
    """

    depth: CameraModel
    color: CameraModel
    T_color_depth: np.ndarray
    T_accel_depth: np.ndarray | None
    depth_mode: str
    color_resolution: str
    serial: str = ""

    @property
    def T_color_accel(self) -> np.ndarray | None:
        """(4, 4) accelerometer -> colour camera, or None without accelerometer calibration."""
        if self.T_accel_depth is None:
            return None
        return self.T_color_depth @ invert_transform(self.T_accel_depth)


def _rt(entry: dict) -> np.ndarray:
    """(4, 4) transform from a JSON ``Rt`` block (rotation row-major, translation in metres)."""
    R = np.asarray(entry["Rotation"], dtype=np.float64).reshape(3, 3)
    t = np.asarray(entry["Translation"], dtype=np.float64).reshape(3)
    return make_transform(R, t)


def _camera_model(camera: dict, mode_steps: list, source: str) -> CameraModel:
    """Pixel camera model from one JSON camera entry, applying the SDK's mode steps in order."""
    intr = camera["Intrinsics"]
    if intr["ModelType"] != "CALIBRATION_LensDistortionModelBrownConrady":
        raise InputError(f"{source}: unsupported lens model {intr['ModelType']} (expected Brown-Conrady)")
    v = np.asarray(intr["ModelParameters"], dtype=np.float64)
    if v.size < 14:
        raise InputError(f"{source}: camera has {v.size} intrinsic parameters, expected 14")
    cx, cy, fx, fy = v[:4]
    for (bw, bh), (ox, oy), (ow, oh), pixelized in mode_steps:
        cx, cy, fx, fy = cx * bw - ox, cy * bh - oy, fx * bw, fy * bh
        if pixelized:  # corner-origin, unitised -> centre-origin pixels
            cx, cy = cx - 0.5, cy - 0.5
        else:
            cx, cy, fx, fy = cx / ow, cy / oh, fx / ow, fy / oh
    k1, k2, k3, k4, k5, k6, _codx, _cody, p2, p1 = v[4:14]
    radius = float(camera.get("MetricRadius", 0.0)) or 0.0
    width, height = mode_steps[-1][2]
    return CameraModel(
        width=int(width),
        height=int(height),
        K=np.array([[fx, 0.0, cx], [0.0, fy, cy], [0.0, 0.0, 1.0]]),
        dist=np.array([k1, k2, p1, p2, k3, k4, k5, k6]),
        metric_radius=radius if radius > 1e-4 else _DEFAULT_METRIC_RADIUS,
    )


def parse_calibration(
    raw: str | bytes | dict,
    depth_mode: str = "NFOV_UNBINNED",
    color_resolution: str = "720P",
    source: str = "calibration",
) -> KinectCalibration:
    """Parse the SDK's calibration JSON into pixel models for one depth mode and colour resolution.

    Args:
        raw: the JSON text (or bytes, or the decoded dict).
        depth_mode: one of DEPTH_MODES.
        color_resolution: one of COLOR_RESOLUTIONS.
        source: file or device named in error messages.

    Raises:
        InputError: malformed JSON, missing cameras, or an unknown mode.
    """
    if depth_mode not in _DEPTH_MODE_INFO:
        raise InputError(f"{source}: unknown depth mode {depth_mode!r} (one of {', '.join(DEPTH_MODES)})")
    if color_resolution not in _COLOR_MODE_INFO:
        known = ", ".join(COLOR_RESOLUTIONS)
        raise InputError(f"{source}: unknown colour resolution {color_resolution!r} (one of {known})")
    try:
        doc = raw if isinstance(raw, dict) else json.loads(raw)
        info = doc["CalibrationInformation"]
        cams = {c["Purpose"]: c for c in info["Cameras"]}
        depth_cam = cams["CALIBRATION_CameraPurposeDepth"]
        color_cam = cams["CALIBRATION_CameraPurposePhotoVideo"]
        # The depth camera defines the SDK's reference frame; each Rt maps depth -> sensor.
        T_color_depth = _rt(color_cam["Rt"]) @ invert_transform(_rt(depth_cam["Rt"]))
        accels = [s for s in info.get("InertialSensors", []) if s.get("SensorType", "").endswith("Accelerometer")]
        T_accel_depth = _rt(accels[0]["Rt"]) @ invert_transform(_rt(depth_cam["Rt"])) if accels else None

        dw, dh = depth_cam["SensorWidth"], depth_cam["SensorHeight"]
        if (dw, dh) != (1024, 1024):
            raise InputError(f"{source}: depth sensor is {dw}x{dh}, expected 1024x1024")
        depth = _camera_model(depth_cam, [(*_DEPTH_MODE_INFO[depth_mode], True)], source)

        sw, sh = int(color_cam["SensorWidth"]), int(color_cam["SensorHeight"])
        steps: list = []
        if sw * 9 // 16 == sh:  # legacy 16:9 calibration: the SDK first converts it to the 4:3 sensor
            steps.append(((4096, 2304), (0, -384), (4096, 3072), False))
        elif sw * 3 // 4 != sh:
            raise InputError(f"{source}: colour sensor {sw}x{sh} is neither 4:3 nor 16:9")
        steps.append((*_COLOR_MODE_INFO[color_resolution], True))
        color = _camera_model(color_cam, steps, source)
        serial = str(info.get("Metadata", {}).get("SerialId", ""))
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as err:
        raise InputError(f"{source}: not a valid Azure Kinect calibration JSON ({type(err).__name__}: {err})") from None
    return KinectCalibration(depth, color, T_color_depth, T_accel_depth, depth_mode, color_resolution, serial)


def load_calibration(
    path: str | Path, depth_mode: str = "NFOV_UNBINNED", color_resolution: str = "720P"
) -> KinectCalibration:
    """Read and parse a calibration JSON file (see parse_calibration); InputError if unreadable."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read calibration ({err.__class__.__name__}: {err})") from None
    return parse_calibration(text, depth_mode, color_resolution, source=str(path))


def gravity_aligned_pose(accel: np.ndarray, calib: KinectCalibration) -> np.ndarray:
    """Camera-to-world pose of a static camera in a z-up world, from its accelerometer.

    At rest the accelerometer measures the reaction to gravity, i.e. a vector pointing *up*.
    World axes: z up, x the camera's viewing direction projected on the floor, y = z cross x
    (left, as in EmbodiedScan's body frame); the origin is the camera centre. A camera looking
    straight up or down has no such x and gets the smallest levelling rotation instead.

    Args:
        accel: (3,) mean accelerometer reading in the accelerometer frame, m/s^2.
        calib: calibration holding the accelerometer -> colour camera extrinsics.

    Returns:
        (4, 4) float64 T_world_camera (OpenCV optical camera axes).

    Raises:
        ValueError: no accelerometer calibration or a zero vector.
    """
    T_ca = calib.T_color_accel
    if T_ca is None:
        raise ValueError("calibration has no accelerometer extrinsics")
    up = T_ca[:3, :3] @ np.asarray(accel, dtype=np.float64).reshape(3)
    norm = np.linalg.norm(up)
    if not np.isfinite(norm) or norm < 1e-9:
        raise ValueError("accelerometer vector must be finite and non-zero")
    up /= norm
    forward = np.array([0.0, 0.0, 1.0]) - up[2] * up  # optical axis minus its vertical part
    T = np.eye(4)
    if np.linalg.norm(forward) < 1e-6:
        T[:3, :3] = gravity_alignment(-(BODY_TO_OPTICAL @ up))[:3, :3] @ BODY_TO_OPTICAL
        return T
    x = forward / np.linalg.norm(forward)
    # Rows are the world axes written in camera coordinates, so this maps camera -> world.
    T[:3, :3] = np.stack([x, np.cross(up, x), up])
    return T


class DepthRegistration:
    """Depth -> undistorted-colour registration with everything per-calibration precomputed.

    Built once per calibration: the ray (x, y, 1) of every depth pixel (the depth lens distortion
    inverted with OpenCV's iterative undistortion, rotated into the colour camera) and the maps
    that undistort the colour image. Per frame only a few vectorised array operations remain.

    Attributes:
        K: (3, 3) pinhole intrinsics of the undistorted colour image (and registered depth).
        size: (width, height) of the colour image.
    """

    def __init__(self, calib: KinectCalibration) -> None:
        self.calib = calib
        col, dep = calib.color, calib.depth
        self.K = col.K.copy()
        self.size = (col.width, col.height)
        self._maps = cv2.initUndistortRectifyMap(col.K, col.dist, None, col.K, self.size, cv2.CV_32FC1)
        mx, my = self._maps
        # Pixels of the undistorted image whose source lies inside the recorded colour image.
        self._color_valid = (mx >= -0.5) & (mx <= col.width - 0.5) & (my >= -0.5) & (my <= col.height - 0.5)
        self._maps = cv2.convertMaps(mx, my, cv2.CV_16SC2)  # fixed-point maps remap faster

        xy, ok = _undistorted_rays(dep)
        rays = np.concatenate([xy, np.ones((xy.shape[0], 1))], axis=1) @ calib.T_color_depth[:3, :3].T
        self._pixel = np.flatnonzero(ok)  # flat depth-pixel index of every usable ray
        # Rotated rays per usable depth pixel, one contiguous array per axis: point = depth * ray + t.
        self._rx, self._ry, self._rz = (np.ascontiguousarray(rays[ok, i], dtype=np.float32) for i in range(3))
        self._kernel = np.ones((2, 2), np.uint8)
        self._t = calib.T_color_depth[:3, 3].astype(np.float32)

    def undistort_color(self, image: np.ndarray, nearest: bool = False) -> np.ndarray:
        """Undistort an (H, W[, C]) image in the distorted colour geometry into the pinhole one.

        ``nearest`` keeps values unmixed (for depth already registered by the SDK).
        """
        return cv2.remap(image, *self._maps, cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR)

    def mask_invalid(self, depth: np.ndarray) -> np.ndarray:
        """Zero depth (H, W) where the undistorted colour image has no recorded pixel; in place."""
        depth[~self._color_valid] = 0.0
        return depth

    def register(self, depth: np.ndarray) -> np.ndarray:
        """Register one depth image into the undistorted colour camera.

        Each valid depth pixel is lifted to 3D, moved into the colour camera and splatted onto
        the 2x2 colour pixels whose centres are nearest to its projection (colour pixels are
        ~1.2x denser than depth pixels, so single-pixel splats would leave a hole pattern; the
        2x2 footprint closes it while growing foreground edges by at most one pixel). A z-buffer
        keeps the nearest surface where several points land on one pixel.

        Args:
            depth: (h, w) depth image of the depth camera; integer dtype = millimetres,
                floating dtype = metres; 0 or NaN = invalid.

        Returns:
            (H, W) float32 metres in the undistorted colour image; 0 where unknown.
        """
        dep = self.calib.depth
        if depth.shape != (dep.height, dep.width):
            h, w = depth.shape[:2]
            raise ValueError(f"depth is {w}x{h}, the calibration expects {dep.width}x{dep.height}")
        scale = np.float32(1e-3 if np.issubdtype(depth.dtype, np.integer) else 1.0)
        d = depth.reshape(-1)[self._pixel].astype(np.float32) * scale
        sel = np.flatnonzero(d > 0)  # NaN compares False, so this drops NaN too
        d = d[sel]
        x = self._rx[sel] * d + self._t[0]  # points in the colour camera, metres
        y = self._ry[sel] * d + self._t[1]
        z = self._rz[sel] * d + self._t[2]
        W, H = self.size
        with np.errstate(divide="ignore", invalid="ignore"):
            u = np.floor(self.K[0, 0] * x / z + self.K[0, 2])
            v = np.floor(self.K[1, 1] * y / z + self.K[1, 2])
        # The z-buffer has one extra row/column at the top-left so points at u or v in [-1, 0)
        # still cover pixel 0 (see the 2x2 filter below).
        ok = (z > 1e-3) & (u >= -1) & (u < W) & (v >= -1) & (v < H)
        zbuf = np.full((H + 1) * (W + 1), np.inf, dtype=np.float32)
        np.minimum.at(zbuf, (v[ok].astype(np.int64) + 1) * (W + 1) + u[ok].astype(np.int64) + 1, z[ok])
        # A point splatted at floor(u, v) also covers the pixels right of and below it: a 2x2 min
        # filter anchored bottom-right is exactly that 2x2 splat, with the z-buffer kept.
        zbuf = cv2.erode(
            zbuf.reshape(H + 1, W + 1), self._kernel, anchor=(1, 1), borderType=cv2.BORDER_CONSTANT, borderValue=np.inf
        )[1:, 1:]
        zbuf = np.ascontiguousarray(zbuf)
        zbuf[np.isinf(zbuf)] = 0.0
        return self.mask_invalid(zbuf)


def _undistorted_rays(cam: CameraModel) -> tuple[np.ndarray, np.ndarray]:
    """Normalised undistorted (x, y) of every pixel centre of ``cam`` and where they are trustworthy.

    Returns:
        (h*w, 2) float64 normalised coordinates (z = 1) and (h*w,) bool: inside the lens model's
        metric radius and re-distorting to within 0.05 px of the pixel.
    """
    u, v = np.meshgrid(np.arange(cam.width, dtype=np.float64), np.arange(cam.height, dtype=np.float64))
    uv = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
    criteria = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 40, 1e-10)
    undistort_iter = getattr(cv2, "undistortPointsIter", None)  # OpenCV 4 name; 5 folds it into undistortPoints
    if undistort_iter is not None:
        xy = undistort_iter(uv, cam.K, cam.dist, None, None, criteria)
    else:
        xy = cv2.undistortPoints(uv, cam.K, cam.dist, R=None, P=None, criteria=criteria)
    xy = xy.reshape(-1, 2)
    pts = np.concatenate([xy, np.ones((xy.shape[0], 1))], axis=1)
    back, _ = cv2.projectPoints(pts, np.zeros(3), np.zeros(3), cam.K, cam.dist)
    err = np.linalg.norm(back.reshape(-1, 2) - uv.reshape(-1, 2), axis=1)
    ok = np.isfinite(err) & (err < 0.05) & ((xy**2).sum(axis=1) < cam.metric_radius**2)
    return xy, ok


_REGISTRATIONS: dict[tuple, DepthRegistration] = {}


def _fingerprint(calib: KinectCalibration) -> tuple:
    """Everything a DepthRegistration depends on, hashable (equal calibrations share one)."""
    arrays = (calib.depth.K, calib.depth.dist, calib.color.K, calib.color.dist, calib.T_color_depth)
    radii = (calib.depth.metric_radius, calib.color.metric_radius)
    return (calib.depth_mode, calib.color_resolution, radii, *(a.tobytes() for a in arrays))


def registration_for(calib: KinectCalibration) -> DepthRegistration:
    """The DepthRegistration of a calibration, built on first use (~1 s) and cached (a few kept)."""
    key = _fingerprint(calib)
    reg = _REGISTRATIONS.get(key)
    if reg is None:
        if len(_REGISTRATIONS) >= 4:
            _REGISTRATIONS.pop(next(iter(_REGISTRATIONS)))
        reg = _REGISTRATIONS[key] = DepthRegistration(calib)
    return reg


def register_depth_to_color(
    depth: np.ndarray, calib: KinectCalibration, color_size: tuple[int, int] | None = None
) -> np.ndarray:
    """Depth image of the depth camera -> float32 metres in the undistorted colour image.

    Args:
        depth: (h, w) depth image; integer dtype = millimetres, floating = metres; 0/NaN invalid.
        calib: calibration whose depth mode matches ``depth``.
        color_size: expected (width, height) of the colour image, checked against ``calib``.

    Returns:
        (H, W) float32 metres registered to the undistorted colour camera (pinhole ``calib.color.K``).
    """
    if color_size is not None and tuple(color_size) != (calib.color.width, calib.color.height):
        raise ValueError(
            f"colour image {color_size[0]}x{color_size[1]} does not match the calibration's "
            f"{calib.color_resolution} mode ({calib.color.width}x{calib.color.height})"
        )
    return registration_for(calib).register(depth)
