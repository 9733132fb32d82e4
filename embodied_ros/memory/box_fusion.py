"""Score-weighted fusion of two 9-DoF boxes that describe the same object.

A box is unchanged by the 24 proper rotations that permute its axes (with the extents
permuted alike), so two detections of one object can differ by 90 degrees in yaw with
swapped extents. Fusion first rewrites the second box in the symmetric form whose rotation
is nearest to the first one's, and only then averages:

- centre and extents: weighted means (extents matched axis by axis after the alignment, so a
  2 x 1 m table seen at yaw 0 and as 1 x 2 m at yaw pi/2 stays 2 x 1 m, never 1.5 x 1.5 m);
- yaw-only boxes (beta = gamma = 0, the released EmbodiedScan detectors' output): the yaw
  difference after alignment lies in [-pi/4, pi/4]; the fused yaw moves by the weighted share
  of it and is wrapped to [-pi/2, pi/2) (a box is pi-periodic in yaw), beta and gamma stay 0;
- general rotations: weighted average of the two unit quaternions on the same hemisphere,
  renormalised (for two rotations this is the exact weighted geodesic mean to second order,
  and it is well defined because the alignment keeps them within about 63 degrees).

The same symmetries let a box be written with its front (local -y, ``geometry.boxes.FRONT_AXIS``)
facing a chosen direction without changing the box (``face_box``): the scene memory uses it to
give objects the front they were seen from, since a detector indifferent to the symmetries
(the Embodied Perceptron's corner loss) cannot tell front from back.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..geometry.boxes import BOX_DIM, FRONT_AXIS, box_rotations, canonical_yaw_box, make_boxes

_YAW_ONLY_TOL = 1e-6  # radians: beta and gamma below this are rounding, the box is gravity-aligned


def _axis_symmetries() -> tuple[np.ndarray, np.ndarray]:
    """The 24 proper signed permutations P (det +1) and their axis permutations.

    ``R @ P`` is the same box as ``R`` when the extents are re-indexed as ``e[perm]``:
    column i of ``R @ P`` is +-column ``perm[i]`` of ``R``.
    """
    mats, perms = [], []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            P = np.zeros((3, 3))
            P[list(perm), [0, 1, 2]] = signs
            if np.linalg.det(P) > 0:
                mats.append(P)
                perms.append(perm)
    return np.array(mats), np.array(perms, dtype=np.int64)  # identity first


_SYM_MATS, _SYM_PERMS = _axis_symmetries()  # (24, 3, 3), (24, 3)


def is_yaw_only(box: np.ndarray) -> bool:
    """True when the (9,) box has beta = gamma = 0 (a gravity-aligned box with a yaw)."""
    return abs(box[7]) < _YAW_ONLY_TOL and abs(box[8]) < _YAW_ONLY_TOL


def canonical_box(box: np.ndarray) -> np.ndarray:
    """A fresh object's stored form: yaw-only boxes get dx >= dy and yaw in [-pi/2, pi/2)."""
    b = np.array(box, dtype=np.float64).reshape(BOX_DIM)
    if is_yaw_only(b):
        b[7:9] = 0.0
        return canonical_yaw_box(b)
    return b


