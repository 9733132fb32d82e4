"""Lift 2D image detections to gravity-aligned 3D boxes through the frame's depth."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..classes import SURFACE_CLASSES
from ..detections import Detections2D, Detections3D, class_key
from ..errors import ConfigError
from ..frame import Frame
from ..geometry.boxes import box_corners, canonical_yaw_box
from ..geometry.fitting import fit_upright_boxes
from ..geometry.grouped import group_medians
from .depth_clusters import (
    DepthPoints,
    Voxels,
    component_labels,
    core_clusters,
    group_sums,
    neighbour_pairs,
    ring_heights,
    sample_depth,
    split_by_owner,
    support_layers,
    voxelize,
)

__all__ = ["LiftingParams", "colour_box_to_depth_px", "colour_to_depth_px", "component_labels", "depth_to_colour_px",
           "lift_detections", "surround_height"]


@dataclass(frozen=True)
class LiftingParams:
    """How a 2D box becomes a 3D box. Defaults suit registered 640x480 RGB-D at 0.3-5 m."""

    # Colour -> depth pixel mapping for sensors whose depth is NOT registered to colour:
    # depth_px = c + depth_scale * (colour_px - c) + depth_offset_px, with c the principal
    # point of K (K is taken to be the depth camera's intrinsics). Registered data: (1, (0, 0)).
    # 7-Scenes redkitchen (Kinect v1, depth K with f = 585, colour really f ~ 529): fitted on
    # depth/colour edges of 50 frames, scale 1.105 and offset (7, 2) px (per-frame fits agree:
    # offsets 5..20, 1..7 px at that scale, while with scale 1 they scatter over -10..35 px). It
    # raises the colour gradient found under depth edges 1.5-1.9x; a pure shift (14, 14) scores
    # below no correction. sources.folders.SevenScenesFolder applies this mapping to the colour
    # image itself by default, so its frames are registered and need (1, (0, 0)) here.
    depth_scale: float = 1.0
    # (dx, dy) pixels added after scaling: depth pixels of a colour box lie at box + offset.
    depth_offset_px: tuple[float, float] = (0.0, 0.0)
    # Fraction of the box width/height removed (half per side) to get the box's "core"; points
    # come from the whole box, the core only decides which 3D cluster is the object, so the
    # object's silhouette edges still count towards its extents.
    shrink: float = 0.15
    # Depth pixels sampled per detection at most (a stride keeps big boxes fast).
    max_pixels: int = 4000
    # Fewer valid depth pixels (or object voxels) than this and the detection is dropped.
    min_points: int = 20
    # Depth readings outside [min_depth, max_depth] metres are treated as invalid (sensor range).
    min_depth: float = 0.2
    max_depth: float = 6.0
    # Voxel edge (m) of the downsampling that evens out the near/far point density.
    voxel_size: float = 0.02
    # Euclidean clustering radius (m); grown with depth and stride so sparse far surfaces connect.
    cluster_radius: float = 0.05
    # A horizontal layer at the bottom of the points holding this fraction of the voxels (and
    # support_density times the mean of other layers) is the support (floor, table top) and is
    # removed before clustering, which also cuts the floor that joins an object to a wall.
    support_fraction: float = 0.1
    support_density: float = 3.0
    # Classes that ARE support surfaces: their bottom layer is only removed when another dense
    # layer (the top) lies at least support_class_min_height metres above it.
    surface_classes: tuple[str, ...] = SURFACE_CLASSES
    support_class_min_height: float = 0.3
    # Percentiles (low, high) of the object's points that bound the box along each axis
    # (trims stray depth at the silhouette).
    trim_percentiles: tuple[float, float] = (2.0, 98.0)
    # Boxes with any extent above max_extent or all extents below min_extent (m) are rejected.
    max_extent: float = 5.0
    min_extent: float = 0.02
    # Score = 2D score * ((1 - w) + w * f), f = fraction of the box's sampled pixels (valid depth
    # or not) that end on the object: little depth support lowers the score; w = 0 keeps 2D's.
    support_score_weight: float = 0.5
    # Amodal prior: (class name, minimum horizontal extent in m). One view sees only the front
    # faces, so a partly seen object looks thin; a box thinner than this is grown away from the
    # camera. Empty by default: the box then bounds what was observed.
    min_horizontal_size: tuple[tuple[str, float], ...] = ()
    # Amodal prior along the view: (class name, minimum extent in m) of the horizontal box axis
    # closest to the viewing direction, the one a single view cuts short (a book's spine hides
    # its depth). Grown away from the camera like min_horizontal_size. Empty by default.
    min_extent_along_view: tuple[tuple[str, float], ...] = ()
    # (class name, metres): a lifted box whose largest extent, as observed (before the amodal
    # priors), is below this is dropped: specks of a class's image mask are not objects (a door
    # is not 5 cm tall). Empty by default.
    min_largest_extent: tuple[tuple[str, float], ...] = ()
    # Classes lifted from their own pixels when lift_detections is given a region image (the
    # rest from their whole 2D box). Objects among clutter gain (a book's box holds the table
    # around it); openings in a wall lose (their regions stop short of their frames).
    region_classes: tuple[str, ...] = ()
    # Classes that stand on the floor unless seen on something else: when no support was found
    # under such an object and its image box ends on something nearer to the camera (or at the
    # image's edge), its lower part is hidden, and the box is extended down to the floor
    # (lift_detections' floor_z; a tall plant behind a chair shows only its leaves).
    floor_classes: tuple[str, ...] = ()
    # The hidden part: rows below the 2D box (this fraction of its height, at least 3) whose
    # median depth lies at least occluder_margin metres nearer than the object's nearest point.
    occluder_rows: float = 0.15
    occluder_margin: float = 0.1
    # The object is at least as wide, across the view, as its 2D box at its nearest depth. A box
    # covering less than this fraction of that width (a screen returns almost no depth, so only
    # a sliver of its frame is lifted) is widened to it, centred on the 2D box's centre ray,
    # along whichever box axis lies closer to the view's horizontal. 0 disables it.
    min_lateral_coverage: float = 0.7
    # The surface around a detection (Detections3D.surround_z): the densest horizontal layer
    # (surround_layer metres thick, holding at least surround_share of them) of the depth points in
    # a ring around its 2D box, surround_ring times the box's size wide. A sink's points lie below
    # the counter around it; a wooden model standing on the counter rises from it.
    surround_ring: float = 0.25
    surround_layer: float = 0.02
    surround_share: float = 0.2

    def __post_init__(self) -> None:
        if not 0.0 <= self.shrink < 1.0:
            raise ConfigError(f"lifting: shrink must be in [0, 1), got {self.shrink}")
        if self.depth_scale <= 0 or self.voxel_size <= 0 or self.cluster_radius <= 0:
            raise ConfigError("lifting: depth_scale, voxel_size and cluster_radius must be positive")
        if not 0 <= self.min_depth < self.max_depth:
            raise ConfigError(f"lifting: need 0 <= min_depth < max_depth, got {self.min_depth}, {self.max_depth}")
        lo, hi = self.trim_percentiles
        if not 0 <= lo < hi <= 100:
            raise ConfigError(f"lifting: trim_percentiles must satisfy 0 <= low < high <= 100, got {lo}, {hi}")
        if self.min_points < 3 or self.max_pixels < self.min_points:
            raise ConfigError("lifting: need 3 <= min_points <= max_pixels")
        if any(not v >= 0 for _, v in self.min_largest_extent):
            raise ConfigError(f"lifting: min_largest_extent values must be >= 0, got {self.min_largest_extent}")
        if self.occluder_rows < 0 or self.occluder_margin < 0:
            raise ConfigError(f"lifting: occluder_rows and occluder_margin must be >= 0, got "
                              f"{self.occluder_rows}, {self.occluder_margin}")


def colour_to_depth_px(uv: np.ndarray, K: np.ndarray, params: LiftingParams) -> np.ndarray:
    """Map (..., 2) colour pixels (u, v) to where they are seen in the depth image (same shape)."""
    c = K[:2, 2]
    return c + params.depth_scale * (np.asarray(uv, dtype=np.float64) - c) + np.asarray(params.depth_offset_px)


def depth_to_colour_px(uv: np.ndarray, K: np.ndarray, params: LiftingParams) -> np.ndarray:
    """The inverse of colour_to_depth_px: (..., 2) depth pixels to the colour pixels seen there."""
    c = K[:2, 2]
    return c + (np.asarray(uv, dtype=np.float64) - np.asarray(params.depth_offset_px) - c) / params.depth_scale


def colour_box_to_depth_px(box_xyxy: np.ndarray, K: np.ndarray, params: LiftingParams) -> np.ndarray:
    """Map (..., 4) colour-image boxes (x0, y0, x1, y1) to depth-image pixel boxes (same shape)."""
    b = np.asarray(box_xyxy, dtype=np.float64)
    corners = b.reshape(*b.shape[:-1], 2, 2)  # (..., corner, uv)
    return colour_to_depth_px(corners, K, params).reshape(b.shape)


def lift_detections(frame: Frame, dets2d: Detections2D, params: LiftingParams,
                    regions: np.ndarray | None = None, floor_z: float | None = None) -> Detections3D:
    """Lift each 2D detection to one gravity-aligned 3D box in the frame's world.

    Per detection: sample the depth pixels of the box (mapped to depth pixels, see
    LiftingParams; only its own region's, when ``regions`` is given), unproject them with K,
    move them to the world with T_world_camera, voxel downsample, split into Euclidean clusters
    and keep the one with most points in the box's core; remove the support layer (floor, table
    top) at its bottom and cluster again; fit a box: yaw from the minimum-area rectangle of the
    cluster on the floor plane, extents from percentiles, bottom extended to the support it
    stood on (or to a hidden floor, see LiftingParams.floor_classes); then the amodal priors.
    Detections that find too little depth, or give implausible sizes, are dropped (never an
    exception). All of a frame's detections go through each step together (network/depth_clusters.py):
    one pass over the frame's depth, the same boxes as one detection at a time.

    Args:
        frame: posed RGB-D frame; its world must be z-up (gravity) for the boxes to be upright.
        dets2d: image detections in colour pixels.
        params: lifting settings.
        regions: optional (h, w) int image over the whole colour image, at any resolution
            (scaled to the frame): the index of the detection each pixel belongs to, -1 for
            none. A box also holds its surroundings (the table around a book lying at an angle,
            the neighbours of a book on a shelf); its region holds only the object.
        floor_z: the floor's height in the world, when known: objects of
            ``params.floor_classes`` whose bottom is hidden are extended down to it.

    Returns:
        Detections3D in ``frame.world_frame`` with boxes (M, 9), M <= len(dets2d), each
        (x, y, z, dx, dy, dz, yaw, 0, 0) canonicalised (dx >= dy, yaw in [-pi/2, pi/2)).
    """
    names = tuple(dets2d.class_names)
    if regions is not None and regions.ndim != 2:
        raise ValueError(f"lifting: regions must be an (h, w) image, got shape {regions.shape}")
    n = len(dets2d)
    if n == 0:
        return Detections3D.empty(names, frame.world_frame)
    det_names = [names[int(label)] for label in dets2d.labels]
    boxes_px = colour_box_to_depth_px(np.asarray(dets2d.boxes_xyxy, dtype=np.float64).reshape(n, 4), frame.K, params)
    own = [_region_test(regions, i, frame, params) if regions is not None and _listed(name, params.region_classes)
           else None for i, name in enumerate(det_names)]
    pts = sample_depth(frame, boxes_px, params.shrink, params.max_pixels, params.min_points,
                       (params.min_depth, params.max_depth), own)
    clusters = _object_clusters(pts, det_names, params)
    boxes, labels, scores, regions_2d, kept = [], [], [], [], []
    cam_pos = frame.T_world_camera[:3, 3]
    w = params.support_score_weight
    for i, box in clusters.boxes.items():
        name = det_names[i]
        smallest = _class_value(params.min_largest_extent, name)
        if smallest is not None and box[3:6].max() < smallest:
            continue
        if np.isfinite(clusters.support_z[i]):
            box = _rest_on_support(box, float(clusters.support_z[i]), params.voxel_size)
        elif floor_z is not None and _listed(name, params.floor_classes):
            box = _extend_to_hidden_floor(box, dets2d.boxes_xyxy[i], frame, floor_z, params)
        box = _apply_amodal_prior(box, name, cam_pos, params)
        box = _widen_to_image_box(box, boxes_px[i], frame, params)
        ext = box[3:6]
        if ext.max() > params.max_extent or ext.max() < params.min_extent:
            continue
        support = float(clusters.n_points[i]) / max(int(pts.n_sampled[i]), 1)
        boxes.append(box)
        labels.append(int(dets2d.labels[i]))
        scores.append(float(dets2d.scores[i]) * ((1.0 - w) + w * min(support, 1.0)))
        regions_2d.append(dets2d.boxes_xyxy[i])
        kept.append(i)
    if not boxes:
        return Detections3D.empty(names, frame.world_frame)
    kept_at = np.array(kept)
    points = [clusters.points[i] for i in kept]
    on_object = clusters.members[clusters.voxels.of_point]  # the points whose voxel is on the object
    pixels_all = np.rint(depth_to_colour_px(pts.pixels[on_object], frame.K, params)).astype(np.int32)
    pixels = split_by_owner(pixels_all, pts.owner[on_object], n)
    around = ring_heights(frame, boxes_px[kept_at], params.surround_ring, 400, params.min_points,
                          (params.min_depth, params.max_depth), params.surround_layer, params.surround_share)
    return Detections3D(np.stack(boxes), np.array(labels), np.array(scores), names, frame.world_frame,
                        boxes_2d=np.array(regions_2d, dtype=np.float64), points=tuple(points),
                        pixels=tuple(pixels[i] for i in kept), surround_z=around)


@dataclass(frozen=True)
class _Clusters:
    """What a frame's detections' depth gives: per detection that found its object, its fitted box
    (before the per-class steps), its voxel centroids (V, 3) and the number of points on it; per
    detection, the height of the support layer removed from under it (NaN: none); and which voxels
    are the objects'."""

    boxes: dict[int, np.ndarray]
    points: dict[int, np.ndarray]
    n_points: np.ndarray
    support_z: np.ndarray
    voxels: Voxels
    members: np.ndarray


