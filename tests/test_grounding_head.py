"""The network's grounding head: masking, equivariance, ONNX Runtime parity, and that it learns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch

from embodied_ros.network.grounding_head import (
    HEAD_INPUTS,
    HEAD_OUTPUTS,
    GroundingHead,
    GroundingHeadConfig,
    contrastive_loss,
    head_inputs,
)
from embodied_ros.network.onnx_export import check_tensorrt_compatible, export_onnx

SMALL = GroundingHeadConfig(feature_dim=8, text_dim=16, d_model=16, n_heads=2, n_layers=1, max_proposals=6,
                            max_tokens=5)


def _inputs(rng: np.random.Generator, k: int = 4, t: int = 3) -> dict[str, np.ndarray]:
    boxes = np.c_[rng.normal(size=(k, 3)), rng.uniform(0.1, 1.0, (k, 3)), np.zeros((k, 3))]
    return head_inputs(rng.normal(size=(k, 8)).astype(np.float32), boxes, rng.normal(size=(t, 16)).astype(np.float32),
                       SMALL)


def _scores(model: GroundingHead, inputs: dict[str, np.ndarray]) -> np.ndarray:
    with torch.no_grad():
        return model(*(torch.from_numpy(inputs[n]) for n in HEAD_INPUTS)).numpy()[0]


def test_padding_is_masked_and_inputs_are_cut_to_the_graph() -> None:
    torch.manual_seed(0)
    model, rng = GroundingHead(SMALL).eval(), np.random.default_rng(0)
    x = _inputs(rng)
    scores = _scores(model, x)
    assert x["proposal_mask"][0].tolist() == [1, 1, 1, 1, 0, 0] and x["text_mask"][0].sum() == 3
    assert (scores[4:] < -1e3).all() and (np.abs(scores[:4]) < 1e3).all()
    x2 = {k: v.copy() for k, v in x.items()}
    x2["proposal_features"][0, 4:] = 99.0  # junk in the padding changes nothing
    x2["text_tokens"][0, 3:] = -99.0
    np.testing.assert_allclose(_scores(model, x2)[:4], scores[:4], atol=1e-5)
    long = head_inputs(np.zeros((2, 8), np.float32), np.zeros((2, 9)) + 0.5, np.arange(9 * 16, dtype=np.float32)
                       .reshape(9, 16), SMALL)
    assert long["text_mask"].sum() == 5 and long["text_tokens"][0, 4, 0] == 8 * 16  # the [SEP] token kept last
    with pytest.raises(ValueError, match="at most 6"):
        head_inputs(np.zeros((7, 8), np.float32), np.zeros((7, 9)), np.zeros((2, 16), np.float32), SMALL)


def test_scores_follow_the_proposals_when_they_are_reordered() -> None:
    torch.manual_seed(1)
    model, rng = GroundingHead(SMALL).eval(), np.random.default_rng(1)
    x = _inputs(rng)
    perm = np.array([2, 0, 3, 1, 4, 5])
    y = {k: v.copy() for k, v in x.items()}
    for key in ("proposal_features", "proposal_geometry", "proposal_mask"):
        y[key] = x[key][:, perm]
    np.testing.assert_allclose(_scores(model, y), _scores(model, x)[perm], atol=1e-5)


def test_onnx_runtime_matches_pytorch_and_graph_is_tensorrt_safe(tmp_path: Path) -> None:
    torch.manual_seed(2)
    model, rng = GroundingHead(SMALL).eval(), np.random.default_rng(2)
    x = _inputs(rng)
    onnx_model = export_onnx(model, [torch.from_numpy(x[n]) for n in HEAD_INPUTS], tmp_path / "head.onnx",
                             input_names=HEAD_INPUTS, output_names=HEAD_OUTPUTS)
    assert check_tensorrt_compatible(onnx_model) == []
    got = ort.InferenceSession(str(tmp_path / "head.onnx"), providers=["CPUExecutionProvider"]).run(None, x)[0]
    np.testing.assert_allclose(got[0, :4], _scores(model, x)[:4], rtol=1e-4, atol=1e-4)


def test_head_learns_to_pick_the_named_class_from_real_token_states() -> None:
    encoder_module = pytest.importorskip("embodied_ros.grounding.text_encoder")
    try:
        encoder = encoder_module.TextEncoder()
    except Exception as err:  # the packaged model is missing: say so
        pytest.skip(f"text encoder unavailable: {err}")
    classes = ["chair", "cup", "table", "monitor"]
    phrases = {c: encoder.encode_tokens(f"the {c} in the room") for c in classes}
    config = GroundingHeadConfig(feature_dim=4, d_model=32, n_layers=1, max_proposals=4, max_tokens=12)
    torch.manual_seed(3)
    model = GroundingHead(config)
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(3)

    def sample() -> tuple[dict[str, np.ndarray], int]:
        order = rng.permutation(4)  # proposal i has class classes[order[i]] (one-hot feature)
        target_class = int(rng.integers(4))
        boxes = np.c_[rng.normal(size=(4, 3)), np.full((4, 3), 0.5), np.zeros((4, 3))]
        x = head_inputs(np.eye(4, dtype=np.float32)[order], boxes, phrases[classes[target_class]], config)
        return x, int(np.flatnonzero(order == target_class)[0])

    for _ in range(150):
        x, target = sample()
        loss = contrastive_loss(model(*(torch.from_numpy(x[n]) for n in HEAD_INPUTS)), target)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    hits = 0
    for _ in range(40):
        x, target = sample()
        hits += int(np.argmax(_scores(model, x)) == target)
    assert hits >= 36  # >= 90 %; chance is 25 %
