"""Colour/depth registration, a property of the recording: how colour pixels map onto the depth camera's.

Every Frame carries colour and depth on one pixel grid with one K. Recordings whose colour and
depth come from separate cameras (the Kinect v1 of 7-Scenes, ScanNet's exports) are brought to
the depth camera's grid by resampling the colour image; everything else is taken as registered
unless the user says otherwise (``--registration``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

import cv2
import numpy as np

from ..errors import InputError


class Registration(str, Enum):
    """How colour is put onto the depth camera's pixels."""

    AUTO = "auto"
    """The recording's own: 7-Scenes recordings SEVEN_SCENES_DEFAULT, ScanNet exports CALIBRATED,
    everything else NONE."""
    NONE = "none"
    """Colour and depth taken as registered (same pixels, one K)."""
    SEVEN_SCENES_AFFINE = "7scenes-affine"
    """7-Scenes Kinect v1: depth_px = c + 1.105 (colour_px - c) + (7, 2) px, c the depth principal point."""
    SEVEN_SCENES_KINECT = "7scenes-kinect"
    """7-Scenes Kinect v1 as two pinhole cameras: each depth pixel's 3D point seen by the colour camera
    (f 525.6, c (322.9, 236.3), 3.2 cm beside the depth camera), so the shift follows the depth."""
    CALIBRATED = "calibrated"
    """The recording's own colour and depth calibration (ScanNet: intrinsic_color/depth, extrinsics)."""


SEVEN_SCENES_DEFAULT = Registration.SEVEN_SCENES_AFFINE
"""The 7-Scenes model used by ``auto``. 7scenes-kinect puts colour edges on depth edges better (benchmarks/
bench_registration.py: 79.7 against 64.3 on the 100 redkitchen frames, better on 98); the affine model stays the
default until the redkitchen ground truth says which one gives the better object map (tests tuned on it)."""

SEVEN_SCENES_DEPTH_K = (585.0, 585.0, 320.0, 240.0)
"""fx, fy, cx, cy of the 7-Scenes depth camera, as every 7-Scenes camera-intrinsics.txt gives them."""

# Affine model, fitted on colour gradients under depth edges of 50 redkitchen frames (the depth K
# has f = 585; the colour camera behaves like f ~ 529); a pure shift scores worse than none.
SEVEN_SCENES_AFFINE_SCALE = 1.105
SEVEN_SCENES_AFFINE_OFFSET_PX = (7.0, 2.0)

# Pinhole model of the Kinect v1 colour camera, fitted on depth edges of redkitchen
# (../shared/data/README.md, ground-truth section): intrinsics and the translation that takes
# depth-camera points into the colour camera (no rotation).
SEVEN_SCENES_COLOR_K = np.array([[525.6, 0.0, 322.9], [0.0, 525.6, 236.3], [0.0, 0.0, 1.0]])
SEVEN_SCENES_COLOR_FROM_DEPTH_M = (-0.032, 0.008, 0.0)


@dataclass(frozen=True)
class CameraPair:
    """Separate colour and depth cameras: what reprojecting colour onto depth needs.

    Attributes:
        K_color: (3, 3) intrinsics of the colour image as stored.
        T_color_depth: (4, 4) rigid transform of depth-camera points into the colour camera.
    """

    K_color: np.ndarray
    T_color_depth: np.ndarray


SEVEN_SCENES_PAIR = CameraPair(
    SEVEN_SCENES_COLOR_K,
    np.block([[np.eye(3), np.array(SEVEN_SCENES_COLOR_FROM_DEPTH_M)[:, None]], [np.zeros((1, 3)), np.ones((1, 1))]]),
)


def is_seven_scenes_intrinsics(K: np.ndarray) -> bool:
    """True for the 7-Scenes depth camera's intrinsics (f 585, c (320, 240)): a 7-Scenes recording."""
    fx, fy, cx, cy = K[0, 0], K[1, 1], K[0, 2], K[1, 2]
    return bool(np.allclose((fx, fy, cx, cy), SEVEN_SCENES_DEPTH_K, atol=0.5))