def _object_clusters(pts: DepthPoints, det_names: list[str], params: LiftingParams) -> _Clusters:
    """Voxelise, cluster, remove the support layer, cluster again and fit, for all detections at once."""
    n = len(det_names)
    vox = voxelize(pts, params.voxel_size)
    alive = pts.usable & (group_sums(vox.count.astype(np.float64), vox.owner, n) >= params.min_points)
    alive &= np.bincount(vox.owner, minlength=n) >= 4
    radius = np.maximum(max(params.cluster_radius, 1.5 * params.voxel_size), 3.0 * pts.spacing)
    # Two passes: the support (floor, table top) joins the object to its neighbours, so it is
    # found at the bottom of the object's cluster, removed, and the rest clustered again on the
    # first pass's pairs with both ends kept.
    pairs = neighbour_pairs(vox.centroids, vox.owner, radius)
    members = core_clusters(vox, pairs, n)
    alive &= np.bincount(vox.owner[members], minlength=n) > 0
    surface = np.array([_listed(name, params.surface_classes) for name in det_names])
    keep = np.ones(len(members), dtype=bool)
    keep[members] = support_layers(vox.centroids[members, 2], vox.owner[members], n, params.voxel_size,
                                   params.support_fraction, params.support_density, surface,
                                   params.support_class_min_height)
    removed = members & ~keep
    cut = np.bincount(vox.owner[removed], minlength=n) > 0
    support_z = np.full(n, np.nan)
    if cut.any():
        at = np.flatnonzero(cut)
        support_z[at] = group_medians(vox.centroids[removed, 2], _renumber(vox.owner[removed], at, n), len(at))
        again = core_clusters(vox, pairs, n, among=members & keep & cut[vox.owner])
        alive &= ~cut | (np.bincount(vox.owner[again], minlength=n) > 0)
        members = np.where(cut[vox.owner], again, members)
    n_points = group_sums(vox.count[members].astype(np.float64), vox.owner[members], n)
    alive &= n_points >= params.min_points
    members &= alive[vox.owner]
    at = np.flatnonzero(alive)
    boxes: dict[int, np.ndarray] = {}
    points: dict[int, np.ndarray] = {}
    if len(at):
        owner = vox.owner[members]
        centroids = vox.centroids[members]
        # Voxel centroids sit half a voxel inside the surface: the pad adds it back.
        fitted = fit_upright_boxes(centroids, _renumber(owner, at, n), len(at), params.trim_percentiles,
                                   pad=params.voxel_size)
        parts = split_by_owner(centroids, owner, n)
        boxes = {int(i): fitted[k] for k, i in enumerate(at)}
        points = {int(i): parts[i] for i in at}
    return _Clusters(boxes, points, n_points, support_z, vox, members)


