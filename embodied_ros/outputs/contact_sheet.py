"""One picture of every published object: its box drawn alone on a frame where it was seen.

The fastest way to check a map is to look at each object on its own: a tile per object, cropped
around its box in the view that showed it largest, whole and least hidden (a chair's box reaches
the floor behind a table: the view from across the table shows the table, not the chair),
captioned with its class, id, score and confidence. ``ObjectViews`` keeps that view per object while
a run goes (one small JPEG per object at most, shared by objects seen in the same frame);
``save_contact_sheet`` tiles them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..frame import Frame
from ..geometry.boxes import BOX_EDGES, box_corners
from ..geometry.transforms import invert_transform, transform_points
from ..memory.visibility import box_samples, visibility
from .class_palette import class_colour
from .pictures import save_rgb
from .scene_messages import ObjectLike

_NEAR_M = 0.1


@dataclass(frozen=True)
class _View:
    """A downscaled frame (JPEG) with the camera that took it, and how well it showed the object."""

    jpeg: bytes
    K: np.ndarray
    T_world_camera: np.ndarray
    size: tuple[int, int]
    quality: float


def _corners_in_camera(box: np.ndarray, T_world_camera: np.ndarray) -> np.ndarray:
    """(8, 3) corners of a world box in the camera's frame."""
    return transform_points(invert_transform(T_world_camera), box_corners(np.asarray(box, dtype=np.float64)[None])[0])


def _project(box: np.ndarray, K: np.ndarray, T_world_camera: np.ndarray) -> np.ndarray | None:
    """(8, 2) pixel corners of a world box, or None when a corner is behind the camera."""
    cam = _corners_in_camera(box, T_world_camera)
    if (cam[:, 2] < _NEAR_M).any():
        return None
    uv = cam @ K.T
    return uv[:, :2] / uv[:, 2:3]


def _edges_in_front(box: np.ndarray, K: np.ndarray, T_world_camera: np.ndarray) -> np.ndarray:
    """(E, 2, 2) pixel segments of the box's edges, each cut where it goes behind the camera (the
    best view was chosen for an earlier box; the final one may reach behind that camera)."""
    cam = _corners_in_camera(box, T_world_camera)
    segments = []
    for i, j in BOX_EDGES:
        a, b = cam[i], cam[j]
        if a[2] < _NEAR_M and b[2] < _NEAR_M:
            continue
        if a[2] < _NEAR_M or b[2] < _NEAR_M:
            inside, outside = (a, b) if a[2] >= _NEAR_M else (b, a)
            outside = inside + (outside - inside) * (inside[2] - _NEAR_M) / (inside[2] - outside[2])
            a, b = inside, outside
        segments.append((a, b))
    if not segments:
        return np.zeros((0, 2, 2))
    uv = np.asarray(segments) @ K.T
    return uv[..., :2] / uv[..., 2:3]


def _quality(uv: np.ndarray | None, width: int, height: int) -> float:
    """Visible area of a projected box, in pixels, times the fraction of it inside the image."""
    if uv is None:
        return 0.0
    x0, y0 = uv.min(axis=0)
    x1, y1 = uv.max(axis=0)
    area = max(x1 - x0, 0.0) * max(y1 - y0, 0.0)
    inside = max(min(x1, width) - max(x0, 0), 0.0) * max(min(y1, height) - max(y0, 0), 0.0)
    return inside * (inside / area) if area > 0 else 0.0


