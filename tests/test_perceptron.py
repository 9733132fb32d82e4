"""The Embodied Perceptron graph: shapes, lifting geometry, ONNX Runtime parity, TensorRT-safe ops, decode."""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from scipy.spatial.transform import Rotation

from embodied_ros.errors import ConfigError
from embodied_ros.geometry.boxes import make_boxes
from embodied_ros.geometry.iou import box_iou_3d
from embodied_ros.geometry.transforms import make_transform
from embodied_ros.network.onnx_export import check_tensorrt_compatible, export_onnx
from embodied_ros.network.perceptron import (
    INPUT_NAMES,
    OUTPUT_NAMES,
    EmbodiedPerceptron,
    PerceptronConfig,
    VoxelLifting,
    count_parameters,
    example_inputs,
    output_names,
    perceptron_contract,
)
from embodied_ros.network.perceptron_decode import (
    DecodeParams,
    box_to_faces,
    decode_boxes,
    nms_3d,
    rotation_from_6d,
    rotation_to_6d,
)
from embodied_ros.training.config import synthetic_model

SMALL = replace(synthetic_model(), image_size=64, grid_shape=(8, 8, 4), voxel_size=0.4, grid_origin=(-1.6, -1.6, -0.8))
FINE = dataclasses.replace(SMALL, box_stride=1, feature_stride=4, face_margin=0.4)
PIXELS = dataclasses.replace(FINE, pixel_head=True)
# Grid frame -> camera: a camera at the grid origin looking along grid +y (optical z = +y, optical y = -z).
R_CAM_GRID = np.array([[1.0, 0, 0], [0, 0, -1], [0, 1, 0]])


def _projection(config: PerceptronConfig, f: float) -> np.ndarray:
    s = config.image_size
    K = np.array([[f, 0, s / 2], [0, f, s / 2], [0, 0, 1]])
    return (K @ np.hstack([R_CAM_GRID, np.zeros((3, 1))])).astype(np.float32)


def test_forward_shapes_follow_the_contract() -> None:
    model = EmbodiedPerceptron(SMALL).eval()
    with torch.no_grad():
        out = model(*example_inputs(SMALL))
    n = SMALL.num_classes
    shapes = dict(zip(OUTPUT_NAMES, [tuple(o.shape) for o in out], strict=True))
    assert shapes["occupancy"] == (1, SMALL.empty_label + 1, 8, 8, 4)
    assert shapes["box_cls"] == (1, n, 4, 4, 2) and shapes["box_dist"] == (1, 6, 4, 4, 2)
    assert shapes["box_rot"] == (1, 6, 4, 4, 2) and shapes["box_ctr"] == (1, 1, 4, 4, 2)
    assert float(out[3].min()) >= 0.0  # face distances are non-negative
    assert count_parameters(EmbodiedPerceptron(synthetic_model())) < 2_000_000  # "a few MB" of weights


def test_lifting_samples_only_voxels_in_view() -> None:
    lifting = VoxelLifting(SMALL)
    features = torch.ones(1, 2, 8, 8)
    features[:, 1] = 5.0
    volume = lifting(features, torch.from_numpy(_projection(SMALL, f=32.0))[None])  # (1, 3, X, Y, Z)
    seen = volume[0, 2].numpy()
    centres = SMALL.voxel_centres().reshape(8, 8, 4, 3)
    cam = centres @ R_CAM_GRID.T  # camera coordinates of every voxel centre
    u = 32.0 * cam[..., 0] / np.maximum(cam[..., 2], 1e-9) + 32
    v = 32.0 * cam[..., 1] / np.maximum(cam[..., 2], 1e-9) + 32
    expected = (cam[..., 2] > 1e-3) & (u >= 0) & (u <= 64) & (v >= 0) & (v <= 64)
    assert expected.any() and (~expected).any()
    np.testing.assert_array_equal(seen > 0.5, expected)
    interior = expected & (u >= 8) & (u <= 56) & (v >= 8) & (v <= 56)  # away from the zero padding
    assert interior.any()
    np.testing.assert_allclose(volume[0, 1].numpy()[interior], 5.0, atol=1e-5)  # sampled feature values
    assert np.all(volume[0, 1].numpy()[expected] > 0.0)
    assert np.all(volume[0, 1].numpy()[~expected] == 0.0)