def _renumber(owner: np.ndarray, present: np.ndarray, n: int) -> np.ndarray:
    """``owner`` values (all among the sorted ``present``) as their positions in ``present``."""
    index = np.full(n, -1, dtype=np.int64)
    index[present] = np.arange(len(present))
    return index[owner]


def surround_height(frame: Frame, box_px: np.ndarray, params: LiftingParams, samples: int = 400) -> float:
    """World height (m) of the horizontal surface around a depth-image box, NaN where none dominates.

    The depth pixels of a ring around the box (``params.surround_ring`` of its width and height on
    each side, about ``samples`` of them) are taken to the world; a horizontal surface puts many of
    them in one thin layer of heights (a wall or the background spreads them), so the densest layer
    ``params.surround_layer`` thick is the surface when it holds ``params.surround_share`` of them.
    ``lift_detections`` measures all of a frame's boxes at once (depth_clusters.ring_heights).
    """
    return float(ring_heights(frame, np.asarray(box_px, dtype=np.float64)[None], params.surround_ring, samples,
                              params.min_points, (params.min_depth, params.max_depth), params.surround_layer,
                              params.surround_share)[0])


def _region_test(image: np.ndarray, index: int, frame: Frame, params: LiftingParams) -> Callable[..., np.ndarray]:
    """A test of depth pixels (u, v) -> bool: which lie in region ``index`` of the region image."""
    h, w = image.shape

    def inside(u: np.ndarray, v: np.ndarray) -> np.ndarray:
        # Depth pixel -> colour pixel -> region image cell.
        uv = depth_to_colour_px(np.stack([u, v], axis=-1), frame.K, params)
        cols = np.clip((uv[..., 0] * w / frame.width).astype(np.int64), 0, w - 1)
        rows = np.clip((uv[..., 1] * h / frame.height).astype(np.int64), 0, h - 1)
        return image[rows, cols] == index

    return inside


