"""The grounding head's training loss on one sample: FPN features gathered at the proposals' centres."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..network.grounding_head import HEAD_INPUTS, GroundingHead, head_inputs
from ..network.perceptron import PerceptronConfig
from .samples import TrainingSample


def proposal_feature_indices(boxes_grid: np.ndarray, model: PerceptronConfig) -> np.ndarray:
    """(K,) flat indices into the box-level feature grid (z fastest) of the voxels holding the box centres."""
    shape = np.asarray(model.box_shape)
    ijk = np.floor((boxes_grid[:, :3] - np.asarray(model.grid_origin)) / model.box_voxel_size).astype(np.int64)
    ijk = np.clip(ijk, 0, shape - 1)
    return np.ravel_multi_index(ijk.T, model.box_shape)


def grounding_loss(features: torch.Tensor, sample: TrainingSample, head: GroundingHead,
                   model: PerceptronConfig) -> tuple[torch.Tensor, int, int]:
    """Mean contrastive loss over the sample's prompts, and (correct, total) top-1 picks.

    Args:
        features: (1, F, *box_shape) the perceptron's ``features`` output (gradients flow into it).
        sample: the keyframe with its proposals and prompts.
        head: the grounding head.
        model: the perceptron's config (grid geometry).
    """
    cfg = head.config
    k = min(len(sample.proposal_boxes), cfg.max_proposals)
    prompts = [p for p in sample.prompts if p.target < k]
    if not prompts or k == 0:
        return features.sum() * 0.0, 0, 0
    flat = torch.from_numpy(proposal_feature_indices(sample.proposal_boxes[:k], model))
    gathered = features.reshape(features.shape[1], -1)[:, flat].T  # (K, F)
    padded = torch.cat([gathered, gathered.new_zeros(cfg.max_proposals - k, gathered.shape[1])])[None]
    losses, correct = [], 0
    for prompt in prompts:
        fixed = head_inputs(np.zeros((k, cfg.feature_dim), np.float32), sample.proposal_boxes[:k],
                            prompt.tokens.astype(np.float32), cfg)
        args = [padded if name == "proposal_features" else torch.from_numpy(fixed[name]) for name in HEAD_INPUTS]
        scores = head(*args)  # (1, K_max)
        losses.append(F.cross_entropy(scores, torch.tensor([prompt.target])))
        correct += int(int(scores.argmax()) == prompt.target)
    return torch.stack(losses).mean(), correct, len(prompts)
