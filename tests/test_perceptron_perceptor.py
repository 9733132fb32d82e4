"""The Embodied Perceptron as a Perceptor: graph inputs from a real frame, and a full perceive()."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from embodied_ros.detections import FramePerception
from embodied_ros.geometry.grid import GridSpec, aligned_grid_pose, voxels_in_view
from embodied_ros.network.perceptor import Perceptor
from embodied_ros.network.perceptron import EmbodiedPerceptron
from embodied_ros.network.perceptron_perceptor import PerceptronPerceptor, graph_inputs, torch_runner
from embodied_ros.sources.folders import SevenScenesFolder
from embodied_ros.training.config import synthetic_model

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
KITCHEN = DATA / "redkitchen"
needs_kitchen = pytest.mark.skipif(not KITCHEN.is_dir(), reason=f"redkitchen not found in {DATA}")


def test_grid_follows_the_camera_heading_and_the_floor() -> None:
    yaw = 0.8
    R_world_cam = np.array([[-np.sin(yaw), 0, np.cos(yaw)], [np.cos(yaw), 0, np.sin(yaw)], [0, -1, 0]])
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R_world_cam, [1.0, 2.0, 1.4]  # level camera 1.4 m above the floor at z = 0
    G = aligned_grid_pose(T, GridSpec(), floor_z=0.0)
    np.testing.assert_allclose(G[:3, 0], [np.cos(yaw), np.sin(yaw), 0], atol=1e-12)  # x = heading
    centre = G[:3, :3] @ (GridSpec().extent / 2) + G[:3, 3]
    np.testing.assert_allclose(centre[:2], [1.0, 2.0], atol=1e-12)  # centred on the camera
    assert G[2, 3] == pytest.approx(-0.78)


def test_voxels_in_view_are_the_frustum_ahead_of_the_camera() -> None:
    R_world_cam = np.array([[0, 0, 1], [-1, 0, 0], [0, -1, 0]], float)  # level, looking along world +x
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R_world_cam, [0.0, 0.0, 1.0]
    K = np.array([[300.0, 0, 320], [0, 300.0, 240], [0, 0, 1]])  # 640 x 480, 93 deg horizontal field of view
    spec = GridSpec()
    G = aligned_grid_pose(T, spec, floor_z=0.0)
    view = voxels_in_view(G, T, K, 640, 480, spec)
    assert view.shape == spec.shape

    def voxel(p: np.ndarray) -> tuple[int, ...]:
        return tuple(np.floor(np.linalg.solve(G, np.r_[p, 1.0])[:3] / spec.voxel_size).astype(int))

    assert view[voxel(np.array([2.0, 0.0, 1.0]))]  # 2 m straight ahead
    assert view[voxel(np.array([2.0, 1.5, 1.0]))]  # 37 deg to the left, inside the 46.8 deg half-angle
    assert not view[voxel(np.array([-2.0, 0.0, 1.0]))]  # behind
    assert not view[voxel(np.array([1.0, 2.5, 1.0]))]  # 68 deg to the left, outside
    assert not view[voxel(np.array([0.05, 0.0, 1.0]))]  # nearer than 0.1 m
    assert 0.05 < view.mean() < 0.25  # a ~90 deg wedge of a grid centred on the camera
    narrow = voxels_in_view(G, T, K, 320, 480, spec)  # the image's left half only
    assert narrow.sum() < view.sum() and not (narrow & ~view).any()


@needs_kitchen
def test_graph_inputs_of_a_real_frame_see_the_scene() -> None:
    frame = SevenScenesFolder(KITCHEN).read(0)
    config = synthetic_model()
    inputs = graph_inputs(frame, config)
    assert inputs.images.shape == (1, 3, 240, 240) and inputs.images.dtype == np.float32
    assert 0.0 <= inputs.images.min() and inputs.images.max() <= 1.0
    assert inputs.projections.shape == (1, 3, 4) and inputs.depth_volume.shape == (1, 1, 40, 40, 16)
    occupied = inputs.depth_volume[0, 0] > 0
    assert occupied.sum() > 200  # the kitchen's surfaces land in the grid
    # Occupied voxels project inside the image and in front of the camera (depth and pose agree).
    ijk = np.argwhere(occupied)
    centres = (ijk + 0.5) * config.voxel_size
    uvw = inputs.projections[0] @ np.c_[centres, np.ones(len(centres))].T
    uv = uvw[:2] / uvw[2]
    assert (uvw[2] > 0).all()
    inside = (uv >= -5) & (uv <= 245)
    assert inside.all(axis=0).mean() > 0.95


@needs_kitchen
def test_perceive_returns_world_detections_and_local_occupancy() -> None:
    torch.manual_seed(0)
    config = synthetic_model()
    perceptor = PerceptronPerceptor(torch_runner(EmbodiedPerceptron(config).eval()), config)
    assert isinstance(perceptor, Perceptor)
    frame = SevenScenesFolder(KITCHEN).read(3)
    result = perceptor.perceive(frame)
    assert isinstance(result, FramePerception) and result.frame_index == 3
    assert result.detections.frame_id == frame.world_frame
    assert result.detections.class_names == config.classes
    occ = result.occupancy
    assert occ is not None and occ.labels.shape == config.grid_shape and occ.labels.min() >= -1
    assert occ.class_names == config.occupancy_classes and occ.voxel_size == pytest.approx(0.16)
    assert set(result.timings_s) == {"preprocess", "network", "decode"}
    np.testing.assert_array_equal(result.viewpoint, frame.T_world_camera[:3, 3])  # where the memory turns fronts