def test_full_resolution_box_level_and_finer_image_features() -> None:
    fine = dataclasses.replace(FINE, face_margin=0.4)
    model = EmbodiedPerceptron(fine).eval()
    with torch.no_grad():
        out = model(*example_inputs(fine))
    shapes = dict(zip(OUTPUT_NAMES, [tuple(o.shape) for o in out], strict=True))
    assert shapes["box_cls"] == (1, fine.num_classes, 8, 8, 4) and shapes["box_dist"] == (1, 6, 8, 8, 4)
    assert shapes["features"] == (1, fine.volume_channels[0], 8, 8, 4) == (1, fine.box_channels, *fine.box_shape)
    assert [s.shape for s in perceptron_contract(fine).outputs] == list(shapes.values())
    assert float(out[3].min()) >= -0.4 - 1e-6  # signed face distances, bounded by the margin
    assert len(fine.box_voxel_centres()) == 8 * 8 * 4 and fine.box_voxel_size == fine.voxel_size
    assert tuple(model.image_encoder(torch.zeros(1, 3, 64, 64)).shape) == (1, fine.image_channels, 16, 16)  # 1/4


@pytest.mark.parametrize("field, value", [("box_stride", 3), ("feature_stride", 2), ("face_margin", -0.1)])
def test_bad_head_settings_are_config_errors(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(SMALL, **{field: value})


def test_pixel_head_adds_one_output_at_half_the_input() -> None:
    model = EmbodiedPerceptron(PIXELS).eval()
    with torch.no_grad():
        out = model(*example_inputs(PIXELS))
        alone = model.pixel_logits(example_inputs(PIXELS)[0])
    names = output_names(PIXELS)
    assert names == (*OUTPUT_NAMES, "pixel_cls") and output_names(FINE) == OUTPUT_NAMES
    assert [s.shape for s in perceptron_contract(PIXELS).outputs] == [tuple(o.shape) for o in out]
    assert tuple(out[-1].shape) == (1, PIXELS.num_classes + 1, 32, 32)  # classes + other at 1/2 of 64 px
    torch.testing.assert_close(out[-1], alone)  # the head alone gives what the whole graph gives
    with pytest.raises(ConfigError, match="pixel head"):
        EmbodiedPerceptron(FINE).pixel_logits(torch.zeros(1, 3, 64, 64))


@pytest.mark.parametrize("config", [SMALL, FINE, PIXELS],
                         ids=["half-resolution boxes", "full-resolution boxes", "with pixel head"])
def test_onnx_runtime_matches_pytorch_and_graph_is_tensorrt_safe(tmp_path: Path, config: PerceptronConfig) -> None:
    torch.manual_seed(0)
    model = EmbodiedPerceptron(config).eval()
    rng = np.random.default_rng(0)
    inputs = (torch.from_numpy(rng.random((1, 3, 64, 64), dtype=np.float32)),
              torch.from_numpy(_projection(SMALL, 32.0))[None],
              torch.from_numpy(rng.random((1, 1, 8, 8, 4), dtype=np.float32)))
    names = output_names(config)
    onnx_model = export_onnx(model, inputs, tmp_path / "perceptron.onnx", input_names=INPUT_NAMES,
                             output_names=names)
    assert check_tensorrt_compatible(onnx_model) == []
    ops = {node.op_type for node in onnx_model.graph.node}
    assert "GridSample" in ops and "ScatterND" not in ops
    session = ort.InferenceSession(str(tmp_path / "perceptron.onnx"), providers=["CPUExecutionProvider"])
    got = session.run(list(names), {k: v.numpy() for k, v in zip(INPUT_NAMES, inputs, strict=True)})
    with torch.no_grad():
        want = model(*inputs)
    for name, a, b in zip(names, got, want, strict=True):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-4, atol=1e-4, err_msg=name)


def test_rotation_6d_round_trip() -> None:
    R = Rotation.random(20, random_state=1).as_matrix()
    np.testing.assert_allclose(rotation_from_6d(rotation_to_6d(R)), R, atol=1e-12)
    noisy = rotation_to_6d(R) * 3.0 + 0.01  # unnormalised and slightly off: still a rotation
    Rn = rotation_from_6d(noisy)
    np.testing.assert_allclose(Rn @ Rn.transpose(0, 2, 1), np.tile(np.eye(3), (20, 1, 1)), atol=1e-9)
    assert np.allclose(np.linalg.det(Rn), 1.0)


