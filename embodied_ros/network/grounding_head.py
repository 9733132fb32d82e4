"""The Embodied Perceptron's grounding head: box proposals read the phrase's tokens, then a
contrastive score says which proposal the phrase names. Its own small graph (TensorRT-safe ops).

Outside the graph (data-dependent sizes): choosing the proposals (the scene memory's objects or
the decoded boxes), gathering their FPN features, and the text encoder (MiniLM, numpy).

Graph contract (fixed shapes, float32; padding masked)::

    proposal_features (1, K, F)  FPN features at each proposal's centre voxel
    proposal_geometry (1, K, 6)  centre relative to the proposals' mean (m), log extents
    proposal_mask     (1, K)     1 = a real proposal, 0 = padding
    text_tokens       (1, T, D)  contextual token states of the phrase (TextEncoder.encode_tokens)
    text_mask         (1, T)     1 = a real token, 0 = padding
    ->
    scores            (1, K)     logits; softmax over K gives "which object does the phrase name"
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

_NEG = -1e4  # additive mask: large enough to vanish in softmax, small enough for fp16


@dataclass(frozen=True)
class GroundingHeadConfig:
    """Sizes of the grounding head (one config = one exported graph)."""

    feature_dim: int = 32  # FPN features per proposal (PerceptronConfig.box_channels)
    text_dim: int = 384  # token states of all-MiniLM-L6-v2
    d_model: int = 64  # width of the decoder
    n_heads: int = 4
    n_layers: int = 2
    max_proposals: int = 64  # K of the exported graph
    max_tokens: int = 32  # T of the exported graph (longer phrases are cut)


class _Attention(nn.Module):
    """Multi-head attention written with MatMul/Softmax only (exports to plain ONNX ops)."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.d = heads, d
        self.q, self.k, self.v, self.out = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x: torch.Tensor, memory: torch.Tensor, memory_mask: torch.Tensor) -> torch.Tensor:
        b, n, _ = x.shape
        m = memory.shape[1]
        h, hd = self.heads, self.d // self.heads
        q = self.q(x).reshape(b, n, h, hd).transpose(1, 2)  # (B, H, N, hd)
        k = self.k(memory).reshape(b, m, h, hd).transpose(1, 2)  # (B, H, M, hd)
        v = self.v(memory).reshape(b, m, h, hd).transpose(1, 2)
        att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)  # (B, H, N, M)
        att = att + (1.0 - memory_mask)[:, None, None, :] * _NEG
        ctx = torch.matmul(torch.softmax(att, dim=-1), v)  # (B, H, N, hd)
        return self.out(ctx.transpose(1, 2).reshape(b, n, self.d))


class _DecoderLayer(nn.Module):
    """Proposals attend to each other (relations), then to the phrase, then an MLP."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.self_att, self.cross_att = _Attention(d, heads), _Attention(d, heads)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor, x_mask: torch.Tensor, text: torch.Tensor, t_mask: torch.Tensor) -> torch.Tensor:
        x = x + self.self_att(self.norm1(x), self.norm1(x), x_mask)
        x = x + self.cross_att(self.norm2(x), text, t_mask)
        return x + self.mlp(self.norm3(x))


class GroundingHead(nn.Module):
    """Proposals x phrase -> one logit per proposal (see the module docstring for the contract)."""

    def __init__(self, config: GroundingHeadConfig = GroundingHeadConfig()) -> None:
        super().__init__()
        self.config = config
        d = config.d_model
        self.proposal_in = nn.Sequential(nn.Linear(config.feature_dim + 6, d), nn.ReLU(), nn.Linear(d, d))
        self.text_in = nn.Linear(config.text_dim, d)
        self.layers = nn.ModuleList(_DecoderLayer(d, config.n_heads) for _ in range(config.n_layers))
        self.proposal_out = nn.Linear(d, d)
        self.text_out = nn.Linear(d, d)
        self.scale = nn.Parameter(torch.tensor(math.log(10.0)))  # learned temperature of the contrast

    def forward(self, proposal_features: torch.Tensor, proposal_geometry: torch.Tensor, proposal_mask: torch.Tensor,
                text_tokens: torch.Tensor, text_mask: torch.Tensor) -> torch.Tensor:
        x = self.proposal_in(torch.cat([proposal_features, proposal_geometry], dim=-1))  # (1, K, d)
        text = self.text_in(text_tokens)  # (1, T, d)
        for layer in self.layers:
            x = layer(x, proposal_mask, text, text_mask)
        pooled = (text * text_mask[..., None]).sum(dim=1) / text_mask.sum(dim=1, keepdim=True).clamp(min=1.0)  # (1, d)
        p = F.normalize(self.proposal_out(x), dim=-1)  # (1, K, d)
        t = F.normalize(self.text_out(pooled), dim=-1)[:, :, None]  # (1, d, 1)
        scores = torch.matmul(p, t).squeeze(-1) * self.scale.exp()  # (1, K)
        return scores + (1.0 - proposal_mask) * _NEG


HEAD_INPUTS = ("proposal_features", "proposal_geometry", "proposal_mask", "text_tokens", "text_mask")
HEAD_OUTPUTS = ("scores",)


def head_inputs(features: np.ndarray, boxes: np.ndarray, tokens: np.ndarray,
                config: GroundingHeadConfig) -> dict[str, np.ndarray]:
    """Pad proposals and tokens to the graph's fixed sizes.

    Args:
        features: (K, F) proposal features (K <= max_proposals; more are an error, choose first).
        boxes: (K, 9) proposal boxes (any frame; only relative centres and extents are used).
        tokens: (T, D) token states of the phrase (cut to max_tokens, keeping [SEP] last).
    """
    k, t = len(features), len(tokens)
    if k > config.max_proposals:
        raise ValueError(f"{k} proposals, the graph takes at most {config.max_proposals}")
    if t > config.max_tokens:
        tokens = np.concatenate([tokens[: config.max_tokens - 1], tokens[-1:]])
        t = config.max_tokens
    geometry = np.zeros((k, 6), np.float32)
    if k:
        geometry[:, :3] = boxes[:, :3] - boxes[:, :3].mean(axis=0)
        geometry[:, 3:] = np.log(np.maximum(boxes[:, 3:6], 1e-3))
    out = {
        "proposal_features": np.zeros((1, config.max_proposals, config.feature_dim), np.float32),
        "proposal_geometry": np.zeros((1, config.max_proposals, 6), np.float32),
        "proposal_mask": np.zeros((1, config.max_proposals), np.float32),
        "text_tokens": np.zeros((1, config.max_tokens, config.text_dim), np.float32),
        "text_mask": np.zeros((1, config.max_tokens), np.float32),
    }
    out["proposal_features"][0, :k] = features
    out["proposal_geometry"][0, :k] = geometry
    out["proposal_mask"][0, :k] = 1.0
    out["text_tokens"][0, :t] = tokens
    out["text_mask"][0, :t] = 1.0
    return out


def contrastive_loss(scores: torch.Tensor, target: int) -> torch.Tensor:
    """Cross-entropy of the softmax over proposals against the named one (index ``target``)."""
    return F.cross_entropy(scores, torch.tensor([target]))


def head_example_inputs(config: GroundingHeadConfig) -> tuple[torch.Tensor, ...]:
    """Inputs of the graph's fixed shapes (export, tests): one proposal, one token."""
    x = head_inputs(np.zeros((1, config.feature_dim), np.float32), np.full((1, 9), 0.5),
                    np.zeros((1, config.text_dim), np.float32), config)
    return tuple(torch.from_numpy(x[name]) for name in HEAD_INPUTS)
