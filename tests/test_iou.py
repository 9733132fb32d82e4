"""Tests for embodied_ros.geometry.iou: exact 9-DoF box IoU and intersection volume."""

from __future__ import annotations

import numpy as np
import pytest

from embodied_ros.geometry import iou as iou_module
from embodied_ros.geometry.boxes import (
    box_rotations,
    box_volumes,
    euler_to_matrix,
    points_in_boxes,
    transform_boxes,
)
from embodied_ros.geometry.iou import (
    box_intersection_volume,
    box_iou_3d,
    pairwise_box_intersection_volume,
    pairwise_box_iou_3d,
)

UNIT = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0])


def _random_boxes(rng: np.random.Generator, n: int, spread: float = 1.0) -> np.ndarray:
    """(n, 9) boxes with centres in [-spread, spread]^3 and rotations about all three axes."""
    centres = rng.uniform(-spread, spread, (n, 3))
    sizes = rng.uniform(0.3, 2.0, (n, 3))
    angles = np.column_stack(
        [rng.uniform(-np.pi, np.pi, n), rng.uniform(-np.pi / 2, np.pi / 2, n), rng.uniform(-np.pi, np.pi, n)]
    )
    return np.concatenate([centres, sizes, angles], axis=1)


def _random_rigid(rng: np.random.Generator, translation_scale: float = 5.0) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = euler_to_matrix(rng.uniform(-np.pi, np.pi, 3))[0]
    T[:3, 3] = rng.normal(size=3) * translation_scale
    return T


def _grid_boxes(rng: np.random.Generator, n: int) -> np.ndarray:
    """Axis-aligned boxes on an integer grid: many shared face planes, edges and corners."""
    lo = rng.integers(0, 3, (n, 3)).astype(float)
    ext = rng.integers(1, 4, (n, 3)).astype(float)
    return np.concatenate([lo + ext / 2, ext, np.zeros((n, 3))], axis=1)


def _aabb_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """(N, M) exact intersection volumes of axis-aligned boxes."""
    lo = np.maximum(a[:, None, 0:3] - a[:, None, 3:6] / 2, b[None, :, 0:3] - b[None, :, 3:6] / 2)
    hi = np.minimum(a[:, None, 0:3] + a[:, None, 3:6] / 2, b[None, :, 0:3] + b[None, :, 3:6] / 2)
    return np.prod(np.clip(hi - lo, 0.0, None), axis=2)


def _shift_along_own_axis(box: np.ndarray, axis: int, distance: float) -> np.ndarray:
    out = box.copy()
    out[0:3] += distance * box_rotations(box)[0][:, axis]
    return out


def _monte_carlo_intersection(a: np.ndarray, b: np.ndarray, n: int, rng: np.random.Generator) -> tuple[float, float]:
    """Slow reference: sample a's box uniformly, count the points inside b.

    Returns:
        (estimate, standard error) of the intersection volume in cubic metres.
    """
    local = (rng.random((n, 3)) - 0.5) * a[3:6]
    points = local @ box_rotations(a)[0].T + a[0:3]
    assert points_in_boxes(points, a[None]).all()  # the sampler really samples a
    fraction = points_in_boxes(points, b[None])[0].mean()
    volume_a = float(box_volumes(a[None])[0])
    return volume_a * fraction, volume_a * np.sqrt(max(fraction * (1 - fraction), 1e-12) / n)


def test_identical_boxes_give_one() -> None:
    boxes = _random_boxes(np.random.default_rng(0), 50)
    iou = box_iou_3d(boxes, boxes)
    np.testing.assert_allclose(np.diag(iou), 1.0, atol=1e-9)
    np.testing.assert_allclose(pairwise_box_iou_3d(boxes, boxes), 1.0, atol=1e-9)
    np.testing.assert_allclose(np.diag(box_intersection_volume(boxes, boxes)), box_volumes(boxes), rtol=1e-9)


def test_identical_boxes_built_apart_give_one() -> None:
    # The same box written twice through different arithmetic (a round trip through a rigid
    # transform) differs in the last bits: the coplanar faces must still count once.
    rng = np.random.default_rng(1)
    boxes = _random_boxes(rng, 30)
    T = _random_rigid(rng)
    again = transform_boxes(transform_boxes(boxes, T), np.linalg.inv(T))
    np.testing.assert_allclose(pairwise_box_iou_3d(boxes, again), 1.0, atol=1e-9)


