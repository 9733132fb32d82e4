"""Pictures people look at instead of reading numbers: boxes drawn on frames, a top-down map."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np

from ..detections import Detections2D
from ..display_text import for_picture
from ..frame import Frame
from ..geometry.boxes import BOX_EDGES, as_boxes, box_corners
from ..geometry.transforms import invert_transform, transform_points
from ..occupancy.results import OccupiedVoxels
from .class_palette import class_colour, class_colour_float
from .scene_messages import ObjectLike

_NEAR_M = 0.05


def _clip_segment_to_near_plane(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Clip a camera-frame segment to z >= near; None when wholly behind the camera."""
    if a[2] < _NEAR_M and b[2] < _NEAR_M:
        return None
    if a[2] < _NEAR_M or b[2] < _NEAR_M:
        t = (_NEAR_M - a[2]) / (b[2] - a[2])
        p = a + t * (b - a)
        return (p, b) if a[2] < _NEAR_M else (a, p)
    return a, b


def visible_in_frame(frame: Frame, box: np.ndarray, occlusion_margin_m: float = 0.25) -> bool:
    """Whether a world box's centre is in the frame's view and not hidden behind nearer depth.

    The box is hidden when the depth measured around its centre's pixel is nearer than the
    box's nearest corner by more than ``occlusion_margin_m``.
    """
    T_cam_world = invert_transform(frame.T_world_camera)
    cam_corners = transform_points(T_cam_world, box_corners(box)[0])
    centre = transform_points(T_cam_world, np.asarray(box, dtype=np.float64)[None, :3])[0]
    if centre[2] < _NEAR_M:
        return False
    u, v = (frame.K @ (centre / centre[2]))[:2]
    if not (0 <= u < frame.width and 0 <= v < frame.height):
        return False
    r = max(2, frame.width // 160)
    patch = frame.depth[max(0, int(v) - r): int(v) + r + 1, max(0, int(u) - r): int(u) + r + 1]
    patch = patch[np.isfinite(patch) & (patch > 0)]
    if patch.size == 0:
        return True  # no measurement: nothing says it is hidden
    return float(np.median(patch)) >= cam_corners[:, 2].min() - occlusion_margin_m


def draw_boxes_on_frame(frame: Frame, objects: Sequence[ObjectLike], thickness: int = 2,
                        visible_only: bool = True) -> np.ndarray:
    """The frame's colour image with the objects' world boxes projected into it.

    Args:
        frame: the frame to draw on.
        objects: scene objects (world frame).
        thickness: line width in pixels.
        visible_only: draw only objects whose centre is in view and not occluded (see
            ``visible_in_frame``); False draws every box that projects into the image.

    Returns:
        (H, W, 3) uint8 RGB image.
    """
    image = np.ascontiguousarray(frame.color.copy())
    if visible_only:
        objects = [o for o in objects if visible_in_frame(frame, o.box)]
    if not objects:
        return image
    T_cam_world = invert_transform(frame.T_world_camera)
    corners = box_corners(as_boxes(np.stack([o.box for o in objects])))  # (N, 8, 3) world
    h, w = image.shape[:2]
    font = 0.45 * max(1.0, w / 640)
    for obj, world_corners in zip(objects, corners, strict=True):
        cam = transform_points(T_cam_world, world_corners)
        if (cam[:, 2] < _NEAR_M).all():
            continue
        color = class_colour(obj.class_name)
        drawn: list[np.ndarray] = []
        for i, j in BOX_EDGES:
            seg = _clip_segment_to_near_plane(cam[i], cam[j])
            if seg is None:
                continue
            uv = np.stack([frame.K @ p / p[2] for p in seg])[:, :2]
            a, b = (tuple(int(v) for v in np.round(p)) for p in uv)
            ok, p0, p1 = cv2.clipLine((0, 0, w, h), a, b)
            if ok:
                cv2.line(image, p0, p1, color, thickness, cv2.LINE_AA)
                drawn += [np.array(p0), np.array(p1)]
        if drawn:
            top_left = np.min(drawn, axis=0)
            label = f"{obj.class_name} #{obj.id}"
            org = (int(np.clip(top_left[0], 0, w - 80)), int(np.clip(top_left[1] - 6, 14, h - 4)))
            cv2.putText(image, label, org, cv2.FONT_HERSHEY_SIMPLEX, font, (0, 0, 0), 3, cv2.LINE_AA)
            cv2.putText(image, label, org, cv2.FONT_HERSHEY_SIMPLEX, font, color, 1, cv2.LINE_AA)
    return image


def draw_detections(rgb: np.ndarray, detections: Detections2D, min_score: float = 0.0,
                    thickness: int = 2) -> np.ndarray:
    """A copy of an RGB image with its 2D detections drawn: a box and "class score" per detection.

    Args:
        rgb: (H, W, 3) uint8 RGB image the detections were made on.
        detections: boxes in that image's pixels.
        min_score: detections below it are left out (a detector's low-score boxes would bury the rest).
        thickness: line width in pixels at 640 px image width (scaled with the width).

    Returns:
        (H, W, 3) uint8 RGB image.
    """
    image = np.ascontiguousarray(rgb.copy())
    h, w = image.shape[:2]
    scale = max(1.0, w / 640)
    font, line = 0.5 * scale, max(1, round(thickness * scale))
    keep = np.flatnonzero(np.asarray(detections.scores) >= min_score)
    for k in keep[np.argsort(np.asarray(detections.scores)[keep])]:  # the best drawn last, on top
        name = detections.class_names[int(detections.labels[k])]
        colour = class_colour(name)
        x0, y0, x1, y1 = (int(round(v)) for v in np.clip(detections.boxes_xyxy[k], 0, [w - 1, h - 1, w - 1, h - 1]))
        cv2.rectangle(image, (x0, y0), (x1, y1), colour, line, cv2.LINE_AA)
        text = f"{name} {detections.scores[k]:.2f}"
        (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, font, 1)
        ty = y0 - 4 if y0 - th - base - 4 >= 0 else y0 + th + 4  # above the box, or inside it at the top edge
        cv2.rectangle(image, (x0, ty - th - 3), (min(w - 1, x0 + tw + 4), ty + base - 1), (0, 0, 0), cv2.FILLED)
        cv2.putText(image, text, (x0 + 2, ty), cv2.FONT_HERSHEY_SIMPLEX, font, colour, 1, cv2.LINE_AA)
    return image


def save_rgb(path: Path, rgb: np.ndarray) -> None:
    """Write an RGB uint8 image as PNG (as JPEG when ``path`` ends in .jpg or .jpeg).

    Encoded in memory and written by Python, so a full or read-only disk is an OSError that names
    its cause (cv2.imwrite only answers False).
    """
    suffix = Path(path).suffix.lower()
    ok, png = cv2.imencode(suffix if suffix in (".jpg", ".jpeg") else ".png", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    if not ok:
        raise ValueError(f"cannot encode a {rgb.shape} {rgb.dtype} image as PNG")
    Path(path).write_bytes(png.tobytes())


def _occupancy_raster(occupancy: OccupiedVoxels) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """Occupied voxels seen from above as an RGBA image, one pixel per voxel column.

    A column shows its highest occupied voxel: grey, darker the higher it is, or the class
    colour where detections voted for it.
    """
    s = occupancy.voxel_size
    ij = np.floor(occupancy.centers[:, :2] / s).astype(np.int64)
    lo = ij.min(axis=0)
    ij -= lo
    shape = ij.max(axis=0) + 1
    z = occupancy.centers[:, 2]
    order = np.argsort(z)  # later (higher) voxels overwrite lower ones in the same column
    z_rel = (z - z.min()) / max(float(np.ptp(z)), 1e-6)
    grey = 0.85 - 0.55 * z_rel
    rgba = np.zeros((shape[1], shape[0], 4))
    names = occupancy.class_names
    for k in order:
        colour = class_colour_float(names[k]) if names[k] else (grey[k], grey[k], grey[k])
        rgba[ij[k, 1], ij[k, 0]] = (*colour, 0.8)
    x0, y0 = lo * s
    return rgba, (x0, x0 + shape[0] * s, y0, y0 + shape[1] * s)


def save_top_down_map(
    path: Path,
    objects: Sequence[ObjectLike],
    occupancy: OccupiedVoxels | None,
    camera_positions: np.ndarray | None = None,
    title: str = "",
) -> None:
    """Top-down (x-y, world z up) map: occupied voxels, object footprints with labels, camera path.

    Args:
        path: PNG file to write.
        objects: scene objects (world frame).
        occupancy: occupied voxels, drawn from above (grey by height, class colour where voted).
        camera_positions: (T, 3) camera centres along the trajectory, drawn as a line.
        title: figure title.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Polygon

    fig, ax = plt.subplots(figsize=(9, 9), dpi=110)
    if occupancy is not None and len(occupancy.centers):
        image, extent = _occupancy_raster(occupancy)
        ax.imshow(image, origin="lower", extent=extent, interpolation="nearest", zorder=0)
    if camera_positions is not None and len(camera_positions):
        ax.plot(camera_positions[:, 0], camera_positions[:, 1], "-", color="0.2", lw=1.2, label="camera path")
        ax.plot(*camera_positions[0, :2], "o", color="0.2", ms=5)
    if objects:
        corners = box_corners(as_boxes(np.stack([o.box for o in objects])))
        for obj, c in zip(objects, corners, strict=True):
            color = class_colour_float(obj.class_name)
            ax.add_patch(Polygon(c[:4, :2], closed=True, fill=False, edgecolor=color, lw=2))
            ax.text(obj.box[0], obj.box[1], for_picture(f"{obj.class_name} #{obj.id}"), fontsize=7, ha="center",
                    va="center", color=color, bbox=dict(facecolor="white", alpha=0.6, lw=0, pad=1))
    ax.set_aspect("equal")
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    ax.grid(True, lw=0.3)
    ax.set_title(for_picture(title or f"{len(objects)} objects, top-down (world z up)"))
    if camera_positions is not None and len(camera_positions):
        ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
