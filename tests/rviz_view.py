"""What a user sees in an RViz screenshot, worked out from what RViz was sent and how its view is set.

RViz's orbit view (rviz_default_plugins OrbitViewController, 14.x) puts its camera at
``focal + distance * (cos yaw cos pitch, sin yaw cos pitch, sin pitch)`` looking at the focal point, z up,
the focal point being the target frame's position plus the config's ``Focal Point``; OGRE's default
vertical field of view is 45 degrees, the aspect ratio the 3D view's. With that, the markers RViz was
sent (tests/rviz_probe.py) are projected into the screenshot: where each box's edges and each label
must appear, so the picture can be checked against them.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

FOV_Y = np.pi / 4  # OGRE's Frustum default; RViz's orbit view does not change it
ERROR_RED = np.array([192, 32, 32])  # rviz_common StatusProperty::statusColor(Error): names of failing displays
CHAR_WIDTH = 0.45  # a label character's mean width in text heights (measured: RViz's Liberation Sans)


@dataclass(frozen=True)
class OrbitView:
    """RViz's orbit camera in the fixed frame, and the 3D view's rectangle in the screenshot (pixels)."""

    focal: np.ndarray
    distance: float
    yaw: float
    pitch: float
    rect: tuple[int, int, int, int]  # x0, y0, width, height

    @property
    def eye(self) -> np.ndarray:
        c = np.cos(self.pitch)
        return self.focal + self.distance * np.array([np.cos(self.yaw) * c, np.sin(self.yaw) * c, np.sin(self.pitch)])

    @property
    def focal_px(self) -> float:
        """Pixels per metre at one metre's depth."""
        return self.rect[3] / 2 / np.tan(FOV_Y / 2)

    def project(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, 3) fixed-frame points -> ((N, 2) screenshot pixels, (N,) depths in metres)."""
        forward = self.focal - self.eye
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, [0.0, 0.0, 1.0])
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        d = np.asarray(points, dtype=np.float64).reshape(-1, 3) - self.eye
        depth = d @ forward
        x0, y0, w, h = self.rect
        f = self.focal_px
        u = x0 + w / 2 + f * (d @ right) / depth
        v = y0 + h / 2 - f * (d @ up) / depth
        return np.column_stack([u, v]), depth

    def inside(self, pixels: np.ndarray, margin: int = 0) -> np.ndarray:
        x0, y0, w, h = self.rect
        return ((pixels[:, 0] >= x0 + margin) & (pixels[:, 0] < x0 + w - margin)
                & (pixels[:, 1] >= y0 + margin) & (pixels[:, 1] < y0 + h - margin))


def orbit_view(config: dict, frames: dict[str, dict], fixed_frame: str, rect: tuple[int, int, int, int]) -> OrbitView:
    """The config's current orbit view, its target frame placed as ``frames`` says ({name: {parent, xyz}})."""
    view = config["Visualization Manager"]["Views"]["Current"]
    assert view["Class"] == "rviz_default_plugins/Orbit", view["Class"]
    target = view.get("Target Frame", "<Fixed Frame>")
    origin = np.zeros(3)
    if target not in ("<Fixed Frame>", fixed_frame):
        assert target in frames, f"the view's target frame {target!r} was never sent (sent: {sorted(frames)})"
        assert frames[target]["parent"] == fixed_frame, frames[target]
        origin = np.array(frames[target]["xyz"])
    focal = origin + np.array([float(view["Focal Point"][k]) for k in "XYZ"])
    return OrbitView(focal, float(view["Distance"]), float(view["Yaw"]), float(view["Pitch"]), rect)


def render_panel(image: np.ndarray, background: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """The 3D view's rectangle (x0, y0, w, h): the rows and columns mostly of the background colour around
    its largest region (thin lines and text closed over, stray pixels of that colour elsewhere left out)."""
    mask = (np.abs(image.astype(np.int16) - np.array(background)).max(axis=2) <= 2).astype(np.uint8)
    closed = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((15, 15), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(closed)
    if n < 2:
        return (0, 0, 0, 0)
    x, y, w, h = (int(v) for v in stats[1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA])), :4])
    region = mask[y:y + h, x:x + w]
    rows = np.flatnonzero(region.mean(axis=1) > 0.2)
    cols = np.flatnonzero(region.mean(axis=0) > 0.2)
    return x + int(cols[0]), y + int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)


