"""What a real RGB-D camera is: the one place that says which intrinsics and image sizes can be a camera's.

A recording's (or a camera_info's) pinhole intrinsics and image size are checked against what
real RGB-D cameras have, undistorted to a pinhole:

=====================  ===========  ===============  =========================================
camera                 image        field of view    principal point
=====================  ===========  ===============  =========================================
Kinect v1 (7-Scenes)   640x480      57 x 45 deg      the centre
ScanNet (Structure)    640x480      58 x 45 deg      within 1 % of the centre
Kinect v2              1920x1080    84 x 54 deg      within 1 %
Azure Kinect colour    1280x720 ..  90 x 59 deg      within 1 %
                       4096x3072
Azure Kinect depth     320x288 ..   75 x 65 (NFOV),  within 2 %
                       1024x1024    120 x 120 (WFOV)
RealSense D435/D455    424x240 ..   69-90 x 42-65    within 2 %
                       1280x800
ZED 2 / ZED X          up to 2208   110 x 70-80      within 2 %
Zivid 2+ M130          2448x2048    35 x 29 deg      within 2 %
=====================  ===========  ===============  =========================================

So a field of view of 35-120 degrees per axis, the principal point near the centre, square pixels
and 200-4096 pixels a side cover every RGB-D camera we know. The bounds:

- **Impossible** (the recording is refused with one line, exit 2; the node ignores such a
  camera_info): a field of view below 2 degrees on either axis, or an image edge 85 degrees or
  more from the optical axis (a pinhole at 85 degrees already stretches its edge pixels 130-fold;
  f = 1e12, f = 0.001 and normalised intrinsics such as 0.914 / 0.5 land here), the principal
  point outside the image, an image
  side below 16 or above 8192 pixels (twice the largest RGB-D colour camera), focal lengths that
  are not positive finite numbers, a last row other than (0, 0, 1). These bounds also bound each
  frame's work: every ray the occupancy map casts is at most ``max_range / cos(85 deg)`` long.
- **Unusual** (runs, with one warning naming what is unusual): a field of view outside 20-130
  degrees, the principal point more than 15 % of the image size from its centre, pixels more
  than 10 % from square (fx/fy outside 0.9-1.1), a side below 120 or above 4096 pixels.

ROS-free; used by the sources (preflight.py), ``inspect`` and the node (ros/input_checks.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

__all__ = ["CameraCheck", "check_camera", "check_intrinsics", "field_of_view_deg"]

FOV_DEG = (2.0, 170.0)  # a field of view outside [2, 170) degrees on either axis is no camera's
USUAL_FOV_DEG = (20.0, 130.0)  # RGB-D cameras have 35-120 degrees; outside this, a warning
SIDE_PX = (16, 8192)  # image sides outside this are no RGB-D camera's
USUAL_SIDE_PX = (120, 4096)
USUAL_CENTRE_OFFSET = 0.15  # principal point within this fraction of the size from the image centre
USUAL_PIXEL_ASPECT = (0.9, 1.1)  # fx / fy
REAL_CAMERAS = "real RGB-D cameras have 35-120 deg"


def field_of_view_deg(focal: float, centre: float, size: int) -> float:
    """Angle (degrees) an image axis of ``size`` pixels spans for a pinhole of focal length ``focal`` and
    principal point ``centre`` (pixels); the two sides of the principal point added, so an off-centre
    principal point is measured as it is."""
    return math.degrees(math.atan2(centre, focal) + math.atan2(size - centre, focal))


def _half_angle_deg(focal: float, centre: float, size: int) -> float:
    """The larger of the angles from the optical axis to the two edges of an image axis, degrees."""
    return math.degrees(max(math.atan2(centre, focal), math.atan2(size - centre, focal)))


def check_intrinsics(K: np.ndarray, where: str) -> np.ndarray:
    """``K`` when it can be a pinhole camera's whatever the image size, else InputError naming ``where``.

    Checked once when a recording opens (the image size comes with the first frame: ``check_camera``):
    a zero or negative focal length (an uncalibrated camera, a file of zeros) makes every frame
    unusable, which is one fault of the recording, not one per frame.
    """
    for name, value, least in (("fx", K[0, 0], None), ("fy", K[1, 1], None), ("cx", K[0, 2], 0.0),
                               ("cy", K[1, 2], 0.0)):
        if not np.isfinite(value) or (value <= 0 if least is None else value < least):
            why = ("a focal length is a positive number of pixels" if least is None else
                   "the principal point lies in the image (pixels from its top-left corner)")
            raise InputError(f"{where}: {name} = {value:g}, but {why}; these intrinsics cannot be used")
    if not np.allclose(K[2], (0.0, 0.0, 1.0)):
        raise InputError(f"{where}: the last row is {' '.join(f'{v:g}' for v in K[2])}, but a pinhole camera "
                         "matrix ends with 0 0 1; these intrinsics cannot be used")
    return K


@dataclass(frozen=True)
class CameraCheck:
    """What ``check_camera`` found.

    Attributes:
        fov_deg: (horizontal, vertical) field of view, degrees.
        problem: why no camera has these intrinsics and size (one line), or "".
        unusual: what is unusual but possible, one phrase each.
    """

    fov_deg: tuple[float, float]
    problem: str
    unusual: tuple[str, ...]

    def summary(self) -> str:
        """One line for ``inspect``: the field of view, and what is unusual or impossible."""
        head = f"field of view {self.fov_deg[0]:.1f} x {self.fov_deg[1]:.1f} deg"
        if self.problem:
            return f"{head}: no camera's: {self.problem}"
        return f"{head}: unusual: {'; '.join(self.unusual)}" if self.unusual else f"{head}, as RGB-D cameras have"


def _normalised_hint(K: np.ndarray, width: int, height: int) -> str:
    """A hint when ``K`` looks divided by the image size (a common mistake), else ""."""
    if not (K[0, 0] < 10 and K[1, 1] < 10 and K[0, 2] <= 1.5 and K[1, 2] <= 1.5):
        return ""
    return (f"; they look normalised (divided by the image size): in pixels of these {width}x{height} images they "
            f"would be fx {K[0, 0] * width:.1f} fy {K[1, 1] * height:.1f} cx {K[0, 2] * width:.1f} "
            f"cy {K[1, 2] * height:.1f}")


def check_camera(K: np.ndarray, width: int, height: int) -> CameraCheck:
    """Whether intrinsics ``K`` (3x3, pixels) and a ``width`` x ``height`` image can be an RGB-D camera's.

    See the module docstring for the bounds and why. Never raises: the caller says where the
    camera comes from (``problem`` names only the values).
    """
    K = np.asarray(K, dtype=np.float64)
    fx, fy, cx, cy = (float(v) for v in (K[0, 0], K[1, 1], K[0, 2], K[1, 2]))
    if not all(math.isfinite(v) for v in (fx, fy, cx, cy)) or fx <= 0 or fy <= 0:
        return CameraCheck((0.0, 0.0), f"fx {fx:g}, fy {fy:g}: a focal length is a positive number of pixels", ())
    if not np.allclose(K[2], (0.0, 0.0, 1.0)):
        return CameraCheck((0.0, 0.0), "the last row of K is not 0 0 1 (not a pinhole camera matrix)", ())
    fov = (field_of_view_deg(fx, cx, width), field_of_view_deg(fy, cy, height))
    problems, unusual = [], []
    for name, side in (("width", width), ("height", height)):
        if not SIDE_PX[0] <= side <= SIDE_PX[1]:
            problems.append(f"an image {name} of {side} px (RGB-D images have {SIDE_PX[0]}-{SIDE_PX[1]})")
        elif not USUAL_SIDE_PX[0] <= side <= USUAL_SIDE_PX[1]:
            unusual.append(f"an image {name} of {side} px")
    for name, c, side in (("cx", cx, width), ("cy", cy, height)):
        if not 0.0 <= c <= side:
            problems.append(f"{name} {c:g} lies outside the {side} px of the image (the optical axis misses it)")
        elif abs(c - side / 2) > USUAL_CENTRE_OFFSET * side:
            unusual.append(f"{name} {c:g} is {abs(c - side / 2) / side:.0%} of the image from its centre")
    # the widest angle from the optical axis to an image edge: 90 degrees is the image plane itself
    widest = max(_half_angle_deg(f, c, side) for f, c, side in ((fx, cx, width), (fy, cy, height)))
    if not problems and (min(fov) < FOV_DEG[0] or widest >= FOV_DEG[1] / 2):
        problems.append(f"a field of view of {fov[0]:.3g} x {fov[1]:.3g} deg, up to {widest:.3g} deg from the "
                        f"optical axis (fx {fx:g}, fy {fy:g}, cx {cx:g}, cy {cy:g} on {width}x{height} images); no "
                        f"camera's view is narrower than {FOV_DEG[0]:g} deg or reaches {FOV_DEG[1] / 2:g} deg from its "
                        f"axis ({REAL_CAMERAS})")
    elif not problems:
        unusual += [f"a {axis} field of view of {angle:.0f} deg ({REAL_CAMERAS})"
                    for axis, angle in zip(("horizontal", "vertical"), fov, strict=True)
                    if not USUAL_FOV_DEG[0] <= angle <= USUAL_FOV_DEG[1]]
    aspect = fx / fy
    if not problems and not USUAL_PIXEL_ASPECT[0] <= aspect <= USUAL_PIXEL_ASPECT[1]:
        unusual.append(f"pixels {aspect:.2f} times as wide as tall (fx {fx:g}, fy {fy:g})")
    problem = "; ".join(problems[:2]) + (_normalised_hint(K, width, height) if problems else "")
    return CameraCheck(fov, problem, tuple(unusual))