def test_disjoint_boxes_give_zero() -> None:
    rng = np.random.default_rng(2)
    boxes = _random_boxes(rng, 20)
    far = boxes.copy()
    far[:, 0] += 100.0
    assert np.all(box_iou_3d(boxes, far) == 0.0)
    # Gap along a rotated face normal while the bounding spheres overlap: the SAT decides.
    box = np.array([0.0, 0.0, 0.0, 2.0, 2.0, 0.2, 0.7, 0.4, -0.3])
    normal = box_rotations(box)[0][:, 2]
    lifted = box.copy()
    lifted[0:3] += 0.25 * normal
    assert box_iou_3d(box, lifted)[0, 0] == 0.0
    assert box_intersection_volume(box, lifted)[0, 0] == 0.0


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("d", [0.0, 1e-9, 0.1, 0.25, 0.5, 0.9, 0.999])
def test_unit_cube_shifted_along_own_axis(axis: int, d: float) -> None:
    rng = np.random.default_rng(axis)
    cube = UNIT.copy()
    cube[0:3] = rng.normal(size=3)
    cube[6:9] = rng.uniform(-np.pi, np.pi, 3)
    shifted = _shift_along_own_axis(cube, axis, d)
    expected = (1 - d) / (1 + d)
    assert box_iou_3d(cube, shifted)[0, 0] == pytest.approx(expected, abs=1e-9)
    assert box_intersection_volume(cube, shifted)[0, 0] == pytest.approx(1 - d, abs=1e-9)


@pytest.mark.parametrize("d", [1.0, 1.0 + 1e-12, 1.5])
def test_cube_shifted_by_its_size_or_more_gives_zero(d: float) -> None:
    cube = UNIT.copy()
    cube[6:9] = (0.3, -0.5, 1.1)
    shifted = _shift_along_own_axis(cube, 1, d)
    assert box_iou_3d(cube, shifted)[0, 0] == pytest.approx(0.0, abs=1e-12)


def test_axis_aligned_known_answers() -> None:
    a = np.array([[0.5, 0.5, 0.5, 1, 1, 1, 0, 0, 0]], dtype=float)  # [0,1]^3
    cases = {
        (1.0, 0.5, 0.5, 1, 1, 1): 1 / 3,  # shares four face planes, half overlap
        (0.5, 0.5, 0.25, 1, 1, 0.5): 0.5,  # inside, shares five faces
        (0.5, 0.5, 0.5, 2, 2, 2): 1 / 8,  # contains a
        (1.0, 1.0, 1.0, 1, 1, 1): (1 / 8) / (2 - 1 / 8),  # corner overlap
        (0.5, 0.5, 0.5, 0.5, 3, 0.5): (0.25) / (1 + 0.75 - 0.25),  # a rod through a
        (1.5, 0.5, 0.5, 1, 1, 1): 0.0,  # face contact
        (1.5, 1.5, 0.5, 1, 1, 1): 0.0,  # edge contact
        (1.5, 1.5, 1.5, 1, 1, 1): 0.0,  # corner contact
    }
    for (x, y, z, dx, dy, dz), expected in cases.items():
        b = np.array([[x, y, z, dx, dy, dz, 0, 0, 0]], dtype=float)
        assert box_iou_3d(a, b)[0, 0] == pytest.approx(expected, abs=1e-12), (x, y, z, dx, dy, dz)
        assert box_iou_3d(b, a)[0, 0] == pytest.approx(expected, abs=1e-12)


def test_rotated_square_gives_octagon() -> None:
    # A unit cube turned 45 degrees about z over another: the overlap is a regular octagon
    # of area 2 (sqrt 2 - 1) times the unit height.
    cube = UNIT.copy()
    turned = UNIT.copy()
    turned[6] = np.pi / 4
    inter = 2 * (np.sqrt(2) - 1)
    assert box_intersection_volume(cube, turned)[0, 0] == pytest.approx(inter, abs=1e-12)
    assert box_iou_3d(cube, turned)[0, 0] == pytest.approx(inter / (2 - inter), abs=1e-12)
    # The same about x (beta) and about y (gamma): all three Euler angles are used.
    for index in (7, 8):
        other = UNIT.copy()
        other[index] = np.pi / 4
        assert box_intersection_volume(cube, other)[0, 0] == pytest.approx(inter, abs=1e-12)


