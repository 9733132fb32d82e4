"""The per-detection lifting path as it was before lifting took a frame's detections together (issue 41):
a slow reference that tests compare ``lift_detections`` with, step for step.

Kept as it was (one detection at a time, numpy's percentile and median, one k-d tree per detection);
the per-box steps after the fit (support, amodal priors, widening) are lifting's own, shared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
from scipy.spatial import cKDTree

from embodied_ros.detections import Detections2D, Detections3D
from embodied_ros.frame import Frame
from embodied_ros.geometry.boxes import canonical_yaw_box
from embodied_ros.geometry.transforms import transform_points
from embodied_ros.network.depth_clusters import component_labels
from embodied_ros.network.lifting import (
    LiftingParams,
    _apply_amodal_prior,
    _class_value,
    _extend_to_hidden_floor,
    _listed,
    _rest_on_support,
    _widen_to_image_box,
    colour_box_to_depth_px,
    depth_to_colour_px,
)


def fit_upright_box(points: np.ndarray, trim_percentiles: tuple[float, float] = (2.0, 98.0),
                    pad: float = 0.0) -> np.ndarray:
    """geometry.fitting.fit_upright_box as it was: numpy's median and percentiles on one group."""
    lo, hi = trim_percentiles
    xy = points[:, :2]
    r = np.linalg.norm(xy - np.median(xy, axis=0), axis=1)
    core_xy = xy[r <= np.percentile(r, hi)] if len(xy) > 10 else xy
    (_, _), (_, _), angle_deg = cv2.minAreaRect(core_xy.astype(np.float32))
    yaw = math.radians(angle_deg)
    c, s = math.cos(yaw), math.sin(yaw)
    local = xy @ np.array([[c, -s], [s, c]])
    q = np.percentile(np.column_stack([local, points[:, 2]]), [lo, hi], axis=0)
    ext = q[1] - q[0] + pad
    mid = 0.5 * (q[0] + q[1])
    centre_xy = np.array([c * mid[0] - s * mid[1], s * mid[0] + c * mid[1]])
    box = np.array([centre_xy[0], centre_xy[1], mid[2], ext[0], ext[1], ext[2], yaw, 0.0, 0.0])
    return canonical_yaw_box(box)


def lift_one_at_a_time(frame: Frame, dets2d: Detections2D, params: LiftingParams,
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
    exception).

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
    boxes, labels, scores, regions_2d, points, pixels, around = [], [], [], [], [], [], []
    if regions is not None and regions.ndim != 2:
        raise ValueError(f"lifting: regions must be an (h, w) image, got shape {regions.shape}")
    for i in range(len(dets2d)):
        label = int(dets2d.labels[i])
        own = (regions, i) if regions is not None and _listed(names[label], params.region_classes) else None
        lifted = _lift_one(frame, dets2d.boxes_xyxy[i], names[label], params, own, floor_z)
        if lifted is None:
            continue
        w = params.support_score_weight
        boxes.append(lifted.box)
        labels.append(label)
        scores.append(float(dets2d.scores[i]) * ((1.0 - w) + w * lifted.support))
        regions_2d.append(dets2d.boxes_xyxy[i])
        points.append(lifted.points)
        pixels.append(lifted.pixels)
        around.append(surround_height(frame, colour_box_to_depth_px(dets2d.boxes_xyxy[i], frame.K, params), params))
    if not boxes:
        return Detections3D.empty(names, frame.world_frame)
    return Detections3D(np.stack(boxes), np.array(labels), np.array(scores), names, frame.world_frame,
                        boxes_2d=np.array(regions_2d, dtype=np.float64), points=tuple(points), pixels=tuple(pixels),
                        surround_z=np.array(around))


@dataclass(frozen=True)
class _Lifted:
    """One lifted detection: its box, the fraction of its sampled pixels on the object, the
    object's voxel centroids (V, 3) in the world and the colour pixels (P, 2) int32 of its points."""

    box: np.ndarray
    support: float
    points: np.ndarray
    pixels: np.ndarray


