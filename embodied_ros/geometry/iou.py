"""Exact intersection volume and IoU of 9-DoF oriented boxes, vectorised over box pairs (and the
IoU of axis-aligned image boxes, at the end).

The intersection of two boxes is a convex polytope. Its boundary is made of the faces of
each box clipped to the other box's six half-spaces, so its volume follows from the
divergence theorem without building the polytope: ``V = 1/3 * sum_f offset_f * area_f``
over the clipped faces, with ``offset_f`` the signed distance of face f's plane from the
origin. Each face is a rectangle in its own 2D coordinates, clipped by the other box's
planes (Sutherland-Hodgman, rectangle_clipping.py); all faces of all pairs are clipped together in numpy.

Conventions that make it robust where pytorch3d's ``box3d_overlap`` raises:

* Each pair is computed in the frame of its smaller box, scaled by the pair's largest
  extent, so tiny (1e-6 m) and huge boxes behave like unit boxes and IoU(a, b) is the
  very same computation as IoU(b, a).
* A face of one box that lies (within a rounding tolerance) on a face plane of the other
  with the same outward normal is the same piece of boundary: it is counted once (the
  smaller box's face), else identical boxes would count every face twice.
* Pairs that are separated or only touch along any of the 15 separating axes (faces,
  edge cross products) within that tolerance have zero volume and are never clipped; a
  bounding-sphere test over all (N, M) pairs comes first, so disjoint pairs cost nothing.
* Boxes with a zero, negative or non-finite extent, or non-finite centre or angles, have
  no volume: their IoU and intersection volume are 0.0.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .boxes import BOX_FACES, as_boxes, box_corners, box_rotations
from .rectangle_clipping import clipped_rectangle_areas

__all__ = [
    "box_intersection_volume",
    "box_iou_2d",
    "box_iou_3d",
    "pairwise_box_intersection_volume",
    "pairwise_box_iou_3d",
]

_Pair = tuple[np.ndarray, np.ndarray]  # (intersection volumes, IoUs)
_EPS = float(np.finfo(np.float64).eps)
# Coplanarity tolerance, relative to the pair's smallest extent. Snapping two faces that are
# d apart costs O(d) relative volume; not snapping nearly parallel faces (angle t) costs
# O(eps / t) from the ill-conditioned cut between them. ~sqrt(eps) balances the two:
# worst case ~3e-8 relative, typical 1e-13.
_SNAP_REL = 2e-8
_NOISE_ULPS = 64.0  # rounding allowance, in ulps of the coordinates involved
_PAIR_CHUNK = 2048  # pairs clipped per numpy batch (bounds temporary memory)
_SPHERE_CHUNK = 1 << 20  # (N, M) cells per bounding-sphere batch

# The face table is derived from boxes.py so that the two modules cannot disagree.
_UNIT_CORNERS = 2.0 * box_corners(np.array([0, 0, 0, 1, 1, 1, 0, 0, 0], dtype=np.float64))[0]
_UNIT_FACES = _UNIT_CORNERS[BOX_FACES]  # (6, 4, 3) faces of [-1, 1]^3, CCW from outside
_FACE_NORMALS = np.rint(_UNIT_FACES.mean(axis=1))  # (6, 3) outward unit normals
_FACE_AXIS = np.argmax(np.abs(_FACE_NORMALS), axis=1)  # (6,) box axis of each face
_FACE_SIGN = _FACE_NORMALS[np.arange(6), _FACE_AXIS]  # (6,) +1 / -1
# In-plane axes (u, v) of each face with u x v = the outward normal, so that the shoelace
# area of a counter-clockwise polygon seen from outside is positive.
_FACE_U = np.where(_FACE_SIGN > 0, (_FACE_AXIS + 1) % 3, (_FACE_AXIS + 2) % 3)
_FACE_V = np.where(_FACE_SIGN > 0, (_FACE_AXIS + 2) % 3, (_FACE_AXIS + 1) % 3)
_EDGE_PAD = 1e-10  # added to |Q| in the edge-axis tests, see _separated
_EDGE_I1 = np.array([1, 2, 0])  # (i + 1) % 3
_EDGE_I2 = np.array([2, 0, 1])  # (i + 2) % 3


def _valid(boxes: np.ndarray) -> np.ndarray:
    """(N, 9) -> (N,) bool: finite boxes with strictly positive extents (and volume)."""
    finite = np.all(np.isfinite(boxes), axis=1)
    positive = np.all(boxes[:, 3:6] > 0.0, axis=1)
    return finite & positive


def _rotations(boxes: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotations of the valid boxes; identity for the others (never used)."""
    if np.all(valid):
        return box_rotations(boxes)
    R = np.broadcast_to(np.eye(3), (len(boxes), 3, 3)).copy()
    if np.any(valid):
        R[valid] = box_rotations(boxes[valid])
    return R


