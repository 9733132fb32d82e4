"""The depth points, voxels and Euclidean clusters of all of a frame's detections at once.

Lifting used to take a frame's detections one at a time, each through some hundred small numpy
calls (sample its box's depth, voxelise, k-d tree, components, support layer, box fit): about 2 ms a
detection, most of it numpy's per-call cost. Here every step runs once per frame on the
concatenation of all detections' points or voxels, each tagged with its detection, and per-detection
answers come from grouped array operations (geometry/grouped.py). The numbers are the per-detection
path's, bit for bit on the machines tried (tests/test_lifting.py compares them on real frames): the
same pixels in the same order, voxels in the same order, the same sums, and statistics that equal
numpy's per group.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from ..frame import Frame
from ..geometry.columns import column_max, column_min
from ..geometry.grouped import first_max_per_group, group_medians, group_starts
from ..geometry.transforms import transform_points


@dataclass(frozen=True)
class BoxPixels:
    """Depth pixels on a sampling grid inside each of a set of pixel boxes, concatenated box after box.

    Attributes:
        owner: (P,) int64 index of the box each pixel belongs to (ascending: box 0's first).
        u, v: (P,) int64 depth-image column and row of each pixel, each box's in row-major order.
        n_grid: (B,) int64 pixels of each box's whole sampling grid (before any is left out).
    """

    owner: np.ndarray
    u: np.ndarray
    v: np.ndarray
    n_grid: np.ndarray


def grid_pixels(x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray, step: np.ndarray) -> BoxPixels:
    """The pixels ``np.mgrid[y0:y1:step, x0:x1:step]`` of every box (B,) of integer bounds, in one array."""
    nx = np.maximum((x1 - x0 + step - 1) // step, 0)
    ny = np.maximum((y1 - y0 + step - 1) // step, 0)
    n = nx * ny
    owner = np.repeat(np.arange(len(n)), n)
    starts = np.cumsum(n) - n
    local = np.arange(int(n.sum())) - starts[owner]
    row, col = np.divmod(local, np.maximum(nx, 1)[owner])
    return BoxPixels(owner, x0[owner] + col * step[owner], y0[owner] + row * step[owner], n)


@dataclass(frozen=True)
class DepthPoints:
    """The valid depth points of each detection's box (as lifting samples them), concatenated.

    Attributes:
        owner: (P,) int64 detection of each point, ascending.
        world: (P, 3) world points, metres.
        in_core: (P,) bool: the pixel lies in its box's core (the shrunk box).
        pixels: (P, 2) float64 depth pixel (u, v) of each point.
        n_sampled: (D,) int64 pixels each detection's grid sampled (valid depth or not).
        spacing: (D,) metric spacing (m) of neighbouring samples at each detection's median depth.
        usable: (D,) bool: the detection's box has at least ``min_points`` valid depth pixels.
    """

    owner: np.ndarray
    world: np.ndarray
    in_core: np.ndarray
    pixels: np.ndarray
    n_sampled: np.ndarray
    spacing: np.ndarray
    usable: np.ndarray


def sample_depth(frame: Frame, boxes_px: np.ndarray, shrink: float, max_pixels: int, min_points: int,
                 depth_range: tuple[float, float], region_of: list[np.ndarray | None]) -> DepthPoints:
    """Each detection's valid depth pixels, unprojected to the world, for all detections at once.

    Args:
        frame: the posed RGB-D frame.
        boxes_px: (D, 4) depth-image boxes (x0, y0, x1, y1) of the detections.
        shrink: fraction of a box's width and height (half per side) left out of its core.
        max_pixels: pixels sampled per box at most (a stride thins big boxes).
        min_points: a box with fewer valid depth pixels is not usable.
        depth_range: (min, max) valid depth, metres.
        region_of: per detection, None, or a function of (u, v) depth pixels -> bool, True where
            the pixel belongs to the detection's own region.
    """
    H, W = frame.depth.shape
    K = frame.K
    d = np.asarray(boxes_px, dtype=np.float64).reshape(-1, 4)
    n_det = len(d)
    x0 = np.maximum(np.floor(d[:, 0]), 0).astype(np.int64)
    x1 = np.minimum(np.ceil(d[:, 2]), W).astype(np.int64)
    y0 = np.maximum(np.floor(d[:, 1]), 0).astype(np.int64)
    y1 = np.minimum(np.ceil(d[:, 3]), H).astype(np.int64)
    big = (x1 - x0 >= 2) & (y1 - y0 >= 2)
    area = np.where(big, (x1 - x0) * (y1 - y0), 0)
    stride = np.maximum(1, np.ceil(np.sqrt(area / max_pixels)).astype(np.int64))
    grid = grid_pixels(x0, np.where(big, x1, x0), y0, np.where(big, y1, y0), stride)
    u, v, owner = grid.u, grid.v, grid.owner
    z = frame.depth[v, u].astype(np.float64)
    valid = np.isfinite(z) & (z >= depth_range[0]) & (z <= depth_range[1])
    for i, inside in enumerate(region_of):
        if inside is not None and big[i]:
            at = slice(*np.searchsorted(owner, [i, i + 1]))
            valid[at] &= inside(u[at], v[at])
    usable = big & (np.bincount(owner[valid], minlength=n_det) >= min_points)
    keep = valid & usable[owner]
    owner, u, v, z = owner[keep], u[keep], v[keep], z[keep]
    # The core: the shrunk box, in the same depth-pixel coordinates.
    mx, my = 0.5 * shrink * (d[:, 2] - d[:, 0]), 0.5 * shrink * (d[:, 3] - d[:, 1])
    in_core = ((u >= (d[:, 0] + mx)[owner]) & (u < (d[:, 2] - mx)[owner])
               & (v >= (d[:, 1] + my)[owner]) & (v < (d[:, 3] - my)[owner]))
    uf, vf = u.astype(np.float64), v.astype(np.float64)
    pts_cam = np.stack([(uf - K[0, 2]) * z / K[0, 0], (vf - K[1, 2]) * z / K[1, 1], z], axis=1)
    spacing = np.zeros(n_det)
    if len(z):
        # Only usable detections have points; the others' spacing stays 0 (they are not lifted).
        present = np.flatnonzero(np.bincount(owner, minlength=n_det))
        remap = np.full(n_det, -1)
        remap[present] = np.arange(len(present))
        spacing[present] = group_medians(z, remap[owner], len(present)) * stride[present] / K[0, 0]
    return DepthPoints(owner, transform_points(frame.T_world_camera, pts_cam), in_core, np.stack([uf, vf], axis=1),
                       np.where(big, grid.n_grid, 0), spacing, usable)


@dataclass(frozen=True)
class Voxels:
    """Voxel-downsampled points of all detections: centroids sorted by detection, then lattice index.

    Attributes:
        owner: (V,) detection of each voxel, ascending.
        centroids: (V, 3) mean of the points in each voxel, metres.
        core: (V,) float64 number of its points in their box's core.
        count: (V,) int64 number of its points.
        of_point: (P,) voxel of each point.
    """

    owner: np.ndarray
    centroids: np.ndarray
    core: np.ndarray
    count: np.ndarray
    of_point: np.ndarray


def voxelize(points: DepthPoints, size: float) -> Voxels:
    """Voxel downsampling of every detection's points apart (a voxel holds one detection's points)."""
    idx = np.floor(points.world / size).astype(np.int64)
    if len(idx) == 0:
        z = np.zeros(0, np.int64)
        return Voxels(z, np.zeros((0, 3)), np.zeros(0), z, z)
    idx -= column_min(idx)
    dims = column_max(idx) + 1
    # Detection first, then the lattice index: each detection's voxels in the order its own unique gives.
    key = ((points.owner * dims[0] + idx[:, 0]) * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]
    keys, inverse, count = np.unique(key, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    sums = np.stack([np.bincount(inverse, weights=points.world[:, k], minlength=len(count)) for k in range(3)],
                    axis=1)
    core = np.bincount(inverse, weights=points.in_core.astype(np.float64), minlength=len(count))
    return Voxels(keys // (dims[0] * dims[1] * dims[2]), sums / count[:, None], core, count, inverse)


def neighbour_pairs(centroids: np.ndarray, owner: np.ndarray, radius: np.ndarray) -> np.ndarray:
    """(E, 2) index pairs of voxels of one detection within that detection's ``radius`` (D,) of each other.

    One scipy k-d tree per detection (a C call each): one tree over all detections, each scaled to
    its radius and kept apart by a fourth coordinate, gave the same pairs 1.6 times slower.
    """
    starts, counts = group_starts(owner, len(radius))
    pairs = [cKDTree(centroids[s:s + n], balanced_tree=False, compact_nodes=False).query_pairs(
        float(radius[g]), output_type="ndarray") + s
        for g, (s, n) in enumerate(zip(starts.tolist(), counts.tolist(), strict=True)) if n >= 2]
    return np.concatenate(pairs) if pairs else np.zeros((0, 2), np.int64)


def component_labels(n: int, pairs: np.ndarray) -> np.ndarray:
    """(n,) connected-component label of each node of an undirected graph given by its (E, 2) edges:
    the smallest node index of its component.

    Hooking each edge's roots onto the smaller one, then pointer jumping, in numpy: on a detection's
    few hundred voxels this is 5x faster than scipy's connected_components, whose sparse-matrix
    set-up dominates at that size (lifting 16.0 -> 14.4 ms per redkitchen frame, the same boxes).
    """
    labels = np.arange(n)
    if len(pairs) == 0:
        return labels
    i, j = pairs[:, 0], pairs[:, 1]
    while True:
        li, lj = labels[i], labels[j]
        hooked = labels.copy()
        np.minimum.at(hooked, li, np.minimum(li, lj))
        np.minimum.at(hooked, lj, np.minimum(li, lj))
        while not np.array_equal(jumped := hooked[hooked], hooked):  # every node points at its root
            hooked = jumped
        if np.array_equal(hooked, labels):
            return labels
        labels = hooked


def core_clusters(vox: Voxels, pairs: np.ndarray, n_det: int, among: np.ndarray | None = None) -> np.ndarray:
    """(V,) bool: per detection, the voxels of its Euclidean cluster with most core points (ties: the
    cluster holding the lowest voxel); none for a detection with no core point.

    Args:
        vox: every detection's voxels.
        pairs: neighbouring voxels (``neighbour_pairs``).
        n_det: number of detections.
        among: (V,) bool: cluster only these voxels (pairs with both ends among them); None: all.
    """
    if among is None:
        comp = component_labels(len(vox.owner), pairs)
        weight = np.bincount(comp, weights=vox.core, minlength=len(comp))
        best, first = first_max_per_group(weight, vox.owner, n_det)
        return comp == np.where(best > 0, first, -1)[vox.owner]
    # Only the voxels asked for, numbered in order (so a component's lowest voxel stays its lowest).
    at = np.flatnonzero(among)
    number = np.full(len(among), -1)
    number[at] = np.arange(len(at))
    kept = pairs[among[pairs[:, 0]] & among[pairs[:, 1]]]
    comp = component_labels(len(at), number[kept])
    weight = np.bincount(comp, weights=vox.core[at], minlength=len(at))
    owner = vox.owner[at]
    best, first = first_max_per_group(weight, owner, n_det)
    out = np.zeros(len(among), dtype=bool)
    out[at] = comp == np.where(best > 0, first, -1)[owner]
    return out


def support_layers(z: np.ndarray, owner: np.ndarray, n_det: int, voxel_size: float, fraction: float,
                   density: float, surface: np.ndarray, class_min_height: float) -> np.ndarray:
    """(V,) bool keep-mask of voxels (heights ``z``, grouped by ``owner``) without each detection's
    dense horizontal layer at the bottom, where it has one.

    A horizontal surface fills one or two voxel layers with many voxels, a vertical face spreads
    evenly over its height; so a layer far denser than the rest, at the bottom, is the floor or table
    the object stands on (its own underside is never visible from above). ``surface`` (D,) marks
    detections of classes that are surfaces themselves: their bottom layer is only removed when a
    dense layer (their top) lies at least ``class_min_height`` above it. A detection with nothing but
    the layer (a flat object, or the surface itself) keeps it.
    """
    keep = np.ones(len(z), dtype=bool)
    if len(z) == 0:
        return keep
    layer = np.floor(z / voxel_size).astype(np.int64)
    low = np.full(n_det, np.iinfo(np.int64).max)
    np.minimum.at(low, owner, layer)
    layer -= low[owner]
    # Every detection's layer histogram in one array, each padded with two empty layers.
    high = np.zeros(n_det, np.int64)
    np.maximum.at(high, owner, layer)
    size = np.where(np.bincount(owner, minlength=n_det) > 0, high + 3, 0)
    offset = np.cumsum(size) - size
    hist_all = np.bincount(offset[owner] + layer, minlength=int(size.sum()))
    n_all = np.bincount(owner, minlength=n_det)
    lift = int(round(class_min_height / voxel_size))
    bottoms = np.full(n_det, -1)
    for g in np.flatnonzero(n_all >= 8):
        hist = hist_all[offset[g]:offset[g] + size[g] - 2]
        n = int(n_all[g])
        pair = hist + np.concatenate([hist[1:], [0]])  # a plane straddling a layer boundary splits across two
        occupied = np.nonzero(hist)[0]
        # Bottom: the lowest layer holding a non-trivial share (isolated stray voxels below are noise).
        bottom = int(occupied[np.argmax(hist[occupied] >= max(2, 0.01 * n))])
        band = pair[bottom]
        rest_layers = np.count_nonzero(hist) - np.count_nonzero(hist[bottom:bottom + 2])
        rest_mean = (n - band) / max(rest_layers, 1)
        if band < fraction * n or band < density * rest_mean:
            continue
        if surface[g]:
            upper = pair[bottom + lift:] if bottom + lift < len(pair) else np.zeros(0)
            if not len(upper) or upper.max() < density * rest_mean:
                continue
        above = n - int(hist[:bottom + 2].sum())
        if above < max(4, 0.1 * n):
            continue  # nothing but the layer: a flat object (book, keyboard) or the surface itself
        bottoms[g] = bottom
    cut = (bottoms[owner] >= 0) & (layer <= bottoms[owner] + 1)
    keep[cut] = False
    return keep


def group_sums(values: np.ndarray, owner: np.ndarray, n: int) -> np.ndarray:
    """(n,) sum of ``values`` per owner."""
    return np.bincount(owner, weights=values, minlength=n)


def split_by_owner(values: np.ndarray, owner: np.ndarray, n: int) -> list[np.ndarray]:
    """``values`` (sorted by owner) cut into n pieces, one per owner."""
    starts, counts = group_starts(owner, n)
    return np.split(values, (starts + counts)[:-1])


def ring_heights(frame: Frame, boxes_px: np.ndarray, ring: float, samples: int, min_points: int,
                 depth_range: tuple[float, float], layer_m: float, share: float) -> np.ndarray:
    """(D,) world height (m) of the horizontal surface around each depth-image box, NaN where none dominates.

    The depth pixels of a ring around each box (``ring`` of its width and height on each side, about
    ``samples`` of them) are taken to the world; a horizontal surface puts many of them in one thin
    layer of heights (a wall or the background spreads them), so the densest layer ``layer_m`` thick
    is the surface when it holds ``share`` of them.
    """
    H, W = frame.depth.shape
    b = np.asarray(boxes_px, dtype=np.float64).reshape(-1, 4)
    n_det = len(b)
    out = np.full(n_det, np.nan)
    if n_det == 0:
        return out
    x0, y0, x1, y1 = b.T
    gx, gy = ring * (x1 - x0), ring * (y1 - y0)
    X0 = np.maximum(0, np.trunc(x0 - gx)).astype(np.int64)
    Y0 = np.maximum(0, np.trunc(y0 - gy)).astype(np.int64)
    X1 = np.minimum(W, np.trunc(x1 + gx).astype(np.int64) + 1)
    Y1 = np.minimum(H, np.trunc(y1 + gy).astype(np.int64) + 1)
    big = (X1 - X0 >= 2) & (Y1 - Y0 >= 2)
    area = np.where(big, (X1 - X0) * (Y1 - Y0), 0)
    step = np.maximum(1, np.sqrt(area / (2 * samples)).astype(np.int64))
    grid = grid_pixels(X0, np.where(big, X1, X0), Y0, np.where(big, Y1, Y0), step)
    us, vs, owner = grid.u, grid.v, grid.owner
    ring_px = ~((us >= x0[owner]) & (us < x1[owner]) & (vs >= y0[owner]) & (vs < y1[owner]))
    us, vs, owner = us[ring_px], vs[ring_px], owner[ring_px]
    z = frame.depth[vs, us].astype(np.float64)
    ok = np.isfinite(z) & (z >= depth_range[0]) & (z <= depth_range[1])
    enough = np.bincount(owner[ok], minlength=n_det) >= min_points
    ok &= enough[owner]
    us, vs, z, owner = us[ok], vs[ok], z[ok], owner[ok]
    if len(z) == 0:
        return out
    K, T = frame.K, frame.T_world_camera
    cam = np.stack([(us - K[0, 2]) * z / K[0, 0], (vs - K[1, 2]) * z / K[1, 1], z], axis=1)
    heights = cam @ T[2, :3] + T[2, 3]
    lo = np.full(n_det, np.inf)
    np.minimum.at(lo, owner, heights)
    bins = ((heights - lo[owner]) / layer_m).astype(np.int64)
    high = np.zeros(n_det, np.int64)
    np.maximum.at(high, owner, bins)
    size = np.where(enough, high + 2, 0)  # one empty bin after each: the pair of the last bin
    offset = np.cumsum(size) - size
    hist = np.bincount(offset[owner] + bins, minlength=int(size.sum()))
    pair = hist + np.concatenate([hist[1:], [0]])  # a surface straddling a bin boundary
    slot_owner = np.repeat(np.arange(n_det), size)
    in_own = np.arange(len(pair)) < (offset + size - 1)[slot_owner]  # a detection's padding is not its bin
    best, first = first_max_per_group(np.where(in_own, pair, -1), slot_owner, n_det)
    n_heights = np.bincount(owner, minlength=n_det)
    found = enough & (best >= share * n_heights)
    k = (first - offset)[owner]
    layer = found[owner] & (heights >= lo[owner] + k * layer_m) & (heights < lo[owner] + (k + 2) * layer_m)
    if not layer.any():
        return out
    present = np.flatnonzero(np.bincount(owner[layer], minlength=n_det))
    remap = np.full(n_det, -1)
    remap[present] = np.arange(len(present))
    out[present] = group_medians(heights[layer], remap[owner[layer]], len(present))
    return out