def resolve_registration(requested: Registration | str, where: str, *, seven_scenes: bool = False,
                         calibrated: bool = False) -> tuple[Registration, str]:
    """The model a recording gets, and a line saying which and why (for ``inspect`` and the log).

    Args:
        requested: the user's choice (AUTO picks the recording's own).
        where: the recording, for the error.
        seven_scenes: the recording is a 7-Scenes one (see is_seven_scenes_intrinsics).
        calibrated: the recording carries separate colour/depth calibration (ScanNet).

    Raises:
        InputError: CALIBRATED asked of a recording without a colour calibration.
    """
    model = Registration(requested)
    if model is Registration.CALIBRATED and not calibrated:
        raise InputError(f"{where}: --registration calibrated needs a colour calibration this recording does not "
                         "have; use none, 7scenes-affine or 7scenes-kinect")
    if model is not Registration.AUTO:
        why = "as asked (--registration)"
    elif calibrated:
        model, why = Registration.CALIBRATED, "auto, the recording's own colour and depth calibration"
    elif seven_scenes:
        model, why = SEVEN_SCENES_DEFAULT, "auto, a 7-Scenes recording: Kinect v1 depth intrinsics f 585, c 320, 240"
    else:
        model, why = Registration.NONE, "auto, colour taken as registered to depth"
    return model, f"{model.value} ({why}): {describe_registration(model)}"


def describe_registration(model: Registration) -> str:
    """One phrase saying what a model does to the colour image."""
    dx, dy = SEVEN_SCENES_AFFINE_OFFSET_PX
    return {
        Registration.NONE: "colour used as recorded",
        Registration.SEVEN_SCENES_AFFINE: (f"colour resampled onto depth, scale {SEVEN_SCENES_AFFINE_SCALE}, "
                                           f"offset ({dx:g}, {dy:g}) px"),
        Registration.SEVEN_SCENES_KINECT: ("colour reprojected through each depth pixel (Kinect v1 colour camera "
                                           "f 525.6, 3.2 cm beside the depth camera)"),
        Registration.CALIBRATED: "colour reprojected through each depth pixel with the recording's calibration",
        Registration.AUTO: "the recording's own model",
    }[Registration(model)]


def affine_color_onto_depth(color: np.ndarray, K: np.ndarray, scale: float,
                            offset_px: tuple[float, float]) -> np.ndarray:
    """Resample a colour image into the depth camera's pixels with an affine mapping.

    Args:
        color: (H, W, 3) uint8 colour image.
        K: (3, 3) depth intrinsics; its principal point is the centre of the scale.
        scale, offset_px: depth_px = c + scale * (colour_px - c) + offset_px.

    Returns:
        (H, W, 3) uint8 colour aligned with depth; pixels that fall outside the colour image
        are black.
    """
    c = K[:2, 2]
    # Inverse map, depth pixel -> colour pixel: colour = c + (depth - c - offset) / scale.
    shift = c - (c + np.asarray(offset_px, dtype=np.float64)) / scale
    M = np.array([[1.0 / scale, 0.0, shift[0]], [0.0, 1.0 / scale, shift[1]]])
    h, w = color.shape[:2]
    return cv2.warpAffine(color, M, (w, h), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)


@lru_cache(maxsize=4)
def _rays(h: int, w: int, fx: float, fy: float, cx: float, cy: float) -> np.ndarray:
    """(3, H, W) float32 viewing rays of the depth pixels, scaled to z = 1 (cached per camera)."""
    v, u = np.mgrid[0:h, 0:w].astype(np.float32)
    return np.stack([(u - cx) / fx, (v - cy) / fy, np.ones_like(u)])