def _separated(c: np.ndarray, Q: np.ndarray, ha: np.ndarray, hb: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """Separating-axis test (15 axes) in the frame of box a; touching counts as separated.

    Args:
        c: (K, 3) centre of b in a's frame.
        Q: (K, 3, 3) rotation of b in a's frame (columns are b's axes).
        ha, hb: (K, 3) half extents.
        tol: (K,) distance below which an overlap counts as touching.

    Returns:
        (K,) bool, True where the boxes overlap by at most ``tol`` along some axis.
    """
    absQ = np.abs(Q)
    tol = tol[:, None]
    # a's face normals e_i, then b's face normals q_j.
    sep = np.any(np.abs(c) > ha + np.einsum("kij,kj->ki", absQ, hb) - tol, axis=1)
    sep |= np.any(np.abs(np.einsum("kij,ki->kj", Q, c)) > np.einsum("kij,ki->kj", absQ, ha) + hb - tol, axis=1)
    # Edge axes e_i x q_j = (0, -Q[2j], Q[1j]) for i = 0 and cyclic: radii and distance
    # along the axis in closed form (Ericson, Real-Time Collision Detection, 4.4.1).
    i1, i2 = _EDGE_I1[:, None], _EDGE_I2[:, None]  # (3, 1)
    j1, j2 = _EDGE_I1[None, :], _EDGE_I2[None, :]  # (1, 3)
    jj = np.arange(3)[None, :]
    ii = np.arange(3)[:, None]
    # These use Q's orthonormality, which rounding breaks for nearly parallel edges (tiny
    # axes): padding |Q| keeps such axes from separating anything (Ericson's epsilon).
    absQ = absQ + _EDGE_PAD
    dist = np.abs(c[:, i2] * Q[:, i1, jj] - c[:, i1] * Q[:, i2, jj])  # (K, 3, 3)
    r_a = ha[:, i1] * absQ[:, i2, jj] + ha[:, i2] * absQ[:, i1, jj]
    r_b = hb[:, j1] * absQ[:, ii, j2] + hb[:, j2] * absQ[:, ii, j1]
    # |e_i x q_j| = sqrt(1 - Q_ij^2) scales the touching tolerance to the axis length.
    norm = np.sqrt(np.maximum(1.0 - Q * Q, 0.0))
    sep |= np.any(dist > r_a + r_b - tol[:, :, None] * norm, axis=(1, 2))
    return sep


def _directed_planes(
    c: np.ndarray, Q: np.ndarray, ha: np.ndarray, hb: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each box of a pair, placed in the other box's frame (direction 0: b in a; 1: a in b).

    Returns:
        ``(hx, normals, offsets, origin)``: (K, 2, 3) half extents of the frame's own box,
        (K, 2, 6, 3) outward normals and (K, 2, 6) offsets ``n . x <= offset`` of the other
        box's face planes, (K, 2, 3) position of a's centre (the volume origin).
    """
    k = len(c)
    Qt = np.swapaxes(Q, 1, 2)
    c_ab = np.einsum("kij,kj->ki", Qt, -c)  # a's centre in b's frame
    hx = np.stack([ha, hb], axis=1)
    hy = np.stack([hb, ha], axis=1)
    centre_y = np.stack([c, c_ab], axis=1)  # (K, 2, 3)
    axes_y = np.stack([Qt, Q], axis=1)  # (K, 2, 3, 3): rows are the other box's axes
    normals = axes_y[:, :, _FACE_AXIS] * _FACE_SIGN[None, None, :, None]  # (K, 2, 6, 3)
    offsets = np.einsum("kdgc,kdc->kdg", normals, centre_y) + hy[:, :, _FACE_AXIS]
    origin = np.stack([np.zeros((k, 3)), c_ab], axis=1)
    return hx, normals, offsets, origin


def _near_planes(hx: np.ndarray, normals: np.ndarray, offsets: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """(K, 2, 6, 6) bool: face f of the frame's box lies on plane g of the other box.

    True where both outward normals agree and all four corners of f are within ``tol`` of
    plane g. Indexed ``[k, direction, f, g]``.
    """
    n = np.swapaxes(normals, 2, 3)  # (K, 2, 3, 6 planes)
    n_i = n[:, :, _FACE_AXIS]  # (K, 2, 6 faces, 6 planes): normal component along f's axis
    h_i = hx[:, :, _FACE_AXIS][..., None]  # (K, 2, 6, 1)
    s_f = _FACE_SIGN[None, None, :, None]
    spread = np.einsum("kdc,kdcg->kdg", hx, np.abs(n))[:, :, None, :] - h_i * np.abs(n_i)
    dist = np.abs(s_f * h_i * n_i - offsets[:, :, None, :]) + spread
    return (s_f * n_i > 0.5) & (dist <= tol[:, None, None, None])


def _b_first(
    ca: np.ndarray, ea: np.ndarray, Ra: np.ndarray, cb: np.ndarray, eb: np.ndarray, Rb: np.ndarray
) -> np.ndarray:
    """(K,) bool: b is the smaller box (ties broken by the numbers), so (a, b) and (b, a) agree."""
    va, vb = np.prod(ea, axis=1), np.prod(eb, axis=1)
    diff = np.concatenate([cb - ca, eb - ea, (Rb - Ra).reshape(-1, 9)], axis=1)  # (K, 15)
    first = np.argmax(diff != 0.0, axis=1)
    lexi_less = diff[np.arange(len(diff)), first] < 0.0
    return (vb < va) | ((vb == va) & lexi_less)


def _smaller_first(
    ca: np.ndarray, ea: np.ndarray, Ra: np.ndarray, cb: np.ndarray, eb: np.ndarray, Rb: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Each pair as (smaller, larger) (``_b_first``): c_s, c_l, e_s, e_l, R_s, R_l, and (K,) scale =
    the pair's largest extent with inv = 1 / scale; the same numbers whichever order the pair comes in."""
    s = _b_first(ca, ea, Ra, cb, eb, Rb)[:, None]
    c_s, c_l = np.where(s, cb, ca), np.where(s, ca, cb)
    e_s, e_l = np.where(s, eb, ea), np.where(s, ea, eb)
    R_s, R_l = np.where(s[:, :, None], Rb, Ra), np.where(s[:, :, None], Ra, Rb)
    scale = np.maximum(e_s.max(axis=1), e_l.max(axis=1))
    return c_s, c_l, e_s, e_l, R_s, R_l, scale, 1.0 / scale


def _normalised_pair_volumes(
    ca: np.ndarray, ea: np.ndarray, Ra: np.ndarray, cb: np.ndarray, eb: np.ndarray, Rb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Intersection volumes of K matched valid box pairs, in units of each pair's scale.

    Args:
        ca, cb: (K, 3) centres (m); ea, eb: (K, 3) extents (m), all > 0; Ra, Rb: (K, 3, 3).

    Returns:
        ``(volume, scale)``: (K,) intersection volume divided by ``scale**3``, and (K,)
        scale = the largest extent of each pair (m).
    """
    # Work in the smaller box's frame: small/large pairs are then the same computation
    # whichever order they come in, and the origin sits inside the likely intersection.
    c_s, c_l, e_s, e_l, R_s, R_l, scale, inv = _smaller_first(ca, ea, Ra, cb, eb, Rb)
    c = np.einsum("kji,kj->ki", R_s, c_l - c_s) * inv[:, None]  # R_s^T (c_l - c_s)
    Q = np.swapaxes(R_s, 1, 2) @ R_l
    ha, hb = 0.5 * e_s * inv[:, None], 0.5 * e_l * inv[:, None]
    coord = (np.abs(c_s).max(axis=1) + np.abs(c_l).max(axis=1)) * inv
    tol = _SNAP_REL * np.minimum(e_s.min(axis=1), e_l.min(axis=1)) * inv + _NOISE_ULPS * _EPS * (coord + 1.0)

    volume = np.zeros(len(c))
    live = ~_separated(c, Q, ha, hb, tol)
    if not np.any(live):
        return volume, scale
    c, Q, ha, hb, tol = c[live], Q[live], ha[live], hb[live], tol[live]
    k = len(c)

    # Faces of a are clipped by b's planes in a's frame and vice versa, each face in its
    # own 2D coordinates. A face of b on a face plane of a (or the other way round) is the
    # same boundary: a's face stands for it and that plane no longer clips a's face.
    hx, normals, offsets, origin = _directed_planes(c, Q, ha, hb)
    near = _near_planes(hx, normals, offsets, tol)
    same = near[:, 0] | np.swapaxes(near[:, 1], 1, 2)  # (K, 6 faces of a, 6 faces of b)
    n = np.swapaxes(normals, 2, 3)  # (K, 2, 3, 6 planes)
    s_f = _FACE_SIGN[None, None, :, None]
    h_i = hx[:, :, _FACE_AXIS][..., None]
    lines = np.stack(
        [n[:, :, _FACE_U], n[:, :, _FACE_V], offsets[:, :, None, :] - s_f * h_i * n[:, :, _FACE_AXIS]], axis=-1
    )  # (K, 2, 6 faces, 6 planes, 3)
    lines[:, 0][same] = (0.0, 0.0, 1.0)  # always satisfied
    weight = np.ones((k, 2, 6))
    weight[:, 1] = ~np.any(same, axis=1)
    area = clipped_rectangle_areas(hx[:, :, _FACE_U], hx[:, :, _FACE_V], lines, weight > 0.0)

    # Distance of each face plane from a's centre: the lever arm of the divergence theorem.
    lever = hx[:, :, _FACE_AXIS] - _FACE_SIGN * origin[:, :, _FACE_AXIS]
    volume[live] = np.sum(weight * lever * area, axis=(1, 2)) / 3.0
    return volume, scale


def _upright_pair_volumes(
    ca: np.ndarray, ea: np.ndarray, Ra: np.ndarray, cb: np.ndarray, eb: np.ndarray, Rb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``_normalised_pair_volumes`` of K pairs of upright boxes (rotations about z alone): the
    overlap of their footprints times that of their heights. The footprint of the larger box,
    in the smaller one's frame, is four half-planes clipping the smaller's rectangle; a tenth of
    the general computation, which clips all twelve faces (gravity-aligned boxes are the usual case).
    """
    c_s, c_l, e_s, e_l, R_s, R_l, scale, inv = _smaller_first(ca, ea, Ra, cb, eb, Rb)  # order-free frame
    hs, hl = 0.5 * e_s * inv[:, None], 0.5 * e_l * inv[:, None]
    d = (c_l - c_s) * inv[:, None]
    height = np.minimum(d[:, 2] + hl[:, 2], hs[:, 2]) - np.maximum(d[:, 2] - hl[:, 2], -hs[:, 2])
    # The larger box's centre and axes in the smaller's frame (2D).
    cs, sn = R_s[:, 0, 0], R_s[:, 1, 0]
    u, v = cs * d[:, 0] + sn * d[:, 1], -sn * d[:, 0] + cs * d[:, 1]
    cr, sr = cs * R_l[:, 0, 0] + sn * R_l[:, 1, 0], cs * R_l[:, 1, 0] - sn * R_l[:, 0, 0]  # cos, sin of the turn
    along, across = cr * u + sr * v, -sr * u + cr * v
    lines = np.zeros((len(d), 6, 3))
    lines[:, :, 2] = 1.0  # rows 4 and 5: always satisfied
    lines[:, 0] = np.stack([cr, sr, along + hl[:, 0]], axis=1)
    lines[:, 1] = np.stack([-cr, -sr, hl[:, 0] - along], axis=1)
    lines[:, 2] = np.stack([-sr, cr, across + hl[:, 1]], axis=1)
    lines[:, 3] = np.stack([sr, -cr, hl[:, 1] - across], axis=1)
    area = clipped_rectangle_areas(hs[:, 0], hs[:, 1], lines, height > 0.0)
    return area * np.maximum(height, 0.0), scale


def _pair_overlaps(
    ca: np.ndarray, ea: np.ndarray, Ra: np.ndarray, cb: np.ndarray, eb: np.ndarray, Rb: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(K,) intersection volumes (m^3) and IoUs of K matched valid pairs, in chunks."""
    k = len(ca)
    inter, iou = np.zeros(k), np.zeros(k)
    upright = (Ra[:, 2, 2] == 1.0) & (Rb[:, 2, 2] == 1.0)  # a rotation about z alone leaves z as it is
    for lo in range(0, k, _PAIR_CHUNK):
        sl = slice(lo, lo + _PAIR_CHUNK)
        vol_n, scale = np.zeros(len(ca[sl])), np.ones(len(ca[sl]))
        for pick, volumes in ((upright[sl], _upright_pair_volumes), (~upright[sl], _normalised_pair_volumes)):
            if np.any(pick):
                idx = np.flatnonzero(pick) + lo
                vol_n[idx - lo], scale[idx - lo] = volumes(ca[idx], ea[idx], Ra[idx], cb[idx], eb[idx], Rb[idx])
        va_n = np.prod(ea[sl] / scale[:, None], axis=1)
        vb_n = np.prod(eb[sl] / scale[:, None], axis=1)
        vol_n = np.clip(vol_n, 0.0, np.minimum(va_n, vb_n))
        iou[sl] = vol_n / (va_n + vb_n - vol_n)
        inter[sl] = vol_n * scale**3
    # Extreme scales (sub-normal or 1e200 m extents) may overflow to inf or NaN: cleaned up
    # here (the callers silence numpy's warnings about them).
    inter = np.nan_to_num(inter, nan=0.0, posinf=np.finfo(np.float64).max)
    iou = np.clip(np.nan_to_num(iou, nan=0.0, posinf=0.0), 0.0, 1.0)
    return inter, iou


def _all_pairs(boxes_a: np.ndarray, boxes_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, M) intersection volumes and IoUs of every a against every b."""
    a, b = as_boxes(boxes_a), as_boxes(boxes_b)
    inter, iou = np.zeros((len(a), len(b))), np.zeros((len(a), len(b)))
    va, vb = _valid(a), _valid(b)
    if not (np.any(va) and np.any(vb)):
        return inter, iou
    Ra, Rb = _rotations(a, va), _rotations(b, vb)
    ia, ib = np.flatnonzero(va), np.flatnonzero(vb)
    radius_a = 0.5 * np.linalg.norm(a[ia, 3:6], axis=1)
    radius_b = 0.5 * np.linalg.norm(b[ib, 3:6], axis=1)
    rows = max(1, _SPHERE_CHUNK // len(ib))
    for lo in range(0, len(ia), rows):
        ra = ia[lo : lo + rows]
        gap = np.linalg.norm(a[ra, None, 0:3] - b[None, ib, 0:3], axis=2)
        near_i, near_j = np.nonzero(gap <= radius_a[lo : lo + rows, None] + radius_b[None, :])
        if len(near_i) == 0:
            continue
        pa, pb = ra[near_i], ib[near_j]
        v, u = _pair_overlaps(a[pa, 0:3], a[pa, 3:6], Ra[pa], b[pb, 0:3], b[pb, 3:6], Rb[pb])
        inter[pa, pb], iou[pa, pb] = v, u
    return inter, iou


def _matched_pairs(boxes_a: np.ndarray, boxes_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N,) intersection volumes and IoUs of a[i] against b[i]."""
    a, b = as_boxes(boxes_a), as_boxes(boxes_b)
    if len(a) != len(b):
        raise ValueError(f"matched box pairs need equal counts, got {len(a)} and {len(b)}")
    inter, iou = np.zeros(len(a)), np.zeros(len(a))
    ok = _valid(a) & _valid(b)
    if not np.any(ok):
        return inter, iou
    idx = np.flatnonzero(ok)
    gap = np.linalg.norm(a[idx, 0:3] - b[idx, 0:3], axis=1)
    near = idx[gap <= 0.5 * (np.linalg.norm(a[idx, 3:6], axis=1) + np.linalg.norm(b[idx, 3:6], axis=1))]
    if len(near):
        Ra, Rb = box_rotations(a[near]), box_rotations(b[near])
        inter[near], iou[near] = _pair_overlaps(a[near, 0:3], a[near, 3:6], Ra, b[near, 0:3], b[near, 3:6], Rb)
    return inter, iou


def _quietly(fn: Callable[[np.ndarray, np.ndarray], _Pair], boxes_a: np.ndarray, boxes_b: np.ndarray) -> _Pair:
    """Run ``fn`` with numpy's floating-point warnings off; its results are sanitised."""
    with np.errstate(all="ignore"):
        return fn(boxes_a, boxes_b)


def box_intersection_volume(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """Exact intersection volume of every box in ``boxes_a`` with every box in ``boxes_b``.

    Args:
        boxes_a: (N, 9) boxes (see embodied_ros.geometry.boxes); a (9,) box counts as (1, 9).
        boxes_b: (M, 9) boxes.

    Returns:
        (N, M) float64 volumes in cubic metres; 0.0 for disjoint, touching, zero-volume or
        non-finite boxes.

    Raises:
        ValueError: if a non-empty input does not have 9 columns.
    """
    return _quietly(_all_pairs, boxes_a, boxes_b)[0]


def box_iou_3d(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """Exact 3D IoU of every box in ``boxes_a`` with every box in ``boxes_b``.

    Args:
        boxes_a: (N, 9) boxes (see embodied_ros.geometry.boxes); a (9,) box counts as (1, 9).
        boxes_b: (M, 9) boxes.

    Returns:
        (N, M) float64 IoUs in [0, 1]; 0.0 where either box has no volume.

    Raises:
        ValueError: if a non-empty input does not have 9 columns.
    """
    return _quietly(_all_pairs, boxes_a, boxes_b)[1]


def pairwise_box_intersection_volume(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """Exact intersection volume of matched pairs ``boxes_a[i]``, ``boxes_b[i]``.

    Args:
        boxes_a, boxes_b: (N, 9) boxes.

    Returns:
        (N,) float64 volumes in cubic metres.

    Raises:
        ValueError: if the inputs are not (N, 9) with the same N.
    """
    return _quietly(_matched_pairs, boxes_a, boxes_b)[0]


def pairwise_box_iou_3d(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """Exact 3D IoU of matched pairs ``boxes_a[i]``, ``boxes_b[i]``.

    Args:
        boxes_a, boxes_b: (N, 9) boxes.

    Returns:
        (N,) float64 IoUs in [0, 1].

    Raises:
        ValueError: if the inputs are not (N, 9) with the same N.
    """
    return _quietly(_matched_pairs, boxes_a, boxes_b)[1]


def box_iou_2d(boxes_a: np.ndarray, boxes_b: np.ndarray) -> np.ndarray:
    """IoU of every (N, 4) xyxy image box with every (M, 4) one: (N, M), 0.0 where they do not overlap."""
    a, b = np.asarray(boxes_a, dtype=np.float64).reshape(-1, 4), np.asarray(boxes_b, dtype=np.float64).reshape(-1, 4)
    lo = np.maximum(a[:, None, :2], b[None, :, :2])
    hi = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(hi - lo, 0.0, None), axis=2)
    area_a = np.prod(a[:, 2:] - a[:, :2], axis=1)
    area_b = np.prod(b[:, 2:] - b[:, :2], axis=1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where((inter > 0) & (union > 0), inter / np.where(union > 0, union, 1.0), 0.0)