def test_decode_recovers_an_encoded_box_in_the_world() -> None:
    config = synthetic_model()
    coarse = config.box_voxel_centres()  # (20 * 20 * 8, 3)
    R = Rotation.from_euler("ZXY", [0.6, 0.2, -0.1]).as_matrix()
    centre, size = np.array([0.5, 1.1, 0.3]), np.array([0.8, 0.5, 0.9])
    k = int(np.argmin(np.linalg.norm(coarse - centre, axis=1)))
    n_vox, c = len(coarse), config.num_classes
    cls = np.full((c, n_vox), -8.0)
    cls[3, k] = 6.0
    ctr = np.full(n_vox, 3.0)
    dist = np.zeros((6, n_vox))
    dist[:, k] = box_to_faces(coarse[k][None], centre[None], size[None], R[None])[0]
    rot = np.zeros((6, n_vox))
    rot[:, k] = rotation_to_6d(R[None])[0]
    T_world_grid = make_transform(Rotation.from_euler("z", 0.7).as_matrix(), [2.0, -1.0, 1.2])
    shape = (1, -1, 20, 20, 8)
    boxes, labels, scores = decode_boxes(cls.reshape(shape), ctr.reshape(shape), dist.reshape(shape),
                                         rot.reshape(shape), coarse, T_world_grid)
    assert len(boxes) == 1 and labels[0] == 3 and scores[0] > 0.9
    truth = make_boxes((T_world_grid[:3, :3] @ centre + T_world_grid[:3, 3])[None], size[None],
                       (T_world_grid[:3, :3] @ R)[None])
    assert box_iou_3d(boxes, truth)[0, 0] == pytest.approx(1.0, abs=1e-6)


def test_decode_keeps_a_cup_beside_a_large_object_and_under_a_table_class() -> None:
    """Per-class top-k and multi-label candidates: a bed's many voxels and a cup voxel whose best
    class is "table" still give a cup box."""
    config = synthetic_model()
    centres = config.box_voxel_centres()
    n_vox, c = len(centres), config.num_classes
    bed, table, cup = (config.classes.index(n) for n in ("bed", "table", "cup"))
    cls, ctr = np.full((c, n_vox), -8.0), np.full(n_vox, 2.0)
    dist, rot = np.full((6, n_vox), 0.1), np.tile(rotation_to_6d(np.eye(3)[None])[0][:, None], (1, n_vox))
    far = np.flatnonzero(np.linalg.norm(centres - [3.0, 3.0, 0.5], axis=1) < 1.0)  # many "bed" voxels
    cls[bed, far] = 5.0
    k = int(np.argmin(np.linalg.norm(centres - [0.5, 0.5, 0.8], axis=1)))
    cls[table, k], cls[cup, k] = 1.0, -1.0  # best class "table", cup still likely (sigmoid 0.27)
    shape = (1, -1, 20, 20, 8)
    args = (cls.reshape(shape), ctr.reshape(shape), dist.reshape(shape), rot.reshape(shape), centres, np.eye(4))
    boxes, labels, scores = decode_boxes(*args, params=DecodeParams(top_k=5))
    assert len(far) > 5 and cup in labels and table in labels and bed in labels
    np.testing.assert_allclose(boxes[labels == cup][0, :3], centres[k], atol=1e-6)
    assert np.all(np.diff(scores) <= 0)  # best first
    single = decode_boxes(*args, params=DecodeParams(top_k=5, multi_label=False))[1]
    assert cup not in single and table in single  # one class per voxel: the cup is lost
    _, p_labels, p_scores = decode_boxes(*args, params=DecodeParams(top_k=5, score="product"))
    assert p_scores[p_labels == cup][0] == pytest.approx(scores[labels == cup][0] ** 2)  # geometric = sqrt(product)
    with pytest.raises(ValueError, match="score"):
        DecodeParams(score="max")


def test_nms_suppresses_duplicates_within_a_class() -> None:
    box = np.array([0, 0, 0, 1, 1, 1, 0, 0, 0.0])
    boxes = np.stack([box, box + [0.05, 0, 0, 0, 0, 0, 0, 0, 0], box + [3, 0, 0, 0, 0, 0, 0, 0, 0]])
    scores, labels = np.array([0.5, 0.9, 0.4]), np.array([1, 1, 1])
    assert nms_3d(boxes, scores, labels, 0.25, class_agnostic=False).tolist() == [1, 2]
    assert nms_3d(boxes, scores, np.array([1, 2, 1]), 0.25, class_agnostic=False).tolist() == [1, 0, 2]
    assert DecodeParams().nms_iou == 0.25
