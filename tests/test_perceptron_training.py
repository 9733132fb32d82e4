"""Targets and losses of the Embodied Perceptron, and a short real optimisation on one sample."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from embodied_ros.geometry.boxes import box_rotations
from embodied_ros.network.perceptron import EmbodiedPerceptron
from embodied_ros.network.perceptron_decode import faces_to_box
from embodied_ros.network.perceptron_loss import (
    LossWeights,
    _object_weights,
    box_corners,
    decoupled_corner_loss,
    perceptron_loss,
)
from embodied_ros.network.perceptron_targets import box_targets
from embodied_ros.training.config import synthetic_model

SMALL = replace(synthetic_model(), image_size=64, grid_shape=(8, 8, 4), voxel_size=0.4, grid_origin=(-1.6, -1.6, -0.8))
TABLE = np.array([0.2, 0.4, -0.2, 1.6, 0.9, 0.8, 0.3, 0.0, 0.0])
CUP = np.array([-1.1, -1.0, 0.35, 0.1, 0.1, 0.12, 0.0, 0.0, 0.0])  # between coarse voxel centres


def test_targets_give_every_box_a_positive_and_invert_exactly() -> None:
    centres = SMALL.box_voxel_centres()
    t = box_targets(centres, np.stack([TABLE, CUP]), np.array([1, 8]))
    assert set(t.box_index[t.positives].tolist()) == {0, 1}
    assert (t.labels[t.box_index == 1] == 8).all() and (t.labels[t.box_index == 0] == 1).all()
    inside = np.flatnonzero(t.box_index == 0)
    R = box_rotations(TABLE)[0]
    centre, size = faces_to_box(centres[inside], t.faces[inside].astype(np.float64), np.repeat(R[None], len(inside), 0))
    np.testing.assert_allclose(centre, np.repeat(TABLE[None, :3], len(inside), 0), atol=1e-5)
    np.testing.assert_allclose(size, np.repeat(TABLE[None, 3:6], len(inside), 0), atol=1e-5)
    assert ((t.centerness >= 0) & (t.centerness <= 1)).all() and t.centerness[inside].max() > 0.3
    empty = box_targets(centres, np.zeros((0, 9)), np.zeros(0))
    assert not empty.positives.any()


def test_small_box_gets_the_cell_around_its_centre_with_signed_faces() -> None:
    centres = SMALL.box_voxel_centres()  # edge 0.8 m: the cup (0.1 m) contains no centre
    edge = SMALL.box_voxel_size
    t = box_targets(centres, np.stack([TABLE, CUP]), np.array([1, 8]), centre_cell=True, margin=edge)
    cup = np.flatnonzero(t.box_index == 1)
    assert len(cup) == 8 and (t.labels[cup] == 8).all()
    d = np.linalg.norm(centres[cup] - CUP[:3], axis=1)
    assert (np.abs(centres[cup] - CUP[:3]) < edge).all()  # exactly the 2 x 2 x 2 cell holding the centre
    assert (t.faces[cup] < 0).any(axis=1).all()  # every one of them lies outside the cup
    R = np.repeat(box_rotations(CUP), len(cup), 0)
    centre, size = faces_to_box(centres[cup], t.faces[cup].astype(np.float64), R)
    np.testing.assert_allclose(centre, np.repeat(CUP[None, :3], len(cup), 0), atol=1e-5)  # signed: exact
    np.testing.assert_allclose(size, np.repeat(CUP[None, 3:6], len(cup), 0), atol=1e-5)
    ctr = t.centerness[cup]
    assert ((ctr > 0) & (ctr <= 1)).all() and ctr[np.argmin(d)] == ctr.max() and ctr.min() < ctr.max()
    clamped = box_targets(centres, np.stack([TABLE, CUP]), np.array([1, 8]), centre_cell=True, margin=0.0)
    assert clamped.faces.min() >= 0.0  # without a margin, outside positives are clamped onto the box


def test_decoupled_corner_loss_known_answers() -> None:
    c, s = torch.tensor([[0.0, 0.0, 0.5]]), torch.tensor([[1.0, 0.6, 0.4]])
    R = torch.from_numpy(Rotation.from_euler("ZXY", [0.4, 0.1, -0.2]).as_matrix()).float()[None]
    assert float(decoupled_corner_loss(c, s, R, c, s, R)) == pytest.approx(0.0, abs=1e-6)
    flipped = R @ torch.from_numpy(Rotation.from_euler("z", np.pi).as_matrix()).float()[None]
    assert float(decoupled_corner_loss(c, s, flipped, c, s, R)) == pytest.approx(0.0, abs=1e-5)  # symmetric box
    assert float(decoupled_corner_loss(c + 0.3, s, R, c, s, R)) > 0.1
    assert float(decoupled_corner_loss(c, s * 1.5, R, c, s, R)) > 0.05
    assert box_corners(c, s, R).shape == (1, 8, 3)


def test_object_balanced_weights_give_each_object_the_same_share() -> None:
    w = _object_weights(torch.tensor([0, 0, 0, 5]))  # a big object with 3 positives, a small one with 1
    np.testing.assert_allclose(w.numpy(), [1 / 6, 1 / 6, 1 / 6, 1 / 2], rtol=1e-6)
    assert float(w.sum()) == pytest.approx(1.0)


def test_relative_corner_loss_makes_a_shift_cost_more_on_a_small_box() -> None:
    R = torch.eye(3)[None]
    shift = torch.tensor([[0.05, 0.0, 0.0]])
    cup_c, cup_s = torch.tensor([[0.0, 0.0, 0.8]]), torch.tensor([[0.1, 0.1, 0.12]])
    bed_c, bed_s = torch.tensor([[1.0, 1.0, 0.3]]), torch.tensor([[2.0, 1.6, 0.6]])
    absolute = [float(decoupled_corner_loss(c + shift, s, R, c, s, R)) for c, s in ((cup_c, cup_s), (bed_c, bed_s))]
    assert absolute[0] == pytest.approx(absolute[1], rel=1e-5)  # metres: the same 5 cm, the same cost
    relative = [float(decoupled_corner_loss(c + shift, s, R, c, s, R, relative=True))
                for c, s in ((cup_c, cup_s), (bed_c, bed_s))]
    assert relative[0] > 10 * relative[1]
    both = decoupled_corner_loss(torch.cat([cup_c + shift, bed_c]), torch.cat([cup_s, bed_s]), R.repeat(2, 1, 1),
                                 torch.cat([cup_c, bed_c]), torch.cat([cup_s, bed_s]), R.repeat(2, 1, 1),
                                 weight=torch.tensor([1.0, 0.0]))
    assert float(both) == pytest.approx(absolute[0], rel=1e-5)  # the weights pick the cup alone


def test_balanced_relative_losses_run_on_real_targets() -> None:
    torch.manual_seed(0)
    model = EmbodiedPerceptron(SMALL)
    centres = SMALL.box_voxel_centres()
    targets = box_targets(centres, np.stack([TABLE, CUP]), np.array([1, 8]), centre_cell=True, margin=0.4)
    x = (torch.rand(1, 3, 64, 64), torch.rand(1, 3, 4), torch.zeros(1, 1, *SMALL.grid_shape))
    occ = torch.full(SMALL.grid_shape, SMALL.empty_label, dtype=torch.int64)
    outputs = model(*x)
    plain = perceptron_loss(outputs, targets, occ, torch.from_numpy(centres).float())
    tuned = perceptron_loss(outputs, targets, occ, torch.from_numpy(centres).float(),
                            LossWeights(balance_objects=True, relative_corners=True))
    assert torch.isfinite(tuned["total"])
    assert float(tuned["corners"].detach()) != pytest.approx(float(plain["corners"].detach()))
    tuned["total"].backward()
    assert model.box_dist.weight.grad is not None and float(model.box_dist.weight.grad.abs().sum()) > 0


def test_a_few_steps_of_training_reduce_the_loss() -> None:
    torch.manual_seed(0)
    model = EmbodiedPerceptron(SMALL)
    centres = SMALL.box_voxel_centres()
    targets = box_targets(centres, np.stack([TABLE, CUP]), np.array([1, 8]))
    occupancy = np.full(SMALL.grid_shape, SMALL.empty_label, np.int64)  # all empty ...
    occupancy[3:6, 3:6, 0:2] = 1  # ... but a block of "table"
    depth = np.zeros((1, 1, *SMALL.grid_shape), np.float32)
    depth[0, 0, 3:6, 3:6, 1] = 1.0
    K = np.array([[32.0, 0, 32], [0, 32.0, 32], [0, 0, 1]])
    P = K @ np.hstack([np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]]), np.array([[0.0], [0.0], [2.0]])])
    inputs = (torch.rand(1, 3, 64, 64), torch.from_numpy(P.astype(np.float32))[None], torch.from_numpy(depth))
    labels, coarse = torch.from_numpy(occupancy), torch.from_numpy(centres)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    history = []
    for _ in range(40):
        losses = perceptron_loss(model(*inputs), targets, labels, coarse)
        optimiser.zero_grad()
        losses["total"].backward()
        optimiser.step()
        history.append({k: float(v.detach()) for k, v in losses.items()})
    assert all(np.isfinite(h["total"]) for h in history)
    assert history[-1]["total"] < 0.5 * history[0]["total"]
    assert history[-1]["corners"] < history[0]["corners"]