def align_box(box: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Rewrite ``box`` in its symmetric form whose rotation is nearest to ``reference``'s.

    Args:
        box: (9,) the box to rewrite (same physical box, different parametrisation).
        reference: (9,) the box whose orientation to approach.

    Returns:
        (9,) equivalent box. Yaw-only pairs keep beta = gamma = 0 and a yaw within pi/4 of the
        reference's yaw (ties keep the box's own axes).
    """
    b = np.array(box, dtype=np.float64).reshape(BOX_DIM)
    ref = np.asarray(reference, dtype=np.float64).reshape(BOX_DIM)
    if is_yaw_only(b) and is_yaw_only(ref):
        d0 = _wrap_half_turn(b[6] - ref[6])
        d1 = _wrap_half_turn(b[6] + np.pi / 2 - ref[6])
        if abs(d1) < abs(d0) - 1e-12:
            b[3], b[4] = b[4], b[3]
            b[6] = ref[6] + d1
        else:
            b[6] = ref[6] + d0
        b[7:9] = 0.0
        return b
    R_ref = box_rotations(ref)[0]
    R_box = box_rotations(b)[0]
    M = R_ref.T @ R_box
    # trace(R_ref^T R_box P) is 1 + 2 cos(angle between R_ref and R_box P): largest = nearest.
    k = int(np.argmax(np.einsum("ij,kji->k", M, _SYM_MATS)))
    return make_boxes(b[0:3], b[3:6][_SYM_PERMS[k]], (R_box @ _SYM_MATS[k])[None])[0]


def face_box(box: np.ndarray, direction: np.ndarray, along: str | None = None) -> np.ndarray:
    """Rewrite ``box`` in its symmetric form with local z up and its front nearest ``direction``.

    Args:
        box: (9,) the box (any of its 24 equivalent parametrisations).
        direction: (2,) or (3,) world direction the front should face; only its horizontal
            part counts. A zero direction keeps the z-up form nearest the box's own front.
        along: "short" or "long": only forms whose front lies along the shorter (longer) of the
            two horizontal extents (a sofa faces across its depth, a bed towards its foot);
            None: any side.

    Returns:
        (9,) the same physical box: of the forms whose local z axis is the one nearest world
        up, the one whose front (``R @ FRONT_AXIS``) is nearest ``direction`` horizontally.
        Yaw-only boxes stay yaw-only (beta = gamma = 0, yaw wrapped to [-pi, pi)).
    """
    if along not in (None, "short", "long"):
        raise ValueError(f"along must be None, 'short' or 'long', got {along!r}")
    b = np.array(box, dtype=np.float64).reshape(BOX_DIM)
    d = np.asarray(direction, dtype=np.float64).reshape(-1)[:2]
    forms = box_rotations(b)[0][None] @ _SYM_MATS  # (24, 3, 3): the box's rotation times each symmetry
    up = forms[:, 2, 2]  # local z . world z
    allowed = up >= up.max() - 1e-9
    if along is not None:
        front_ext, side_ext = b[3:6][_SYM_PERMS[:, 1]], b[3:6][_SYM_PERMS[:, 0]]  # local y (front), local x
        shaped = front_ext <= side_ext + 1e-9 if along == "short" else front_ext >= side_ext - 1e-9
        allowed &= shaped  # z-up forms always hold both choices, so some form stays allowed
    fronts = forms @ FRONT_AXIS  # (24, 3)
    own = forms[0] @ FRONT_AXIS  # _SYM_MATS[0] is the identity: the box's own front breaks ties
    score = np.where(allowed, fronts[:, :2] @ d + 1e-6 * (fronts @ own), -np.inf)
    k = int(np.argmax(score))
    if is_yaw_only(b):
        out = b.copy()
        out[3:6] = b[3:6][_SYM_PERMS[k]]
        out[6] = float(np.arctan2(forms[k, 1, 0], forms[k, 0, 0]))  # yaw of the chosen local x axis
        out[7:9] = 0.0
        return out
    return make_boxes(b[0:3], b[3:6][_SYM_PERMS[k]], forms[k][None])[0]


def fuse_boxes(a: np.ndarray, weight_a: float, b: np.ndarray, weight_b: float) -> np.ndarray:
    """Weighted fusion of two (9,) boxes of one object (see the module notes).

    Args:
        a: (9,) the kept box (an object's current estimate); the result stays in its
            parametrisation (its axis order), so repeated fusion does not flip axes.
        weight_a: non-negative weight of ``a`` (accumulated scores).
        b: (9,) the new box.
        weight_b: non-negative weight of ``b`` (its score).

    Returns:
        (9,) fused box, metres and radians.
    """
    a = np.asarray(a, dtype=np.float64).reshape(BOX_DIM)
    total = float(weight_a) + float(weight_b)
    if total <= 0.0:
        return a.copy()
    f = float(weight_b) / total
    b_al = align_box(b, a)
    out = np.empty(BOX_DIM)
    out[0:6] = (1.0 - f) * a[0:6] + f * b_al[0:6]
    if is_yaw_only(a) and is_yaw_only(b_al):
        out[6] = _wrap_half_turn(a[6] + f * (b_al[6] - a[6]))
        out[7:9] = 0.0
        return out
    from scipy.spatial.transform import Rotation  # late: scipy.spatial takes 0.3 s to import

    qa, qb = Rotation.from_matrix(box_rotations(np.stack([a, b_al]))).as_quat()
    if np.dot(qa, qb) < 0.0:
        qb = -qb  # q and -q are one rotation: average on one hemisphere
    q = (1.0 - f) * qa + f * qb
    R = Rotation.from_quat(q / np.linalg.norm(q)).as_matrix()
    return make_boxes(out[0:3], out[3:6], R[None])[0]


def _wrap_half_turn(angle: float) -> float:
    """Angle wrapped to [-pi/2, pi/2): a box's yaw is defined modulo pi."""
    return float((angle + np.pi / 2) % np.pi - np.pi / 2)