def _lift_one(frame: Frame, box_xyxy: np.ndarray, name: str, params: LiftingParams,
              region: tuple[np.ndarray, int] | None = None,
              floor_z: float | None = None) -> _Lifted | None:
    """One detection -> its world box, support fraction in [0, 1] and object points, or None."""
    sample = _sample_box_points(frame, box_xyxy, params, region)
    if sample is None:
        return None
    pts_world, in_core, n_sampled, spacing, px_depth = sample
    vox, vox_core, vox_count, point_voxel = _voxelize(pts_world, in_core, params.voxel_size)
    if vox_count.sum() < params.min_points or len(vox) < 4:
        return None
    radius = max(params.cluster_radius, 1.5 * params.voxel_size, 3.0 * spacing)
    # Two passes: the support (floor, table top) joins the object to its neighbours, so it is
    # found at the bottom of the object's cluster, removed, and the rest clustered again.
    pairs = _neighbour_pairs(vox, radius)
    members = _core_cluster(vox, vox_core, pairs)
    if members is None:
        return None
    keep = _remove_support(vox[members], name, params)
    support_z = None
    if not keep.all():
        support_z = float(np.median(vox[members[~keep], 2]))
        rest = members[keep]
        # The neighbours among the rest are the first pass's pairs with both ends kept.
        renumber = np.full(len(vox), -1)
        renumber[rest] = np.arange(len(rest))
        kept_pairs = renumber[pairs]
        sub = _core_cluster(vox[rest], vox_core[rest], kept_pairs[(kept_pairs >= 0).all(axis=1)])
        if sub is None:
            return None
        members = rest[sub]
    if vox_count[members].sum() < params.min_points:
        return None
    # Voxel centroids sit half a voxel inside the surface: the pad adds it back.
    box = fit_upright_box(vox[members], params.trim_percentiles, pad=params.voxel_size)
    smallest = _class_value(params.min_largest_extent, name)
    if smallest is not None and box[3:6].max() < smallest:
        return None
    if support_z is not None:
        box = _rest_on_support(box, support_z, params.voxel_size)
    elif floor_z is not None and _listed(name, params.floor_classes):
        box = _extend_to_hidden_floor(box, box_xyxy, frame, floor_z, params)
    box = _apply_amodal_prior(box, name, frame.T_world_camera[:3, 3], params)
    box = _widen_to_image_box(box, colour_box_to_depth_px(box_xyxy, frame.K, params), frame, params)
    ext = box[3:6]
    if ext.max() > params.max_extent or ext.max() < params.min_extent:
        return None
    support = float(vox_count[members].sum()) / max(n_sampled, 1)
    on_object = np.isin(point_voxel, members)
    pixels = np.rint(depth_to_colour_px(px_depth[on_object], frame.K, params)).astype(np.int32)
    return _Lifted(box, min(support, 1.0), vox[members], pixels)