def _rest_on_support(box: np.ndarray, support_z: float, voxel_size: float) -> np.ndarray:
    """Extend the box's bottom down to the removed support surface when it stood on it.

    Removing the support layer also removes the object's lowest few centimetres; an object
    whose bottom ends within a few voxels above the support was resting on it.
    """
    bottom = box[2] - 0.5 * box[5]
    if not 0.0 < bottom - support_z <= 4.0 * voxel_size:
        return box
    top = box[2] + 0.5 * box[5]
    b = box.copy()
    b[2], b[5] = 0.5 * (top + support_z), top - support_z
    return b


def _extend_to_hidden_floor(box: np.ndarray, box_xyxy: np.ndarray, frame: Frame, floor_z: float,
                            params: LiftingParams) -> np.ndarray:
    """Extend the box down to the floor when what lies below it in the image hides its bottom."""
    bottom, top = box[2] - 0.5 * box[5], box[2] + 0.5 * box[5]
    if bottom - floor_z <= 2.0 * params.voxel_size or top - floor_z > params.max_extent:
        return box
    H, W = frame.depth.shape
    d = colour_box_to_depth_px(box_xyxy, frame.K, params)
    y0 = int(math.ceil(d[3]))
    y1 = y0 + max(3, int(round(params.occluder_rows * (d[3] - d[1]))))
    x0, x1 = int(max(math.floor(d[0]), 0)), int(min(math.ceil(d[2]), W))
    R, t = frame.T_world_camera[:3, :3], frame.T_world_camera[:3, 3]
    near = float(((box_corners(box)[0] - t) @ R[:, 2]).min())  # nearest corner's depth along the optical axis
    if y1 > H:  # the image ends below the object: its bottom is out of view
        hidden = True
    else:
        strip = frame.depth[y0:y1, x0:x1]
        strip = strip[np.isfinite(strip) & (strip >= params.min_depth) & (strip <= params.max_depth)]
        hidden = len(strip) > 0 and float(np.median(strip)) < near - params.occluder_margin
    if not hidden:
        return box
    b = box.copy()
    b[2], b[5] = 0.5 * (top + floor_z), top - floor_z
    return b