def test_grid_boxes_exact_under_rigid_motion() -> None:
    # Axis-aligned boxes have exact answers; moved together by a random rigid transform
    # their faces stay coplanar only up to rounding, which must not change the volume.
    rng = np.random.default_rng(3)
    a, b = _grid_boxes(rng, 25), _grid_boxes(rng, 25)
    expected = _aabb_overlap(a, b)
    np.testing.assert_allclose(box_intersection_volume(a, b), expected, atol=1e-12)
    for _ in range(3):
        T = _random_rigid(rng, translation_scale=50.0)
        moved = box_intersection_volume(transform_boxes(a, T), transform_boxes(b, T))
        np.testing.assert_allclose(moved, expected, atol=1e-9)


def test_symmetry() -> None:
    rng = np.random.default_rng(4)
    a, b = _random_boxes(rng, 40), _random_boxes(rng, 30)
    # Each pair is computed in the same frame whichever order it comes in; only the batch
    # layout (summation order) differs.
    np.testing.assert_allclose(box_iou_3d(a, b), box_iou_3d(b, a).T, rtol=1e-12, atol=1e-15)
    assert np.count_nonzero(box_iou_3d(a, b)) > 50  # the case is not vacuous
    # Equal volumes (no smaller box to pick) are symmetric too.
    c = a.copy()
    c[:, 0:3] += rng.normal(size=(40, 3)) * 0.2
    c[:, 6:9] += rng.normal(size=(40, 3)) * 0.2
    np.testing.assert_allclose(pairwise_box_iou_3d(a, c), pairwise_box_iou_3d(c, a), rtol=1e-12, atol=1e-15)


def test_invariant_under_common_rigid_transform() -> None:
    rng = np.random.default_rng(5)
    a, b = _random_boxes(rng, 30), _random_boxes(rng, 30)
    before = box_iou_3d(a, b)
    for _ in range(3):
        T = _random_rigid(rng)
        after = box_iou_3d(transform_boxes(a, T), transform_boxes(b, T))
        np.testing.assert_allclose(after, before, atol=1e-9)


def test_agrees_with_monte_carlo() -> None:
    rng = np.random.default_rng(6)
    n_points = 100_000
    checked = 0
    while checked < 20:
        a = _random_boxes(rng, 1, spread=0.0)[0]
        b = _random_boxes(rng, 1, spread=0.4)[0]
        exact = box_intersection_volume(a, b)[0, 0]
        if exact < 0.05 * min(box_volumes(a[None])[0], box_volumes(b[None])[0]):
            continue  # want real overlap
        estimate, stderr = _monte_carlo_intersection(a, b, n_points, rng)
        assert abs(estimate - exact) < 5 * stderr + 1e-9, (a, b, exact, estimate, stderr)
        checked += 1


def test_matched_pairs_agree_with_all_pairs() -> None:
    rng = np.random.default_rng(7)
    a, b = _random_boxes(rng, 60), _random_boxes(rng, 60)
    all_pairs = box_iou_3d(a, b)
    np.testing.assert_allclose(pairwise_box_iou_3d(a, b), np.diag(all_pairs), atol=1e-12)
    inter = box_intersection_volume(a, b)
    np.testing.assert_allclose(pairwise_box_intersection_volume(a, b), np.diag(inter), atol=1e-12)
    union = box_volumes(a)[:, None] + box_volumes(b)[None, :] - inter
    np.testing.assert_allclose(all_pairs, inter / union, atol=1e-12)