def surround_height(frame: Frame, box_px: np.ndarray, params: LiftingParams, samples: int = 400) -> float:
    """World height (m) of the horizontal surface around a depth-image box, NaN where none dominates.

    The depth pixels of a ring around the box (``params.surround_ring`` of its width and height on
    each side, about ``samples`` of them) are taken to the world; a horizontal surface puts many of
    them in one thin layer of heights (a wall or the background spreads them), so the densest layer
    ``params.surround_layer`` thick is the surface when it holds ``params.surround_share`` of them.
    """
    H, W = frame.depth.shape
    x0, y0, x1, y1 = (float(v) for v in box_px)
    gx, gy = params.surround_ring * (x1 - x0), params.surround_ring * (y1 - y0)
    X0, Y0, X1, Y1 = max(0, int(x0 - gx)), max(0, int(y0 - gy)), min(W, int(x1 + gx) + 1), min(H, int(y1 + gy) + 1)
    if X1 - X0 < 2 or Y1 - Y0 < 2:
        return float("nan")
    step = max(1, int(math.sqrt((X1 - X0) * (Y1 - Y0) / (2 * samples))))
    vs, us = np.mgrid[Y0:Y1:step, X0:X1:step]
    ring = ~((us >= x0) & (us < x1) & (vs >= y0) & (vs < y1))
    us, vs = us[ring], vs[ring]
    z = frame.depth[vs, us].astype(np.float64)
    ok = np.isfinite(z) & (z >= params.min_depth) & (z <= params.max_depth)
    if ok.sum() < params.min_points:
        return float("nan")
    us, vs, z = us[ok], vs[ok], z[ok]
    K, T = frame.K, frame.T_world_camera
    cam = np.stack([(us - K[0, 2]) * z / K[0, 0], (vs - K[1, 2]) * z / K[1, 1], z], axis=1)
    heights = cam @ T[2, :3] + T[2, 3]
    lo = heights.min()
    hist = np.bincount(((heights - lo) / params.surround_layer).astype(np.int64))
    pair = hist + np.concatenate([hist[1:], [0]])  # a surface straddling a bin boundary
    k = int(np.argmax(pair))
    if pair[k] < params.surround_share * len(heights):
        return float("nan")
    layer = (heights >= lo + k * params.surround_layer) & (heights < lo + (k + 2) * params.surround_layer)
    return float(np.median(heights[layer]))


def _sample_box_points(
    frame: Frame, box_xyxy: np.ndarray, params: LiftingParams, region: tuple[np.ndarray, int] | None = None
) -> tuple[np.ndarray, np.ndarray, int, float, np.ndarray] | None:
    """Valid depth pixels of one box (and of its region, if given: (region image, index)) as world points.

    Returns:
        (P, 3) world points, (P,) bool True for pixels in the box's core, number of sampled
        pixels (valid or not), the metric spacing (m) of neighbouring samples at the median
        depth, and the (P, 2) depth pixels (u, v) of the points; None when fewer than
        min_points pixels have valid depth.
    """
    H, W = frame.depth.shape
    K = frame.K
    d = colour_box_to_depth_px(box_xyxy, K, params)
    x0, x1 = int(max(math.floor(d[0]), 0)), int(min(math.ceil(d[2]), W))
    y0, y1 = int(max(math.floor(d[1]), 0)), int(min(math.ceil(d[3]), H))
    if x1 - x0 < 2 or y1 - y0 < 2:
        return None
    stride = max(1, int(math.ceil(math.sqrt((x1 - x0) * (y1 - y0) / params.max_pixels))))
    us = np.arange(x0, x1, stride)
    vs = np.arange(y0, y1, stride)
    z = frame.depth[y0:y1:stride, x0:x1:stride].astype(np.float64)  # (len(vs), len(us))
    n_sampled = z.size
    valid = np.isfinite(z) & (z >= params.min_depth) & (z <= params.max_depth)
    if region is not None:
        valid &= _in_region(us, vs, region, frame, params)
    if valid.sum() < params.min_points:
        return None
    # The core: the shrunk box, in the same depth-pixel coordinates.
    mx = 0.5 * params.shrink * (d[2] - d[0])
    my = 0.5 * params.shrink * (d[3] - d[1])
    core_u = (us >= d[0] + mx) & (us < d[2] - mx)
    core_v = (vs >= d[1] + my) & (vs < d[3] - my)
    vv, uu = np.nonzero(valid)
    zc = z[vv, uu]
    u, v = us[uu].astype(np.float64), vs[vv].astype(np.float64)
    pts_cam = np.stack([(u - K[0, 2]) * zc / K[0, 0], (v - K[1, 2]) * zc / K[1, 1], zc], axis=1)
    in_core = core_u[uu] & core_v[vv]
    spacing = float(np.median(zc)) * stride / K[0, 0]
    return transform_points(frame.T_world_camera, pts_cam), in_core, n_sampled, spacing, np.stack([u, v], axis=1)