def _listed(name: str, classes: tuple[str, ...]) -> bool:
    """Whether a class name is among ``classes``, ignoring case and spaces ("Dining Table")."""
    key = class_key(name)
    return any(class_key(c) == key for c in classes)


def _class_value(pairs: tuple[tuple[str, float], ...], name: str) -> float | None:
    """The value a (class name, value) list gives ``name`` (case and spaces ignored), or None."""
    key = class_key(name)
    return next((v for n, v in pairs if class_key(n) == key), None)


def _widen_to_image_box(box: np.ndarray, box_px: np.ndarray, frame: Frame, params: LiftingParams) -> np.ndarray:
    """Widen a yaw-only world box that covers too little of its 2D box's width (see LiftingParams)."""
    if params.min_lateral_coverage <= 0:
        return box
    R, t = frame.T_world_camera[:3, :3], frame.T_world_camera[:3, 3]
    lateral = R[:, 0].copy()
    lateral[2] = 0.0  # the image's x axis, levelled
    if np.linalg.norm(lateral) < 0.3:  # camera looking straight up or down: no clear "across"
        return box
    lateral /= np.linalg.norm(lateral)
    b = box.copy()
    c, s = math.cos(b[6]), math.sin(b[6])
    axes = (np.array([c, s, 0.0]), np.array([-s, c, 0.0]))
    cos_x, cos_y = abs(float(axes[0] @ lateral)), abs(float(axes[1] @ lateral))
    covered = b[3] * cos_x + b[4] * cos_y  # the box's width across the view
    near = float(((box_corners(b)[0] - t) @ R[:, 2]).min())  # nearest corner's depth along the optical axis
    if near <= 0:
        return box
    wanted = (box_px[2] - box_px[0]) * near / frame.K[0, 0]
    if covered >= params.min_lateral_coverage * wanted:
        return box
    k, cos_k, other = (3, cos_x, b[4] * cos_y) if cos_x >= cos_y else (4, cos_y, b[3] * cos_x)
    if cos_k < 0.7:  # box turned diagonally to the view: widening one axis would distort it
        return box
    b[k] = (wanted - other) / cos_k
    centre_px = np.array([(box_px[0] + box_px[2]) / 2, (box_px[1] + box_px[3]) / 2, 1.0])
    ray = R @ (np.linalg.solve(frame.K, centre_px))
    on_ray = t + ray * (float((b[:3] - t) @ R[:, 2]) / float(ray @ R[:, 2]))
    b[:3] += lateral * float(lateral @ (on_ray - b[:3]))
    return canonical_yaw_box(b)


def _apply_amodal_prior(box: np.ndarray, name: str, cam_pos: np.ndarray, params: LiftingParams) -> np.ndarray:
    """Grow too-thin horizontal extents to the class minimums, on the side away from the camera."""
    min_size = _class_value(params.min_horizontal_size, name)
    min_along = _class_value(params.min_extent_along_view, name)
    if min_size is None and min_along is None:
        return box
    b = box.copy()
    c, s = math.cos(b[6]), math.sin(b[6])
    away = b[:2] - cam_pos[:2]
    axes = ((3, np.array([c, s])), (4, np.array([-s, c])))
    wanted = {k: min_size or 0.0 for k, _ in axes}
    if min_along is not None:
        k_view = max(axes, key=lambda ka: abs(float(ka[1] @ away)))[0]
        wanted[k_view] = max(wanted[k_view], min_along)
    for k, axis in axes:
        if b[k] < wanted[k]:
            sign = 1.0 if float(axis @ away) >= 0 else -1.0
            b[:2] += sign * axis * 0.5 * (wanted[k] - b[k])
            b[k] = wanted[k]
    return canonical_yaw_box(b)