def edge_samples(view: OrbitView, points: np.ndarray, step_px: float = 4.0) -> np.ndarray:
    """Pixels every ``step_px`` along a LINE_LIST's projected segments (points: (2K, 3)), (M, 2)."""
    pixels, _ = view.project(points)
    out = []
    for a, b in pixels.reshape(-1, 2, 2):
        n = max(2, int(np.linalg.norm(b - a) / step_px))
        out.append(a + np.linspace(0.0, 1.0, n)[:, None] * (b - a))
    return np.concatenate(out) if out else np.zeros((0, 2))


def colour_near(image: np.ndarray, pixels: np.ndarray, colour: np.ndarray, radius: int = 2,
                tolerance: float = 60.0) -> np.ndarray:
    """(M,) whether some pixel within ``radius`` of each of ``pixels`` has about ``colour`` (RGB 0-255)."""
    h, w = image.shape[:2]
    close = np.linalg.norm(image.astype(np.float64) - colour, axis=2) <= tolerance
    close = cv2.dilate(close.astype(np.uint8), np.ones((2 * radius + 1, 2 * radius + 1), np.uint8)) > 0
    u = np.clip(np.round(pixels[:, 0]).astype(int), 0, w - 1)
    v = np.clip(np.round(pixels[:, 1]).astype(int), 0, h - 1)
    return close[v, u]


def label_rects(view: OrbitView, labels: list[dict]) -> np.ndarray:
    """(N, 4) screen rectangles (x0, y0, x1, y1) of view-facing texts, centred on their positions."""
    rects = []
    for label in labels:
        pixels, depth = view.project(np.array(label["position"]))
        (u, v), height = pixels[0], label["height"] * view.focal_px / depth[0]
        width = CHAR_WIDTH * height * len(label["text"])
        rects.append((u - width / 2, v - height / 2, u + width / 2, v + height / 2))
    return np.array(rects).reshape(-1, 4)


def lines_mask(view: OrbitView, shape: tuple[int, ...], line_lists: list[np.ndarray], width: int = 7) -> np.ndarray:
    """(H, W) bool: where the projected LINE_LISTs (each (2K, 3) points) are drawn, ``width`` px wide."""
    mask = np.zeros(shape[:2], np.uint8)
    for points in line_lists:
        pixels, depth = view.project(points)
        for (a, b), (da, db) in zip(pixels.reshape(-1, 2, 2), depth.reshape(-1, 2), strict=True):
            if da > 0 and db > 0:
                cv2.line(mask, tuple(int(v) for v in np.round(a)), tuple(int(v) for v in np.round(b)), 1, width)
    return mask > 0


def label_ink(image: np.ndarray, rect: np.ndarray, colour: np.ndarray, ignore: np.ndarray,
              tolerance: float = 90.0) -> tuple[float, float]:
    """How a label is drawn: (share of its rectangle in its colour, pixels of that colour in the bands of the
    same width left and right of it per such pixel inside), not counting the ``ignore`` mask (lines, other
    labels). Text torn apart, or drawn elsewhere, spills out of its rectangle."""
    x0, y0, x1, y1 = np.round(rect).astype(int)
    w = x1 - x0
    close = (np.linalg.norm(image.astype(np.float64) - colour, axis=2) <= tolerance) & ~ignore
    inside = close[y0:y1, x0:x1].sum()
    beside = close[y0:y1, max(0, x0 - w):x0].sum() + close[y0:y1, x1:x1 + w].sum()
    return float(inside / max(1, (~ignore[y0:y1, x0:x1]).sum())), float(beside / max(1, inside))


def overlap_fraction(rects: np.ndarray) -> float:
    """Area where two or more rectangles overlap, over the area the rectangles cover."""
    if len(rects) < 2:
        return 0.0
    x0, y0 = np.floor(rects[:, :2].min(axis=0)).astype(int)
    x1, y1 = np.ceil(rects[:, 2:].max(axis=0)).astype(int)
    count = np.zeros((y1 - y0 + 1, x1 - x0 + 1), np.int32)
    for a, b, c, d in np.round(rects - [x0, y0, x0, y0]).astype(int):
        count[b:d, a:c] += 1
    covered = (count > 0).sum()
    return float((count > 1).sum() / covered) if covered else 0.0


def error_pixels(image: np.ndarray, region: tuple[int, int, int, int]) -> int:
    """Pixels of RViz's error colour (a failing display's name and status) in ``region`` (x0, y0, w, h)."""
    x, y, w, h = region
    crop = image[y:y + h, x:x + w].astype(np.int16)
    return int((np.abs(crop - ERROR_RED).max(axis=2) <= 12).sum())