def reproject_color_onto_depth(color: np.ndarray, depth: np.ndarray, K_depth: np.ndarray,
                               pair: CameraPair) -> np.ndarray:
    """Colour of each depth pixel: its 3D point projected into the colour camera and sampled there.

    Pixels without depth use the frame's median depth (colour is still wanted there: the 2D
    detector sees the whole image), so they shift like the bulk of the scene.

    Args:
        color: (Hc, Wc, 3) uint8 colour image, any size (``pair.K_color`` is its intrinsics).
        depth: (H, W) metres; 0 or NaN invalid.
        K_depth: (3, 3) depth intrinsics.
        pair: the colour camera.

    Returns:
        (H, W, 3) uint8 colour on the depth grid; black where the colour camera does not see.
    """
    h, w = depth.shape
    z = np.where(np.isfinite(depth) & (depth > 0), depth, np.nan).astype(np.float32)
    fill = np.nanmedian(z) if np.isfinite(z).any() else 2.0
    z = np.where(np.isnan(z), np.float32(fill), z)
    rays = _rays(h, w, K_depth[0, 0], K_depth[1, 1], K_depth[0, 2], K_depth[1, 2])  # (3, H, W), z = 1
    R, t = pair.T_color_depth[:3, :3].astype(np.float32), pair.T_color_depth[:3, 3].astype(np.float32)
    seen = np.einsum("ij,jhw->ihw", R, rays) * z + t[:, None, None]  # (3, H, W) in the colour camera
    zc = np.maximum(seen[2], np.float32(1e-6))
    map_x = pair.K_color[0, 0] * seen[0] / zc + pair.K_color[0, 2]
    map_y = pair.K_color[1, 1] * seen[1] / zc + pair.K_color[1, 2]
    map_x, map_y = map_x.astype(np.float32), map_y.astype(np.float32)
    return cv2.remap(color, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def register_color(model: Registration, color: np.ndarray, depth: np.ndarray, K_depth: np.ndarray,
                   pair: CameraPair | None = None) -> np.ndarray:
    """Apply a resolved model (never AUTO): colour on the depth grid.

    Raises:
        ValueError: AUTO, or CALIBRATED without a camera pair.
    """
    if model is Registration.NONE:
        return color
    if model is Registration.SEVEN_SCENES_AFFINE:
        return affine_color_onto_depth(color, K_depth, SEVEN_SCENES_AFFINE_SCALE, SEVEN_SCENES_AFFINE_OFFSET_PX)
    if model is Registration.SEVEN_SCENES_KINECT:
        return reproject_color_onto_depth(color, depth, K_depth, SEVEN_SCENES_PAIR)
    if model is Registration.CALIBRATED and pair is not None:
        return reproject_color_onto_depth(color, depth, K_depth, pair)
    raise ValueError(f"registration {model.value!r} cannot be applied here"
                     + (" (the recording has no colour calibration)" if model is Registration.CALIBRATED else ""))


def edge_alignment_score(color: np.ndarray, depth: np.ndarray, border_px: int = 40) -> float:
    """Mean colour gradient magnitude where depth jumps (> 0.3 per pixel on the Sobel scale).

    Higher when colour edges sit on the depth edges, i.e. the better the registration; the
    figure benchmarks/bench_registration.py compares the models with.
    """
    d = np.nan_to_num(depth).astype(np.float32)
    edges = (np.hypot(cv2.Sobel(d, cv2.CV_32F, 1, 0), cv2.Sobel(d, cv2.CV_32F, 0, 1)) > 0.3) & (d > 0)
    b = border_px
    edges[:b], edges[-b:], edges[:, :b], edges[:, -b:] = False, False, False, False
    grey = cv2.cvtColor(color, cv2.COLOR_RGB2GRAY).astype(np.float32)
    grad = np.hypot(cv2.Sobel(grey, cv2.CV_32F, 1, 0), cv2.Sobel(grey, cv2.CV_32F, 0, 1))
    return float(grad[edges].mean()) if edges.any() else 0.0