def _shown(box: np.ndarray, surface: np.ndarray, frame: Frame, samples: int = 64) -> float:
    """How much of an object the frame shows: the fraction of its surface points seen at their depth
    (without a surface: of its box's inner points not hidden behind something nearer)."""
    if len(surface):
        step = max(1, len(surface) // samples)
        return visibility([surface[::step]], np.zeros(1), frame)[0].seen_fraction
    view = visibility([box_samples(box)], np.array([0.5 * float(np.max(box[3:6]))]), frame)[0]
    return 1.0 - view.hidden / max(view.n, 1)


class ObjectViews:
    """The best view of each object seen so far (bounded: one per object).

    Args:
        width: stored frames are scaled to this width (pixels).
    """

    def __init__(self, width: int = 480) -> None:
        self.width = width
        self._views: dict[int, _View] = {}

    def __len__(self) -> int:
        return len(self._views)

    def observe(self, frame: Frame, seen: Iterable[tuple[int, np.ndarray, np.ndarray]]) -> None:
        """Offer ``frame`` as a view of the objects detected in it: (id, current world box, (P, 3)
        points of its own surface, possibly none) triples."""
        scale = self.width / frame.width
        size = (self.width, int(round(frame.height * scale)))
        K = frame.K.copy()
        K[:2] *= scale
        encoded: bytes | None = None
        for obj_id, box, surface in seen:
            quality = _quality(_project(box, K, frame.T_world_camera), *size) * _shown(box, surface, frame) ** 2
            if quality <= 0 or quality <= getattr(self._views.get(obj_id), "quality", 0.0):
                continue
            if encoded is None:
                small = cv2.resize(frame.color, size, interpolation=cv2.INTER_AREA)
                encoded = cv2.imencode(".jpg", cv2.cvtColor(small, cv2.COLOR_RGB2BGR),
                                       [cv2.IMWRITE_JPEG_QUALITY, 85])[1].tobytes()
            self._views[obj_id] = _View(encoded, K, frame.T_world_camera.copy(), size, quality)

    def merged(self, pairs: Iterable[tuple[int, int]]) -> None:
        """Objects merged into others: (removed, survivor) pairs; the survivor keeps the better view."""
        for gone, keep in pairs:
            view = self._views.pop(gone, None)
            if view is not None and view.quality > getattr(self._views.get(keep), "quality", 0.0):
                self._views[keep] = view

    def tile(self, obj: ObjectLike, size: int = 200) -> np.ndarray:
        """(size + caption, size, 3) uint8 RGB tile of one object."""
        caption = f"{obj.class_name} #{obj.id}  s {obj.score:.2f}  c {getattr(obj, 'confidence', 1.0):.2f}"
        view = self._views.get(obj.id)
        image = np.full((size, size, 3), 60, np.uint8)
        if view is not None:
            frame = cv2.cvtColor(cv2.imdecode(np.frombuffer(view.jpeg, np.uint8), cv2.IMREAD_COLOR),
                                 cv2.COLOR_BGR2RGB)
            segments = _edges_in_front(obj.box, view.K, view.T_world_camera)
            if len(segments):
                colour = class_colour(obj.class_name)
                for a, b in segments:
                    cv2.line(frame, tuple(int(v) for v in a), tuple(int(v) for v in b), colour, 2, cv2.LINE_AA)
                image = _crop_square(frame, segments.reshape(-1, 2), size)
        band = np.full((22, size, 3), 255, np.uint8)
        cv2.putText(band, caption, (4, 15), cv2.FONT_HERSHEY_SIMPLEX, 0.38, (0, 0, 0), 1, cv2.LINE_AA)
        return np.concatenate([image, band], axis=0)


def _crop_square(image: np.ndarray, uv: np.ndarray, size: int, margin: float = 0.35) -> np.ndarray:
    """A square crop around projected corners (with a margin), resized to ``size``."""
    h, w = image.shape[:2]
    lo, hi = np.clip(uv.min(axis=0), 0, [w, h]), np.clip(uv.max(axis=0), 0, [w, h])
    centre = 0.5 * (lo + hi)
    half = max(0.5 * float((hi - lo).max()) * (1 + margin), 24.0)
    half = min(half, 0.5 * max(w, h))
    x0, y0 = int(centre[0] - half), int(centre[1] - half)
    x1, y1 = int(centre[0] + half), int(centre[1] + half)
    padded = cv2.copyMakeBorder(image, max(0, -y0), max(0, y1 - h), max(0, -x0), max(0, x1 - w),
                                cv2.BORDER_CONSTANT, value=(60, 60, 60))
    crop = padded[y0 + max(0, -y0): y1 + max(0, -y0), x0 + max(0, -x0): x1 + max(0, -x0)]
    return cv2.resize(crop, (size, size), interpolation=cv2.INTER_AREA)


def save_contact_sheet(path: Path, objects: Sequence[ObjectLike], views: ObjectViews, columns: int = 6,
                       size: int = 200, title: str = "") -> None:
    """Tile every object's picture into one PNG (a grey tile says an object has no stored view)."""
    tiles = [views.tile(o, size) for o in objects] or [np.full((size + 22, size, 3), 255, np.uint8)]
    rows = -(-len(tiles) // columns)
    tiles += [np.full_like(tiles[0], 255)] * (rows * columns - len(tiles))
    sheet = np.concatenate([np.concatenate(tiles[r * columns:(r + 1) * columns], axis=1) for r in range(rows)])
    if title:
        band = np.full((28, sheet.shape[1], 3), 255, np.uint8)
        cv2.putText(band, title, (6, 20), cv2.FONT_HERSHEY_SIMPLEX, 0.55, (0, 0, 0), 1, cv2.LINE_AA)
        sheet = np.concatenate([band, sheet])
    save_rgb(path, sheet)
