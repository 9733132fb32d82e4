"""Test helper: a small multi-view network shaped like the Embodied Perceptron's graph, with its contract.

Several named inputs share a dynamic ``views`` axis (as the perceptron's views of a keyframe window
will), views are averaged inside the graph (a reduction over the dynamic axis), and the outputs
have fixed shapes: what the runtime contract, the export and every backend must handle.
"""

from __future__ import annotations

import torch

from embodied_ros.runtime import AxisRange, IOContract, TensorSpec

SIZE = 16  # image side in pixels
VIEWS = AxisRange(1, 4, 8)


class MultiViewNet(torch.nn.Module):
    """images (V, 3, S, S), projections (V, 3, 4) -> fused (1, 8, S/2, S/2), per_view (V, 8)."""

    def __init__(self) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.proj = torch.nn.Linear(12, 8)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.5)

    def forward(self, images: torch.Tensor, projections: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feats = torch.nn.functional.leaky_relu(self.conv(images), 0.1)  # (V, 8, S, S)
        feats = torch.nn.functional.max_pool2d(feats, 2)  # (V, 8, S/2, S/2)
        gate = torch.sigmoid(self.proj(projections.flatten(1)))  # (V, 8)
        per_view = feats.mean(dim=(2, 3)) * gate  # (V, 8)
        fused = (feats * gate[:, :, None, None]).mean(dim=0, keepdim=True)  # (1, 8, S/2, S/2): over views
        return fused, per_view


CONTRACT = IOContract(
    inputs=(
        TensorSpec("images", ("views", 3, SIZE, SIZE), "float32", "RGB in [0, 1]"),
        TensorSpec("projections", ("views", 3, 4), "float32", "world -> pixel, per view"),
    ),
    outputs=(
        TensorSpec("fused", (1, 8, SIZE // 2, SIZE // 2), "float32"),
        TensorSpec("per_view", ("views", 8), "float32"),
    ),
    axes={"views": VIEWS},
)


class MultiViewExportable:
    """The network as the `export` code sees one (ExportableNetwork)."""

    contract = CONTRACT

    def __init__(self) -> None:
        self._module = MultiViewNet().eval()

    def torch_module(self) -> torch.nn.Module:
        return self._module

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        shapes = CONTRACT.example_shapes()
        return tuple(torch.rand(shapes[s.name]) for s in CONTRACT.inputs)