def _in_region(us: np.ndarray, vs: np.ndarray, region: tuple[np.ndarray, int], frame: Frame,
               params: LiftingParams) -> np.ndarray:
    """(len(vs), len(us)) bool: which depth pixels of the sampling grid lie in region ``index``."""
    image, index = region
    # Depth pixel -> colour pixel -> region image cell.
    uv = depth_to_colour_px(np.stack(np.meshgrid(us, vs), axis=-1), frame.K, params)  # (len(vs), len(us), 2)
    h, w = image.shape
    cols = np.clip((uv[..., 0] * w / frame.width).astype(np.int64), 0, w - 1)
    rows = np.clip((uv[..., 1] * h / frame.height).astype(np.int64), 0, h - 1)
    return image[rows, cols] == index


def _voxelize(points: np.ndarray, in_core: np.ndarray,
              size: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Voxel downsample: (V, 3) centroids, (V,) number of core points, (V,) number of points,
    and (P,) the voxel of each point."""
    idx = np.floor(points / size).astype(np.int64)
    idx -= idx.min(axis=0)
    dims = idx.max(axis=0) + 1
    key = (idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]
    _, inverse, count = np.unique(key, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    sums = np.stack([np.bincount(inverse, weights=points[:, k], minlength=len(count)) for k in range(3)], axis=1)
    core = np.bincount(inverse, weights=in_core.astype(np.float64), minlength=len(count))
    return sums / count[:, None], core, count, inverse


def _remove_support(vox: np.ndarray, name: str, params: LiftingParams) -> np.ndarray:
    """(V,) bool keep-mask without the dense horizontal layer at the bottom, if there is one.

    A horizontal surface fills one or two voxel layers with many voxels, a vertical face
    spreads evenly over its height; so a layer far denser than the rest, at the bottom, is the
    floor or table the object stands on (its own underside is never visible from above).
    """
    keep = np.ones(len(vox), dtype=bool)
    if len(vox) < 8:
        return keep
    layer = np.floor(vox[:, 2] / params.voxel_size).astype(np.int64)
    layer -= layer.min()
    hist = np.bincount(layer)
    # Pair adjacent layers: a plane straddling a layer boundary splits across two.
    pair = hist + np.concatenate([hist[1:], [0]])
    n = len(vox)
    occupied = np.nonzero(hist)[0]
    # Bottom: the lowest layer holding a non-trivial share (isolated stray voxels below are noise).
    bottom = int(occupied[np.argmax(hist[occupied] >= max(2, 0.01 * n))])
    band = pair[bottom]
    rest_layers = np.count_nonzero(hist) - np.count_nonzero(hist[bottom : bottom + 2])
    rest_mean = (n - band) / max(rest_layers, 1)
    if band < params.support_fraction * n or band < params.support_density * rest_mean:
        return keep
    cut = layer <= bottom + 1
    if _listed(name, params.surface_classes):
        # Keep the bottom layer of a table unless a denser layer (its top) stands well above it.
        lift = int(round(params.support_class_min_height / params.voxel_size))
        upper = pair[bottom + lift :] if bottom + lift < len(pair) else np.zeros(0)
        if not len(upper) or upper.max() < params.support_density * rest_mean:
            return keep
    if np.count_nonzero(~cut) < max(4, 0.1 * n):
        return keep  # nothing but the layer: a flat object (book, keyboard) or the surface itself
    return ~cut


def _neighbour_pairs(vox: np.ndarray, radius: float) -> np.ndarray:
    """(E, 2) index pairs of the voxels within ``radius`` of each other."""
    return cKDTree(vox, balanced_tree=False, compact_nodes=False).query_pairs(radius, output_type="ndarray")


def _core_cluster(vox: np.ndarray, core: np.ndarray, pairs: np.ndarray) -> np.ndarray | None:
    """Indices of the Euclidean cluster (voxels linked by ``pairs``, ``_neighbour_pairs``) with most core points."""
    comp = component_labels(len(vox), pairs)
    weight = np.bincount(comp, weights=core, minlength=len(vox))
    if weight.max() <= 0:
        return None
    return np.nonzero(comp == int(np.argmax(weight)))[0]