def test_batches_of_any_size_give_the_same_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(8)
    a, b = _random_boxes(rng, 25), _random_boxes(rng, 35)
    whole = box_iou_3d(a, b)
    monkeypatch.setattr(iou_module, "_PAIR_CHUNK", 7)
    monkeypatch.setattr(iou_module, "_SPHERE_CHUNK", 40)
    # Only the summation order may differ with the batch layout.
    np.testing.assert_allclose(box_iou_3d(a, b), whole, rtol=1e-12, atol=1e-15)
    one_by_one = np.array([[box_iou_3d(x, y)[0, 0] for y in b] for x in a])
    np.testing.assert_allclose(one_by_one, whole, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("scale", [1e-6, 1e-3, 1e3, 1e6])
def test_tiny_and_huge_boxes_scale_freely(scale: float) -> None:
    rng = np.random.default_rng(9)
    a, b = _random_boxes(rng, 10, spread=0.5), _random_boxes(rng, 10, spread=0.5)
    scaled_a, scaled_b = a.copy(), b.copy()
    scaled_a[:, 0:6] *= scale
    scaled_b[:, 0:6] *= scale
    np.testing.assert_allclose(box_iou_3d(scaled_a, scaled_b), box_iou_3d(a, b), atol=1e-9)
    np.testing.assert_allclose(pairwise_box_iou_3d(scaled_a, scaled_a), 1.0, atol=1e-9)


def test_tiny_box_inside_large_box() -> None:
    big = np.array([3.0, -2.0, 1.0, 10.0, 8.0, 4.0, 0.3, 0.1, -0.2])
    tiny = np.array([3.0, -2.0, 1.0, 1e-6, 2e-6, 1e-6, 1.0, 0.5, 0.2])
    assert box_intersection_volume(tiny, big)[0, 0] == pytest.approx(2e-18, rel=1e-9)
    assert box_iou_3d(big, tiny)[0, 0] == pytest.approx(2e-18 / 320.0, rel=1e-9)


def test_degenerate_boxes_give_finite_numbers_in_range() -> None:
    cube = UNIT.copy()
    flat = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.2, 0.1, 0.0])
    degenerate = np.array(
        [
            flat,  # zero thickness
            [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0],  # a point
            [0.0, 0.0, 0.0, 1.0, -1.0, 1.0, 0.0, 0.0, 0.0],  # negative extent
            [np.nan, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, np.inf, 1.0, 1.0, 0.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 1e-300, 1e-300, 1e-300, 0.0, 0.0, 0.0],  # volume underflows
            [0.0, 0.0, 0.0, 1e200, 1e200, 1e200, 0.0, 0.0, 0.0],  # volume overflows
            [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1e20, -1e20, 3.0],  # absurd angles
            [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0],  # touches the cube
        ]
    )
    boxes = np.vstack([degenerate, cube, _random_boxes(np.random.default_rng(10), 10)])
    with np.errstate(all="raise"):  # no floating-point trouble leaks out either
        iou = box_iou_3d(boxes, boxes)
        inter = box_intersection_volume(boxes, boxes)
        pair = pairwise_box_iou_3d(boxes, boxes[::-1])
    assert np.all(np.isfinite(iou)) and np.all((iou >= 0) & (iou <= 1))
    assert np.all(np.isfinite(inter)) and np.all(inter >= 0)
    assert np.all(np.isfinite(pair)) and np.all((pair >= 0) & (pair <= 1))
    assert np.all(iou[:5] == 0.0) and np.all(iou[:, :5] == 0.0)  # zero-volume or non-finite
    assert box_iou_3d(flat, flat)[0, 0] == 0.0
    assert box_iou_3d(boxes[8], cube)[0, 0] == 0.0  # touching
    assert iou[6, 6] == pytest.approx(1.0)  # huge but finite: still itself
    assert iou[7, 7] == pytest.approx(1.0)


def test_empty_inputs_have_the_right_shapes() -> None:
    boxes = _random_boxes(np.random.default_rng(11), 4)
    empty = np.zeros((0, 9))
    assert box_iou_3d(empty, boxes).shape == (0, 4)
    assert box_iou_3d(boxes, empty).shape == (4, 0)
    assert box_iou_3d(empty, empty).shape == (0, 0)
    assert box_intersection_volume(boxes, []).shape == (4, 0)
    assert pairwise_box_iou_3d(empty, empty).shape == (0,)
    assert box_iou_3d(boxes[0], boxes).shape == (1, 4)  # a single (9,) box
    assert box_iou_3d(boxes, boxes).dtype == np.float64


def test_bad_shapes_raise_value_error() -> None:
    with pytest.raises(ValueError, match="9"):
        box_iou_3d(np.zeros((3, 7)), np.zeros((2, 9)))
    with pytest.raises(ValueError, match="equal counts"):
        pairwise_box_iou_3d(np.zeros((3, 9)), np.zeros((2, 9)))
