"""The Embodied Perceptron, TensorRT-friendly: multi-view 2D features lifted into a voxel volume,
fused with voxelised depth, a 3D CNN + FPN, and heads for 9-DoF boxes and occupancy.

Reads like nanoGPT: modules in dependency order, shape comments on every reshape. What is not
in the graph, on purpose (TensorRT's ONNX parser rejects or slows these): point voxelisation
(``depth_volume`` is an input), projection matrices (``projections`` is an input), box decoding
and NMS (perceptron_decode.py), and the grounding head's proposal gather (grounding_head.py).

Graph contract (fixed shapes, float32)::

    images       (V, 3, S, S)   RGB in [0, 1], V views of one keyframe window, S = image_size
    projections  (V, 3, 4)      grid-frame point (metres) -> homogeneous pixel of the S x S input
    depth_volume (1, 1, X, Y, Z) log(1 + depth points per voxel) in the grid
    ->
    occupancy    (1, K + 1, X, Y, Z)        logits over the K occupancy classes; index K = empty
    box_cls      (1, C, X/b, Y/b, Z/b)      logits per box voxel (b = box_stride: 1 or 2)
    box_ctr      (1, 1, X/b, Y/b, Z/b)      centerness logit
    box_dist     (1, 6, X/b, Y/b, Z/b)      signed distances (m, >= -face_margin) from the voxel centre to the six faces
    box_rot      (1, 6, X/b, Y/b, Z/b)      6D rotation (two columns of R, unnormalised)
    features     (1, F, X/b, Y/b, Z/b)      FPN features for the grounding head
    pixel_cls    (V, C + 1, S/2, S/2)       per-pixel class logits, last = other (only with pixel_head)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import ConfigError
from ..geometry.grid import GridSpec
from ..runtime.contract import IOContract, TensorSpec


@dataclass(frozen=True)
class PerceptronConfig:
    """Shapes and widths of the network (one config = one exported graph)."""

    # Detection classes: the model's own vocabulary, saved with its weights (the config inside the
    # weights file) and read back from there; a training run takes its data's (training/config.py).
    classes: tuple[str, ...] = ()
    # Occupancy classes; the occupancy head adds one "empty" class after these.
    occupancy_classes: tuple[str, ...] = ()
    # Square network input in pixels (frames are resized to it).
    image_size: int = 240
    # Views per keyframe window (fixed in the exported graph).
    n_views: int = 1
    # Occupancy grid: voxels per axis and voxel edge (metres); EmbodiedScan's 40 x 40 x 16 at 0.16 m.
    grid_shape: tuple[int, int, int] = (40, 40, 16)
    voxel_size: float = 0.16
    # Grid-frame coordinate of the grid's voxel (0, 0, 0) corner. The grid frame's origin IS that
    # corner (LocalOccupancy.T_world_grid is its pose), so (0, 0, 0) unless a test wants otherwise.
    grid_origin: tuple[float, float, float] = (0.0, 0.0, 0.0)
    # Channels of the 2D image features lifted into the volume.
    image_channels: int = 24
    # Channels of the 3D levels (full, 1/2, 1/4 resolution).
    volume_channels: tuple[int, int, int] = (16, 32, 64)
    # Resolution of the box head: 2 = the 1/2 level (edge 2 * voxel_size), 1 = the full-resolution
    # level, where cups and books are more than one voxel.
    box_stride: int = 2
    # Stride of the 2D feature map lifted into the volume (8 or 4: finer keeps small objects apart).
    feature_stride: int = 8
    # Box face distances may be negative down to this (m): a small object's positives include the
    # voxels around it whose centres lie outside it (perceptron_targets.py).
    face_margin: float = 0.0
    # A 2D head on the image encoder: per-pixel class logits at 1/2 of the input (object classes +
    # "other"), lifted through depth outside the graph (pixel_detections.py). Small objects span a
    # few cells of the 1/4 map and a fraction of a 0.16 m voxel; at 1/2 they keep their pixels.
    pixel_head: bool = False

    def __post_init__(self) -> None:
        if any(n % 4 for n in self.grid_shape):
            raise ConfigError(f"grid_shape {self.grid_shape}: every axis must be divisible by 4 (two stride-2 levels)")
        if self.image_size % 8:
            raise ConfigError(f"image_size {self.image_size}: must be divisible by 8 (three stride-2 stages)")
        if self.box_stride not in (1, 2):
            raise ConfigError(f"box_stride {self.box_stride}: must be 1 or 2")
        if self.feature_stride not in (4, 8):
            raise ConfigError(f"feature_stride {self.feature_stride}: must be 4 or 8")
        if self.face_margin < 0:
            raise ConfigError(f"face_margin {self.face_margin}: must be >= 0")

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def empty_label(self) -> int:
        """Occupancy label of an empty voxel (the last output channel)."""
        return len(self.occupancy_classes)

    def grid_spec(self) -> GridSpec:
        """Placement of the network's grid in the world (geometry/grid.py)."""
        return GridSpec(shape=self.grid_shape, voxel_size=self.voxel_size)

    def voxel_centres(self) -> np.ndarray:
        """(X * Y * Z, 3) float32 voxel centres in the grid frame, x slowest, z fastest."""
        axes = [
            self.grid_origin[i] + self.voxel_size * (np.arange(n) + 0.5) for i, n in enumerate(self.grid_shape)
        ]
        xx, yy, zz = np.meshgrid(*axes, indexing="ij")  # each (X, Y, Z)
        return np.stack([xx, yy, zz], axis=-1).reshape(-1, 3).astype(np.float32)

    @property
    def box_shape(self) -> tuple[int, int, int]:
        """Voxels per axis of the box head (and of the ``features`` output)."""
        x, y, z = (n // self.box_stride for n in self.grid_shape)
        return x, y, z

    @property
    def box_voxel_size(self) -> float:
        """Edge (m) of the box head's voxels."""
        return self.box_stride * self.voxel_size

    @property
    def box_channels(self) -> int:
        """Channels of the ``features`` output (the FPN level the box head reads)."""
        return self.volume_channels[0] if self.box_stride == 1 else self.volume_channels[1]

    def box_voxel_centres(self) -> np.ndarray:
        """(N, 3) float32 centres of the box head's voxels in the grid frame, x slowest, z fastest."""
        edge = self.box_voxel_size
        axes = [self.grid_origin[i] + edge * (np.arange(n) + 0.5) for i, n in enumerate(self.box_shape)]
        xx, yy, zz = np.meshgrid(*axes, indexing="ij")  # each box_shape
        return np.stack([xx, yy, zz], axis=-1).reshape(-1, 3).astype(np.float32)


def _conv2d(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(inplace=True))


def _conv3d(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv3d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm3d(c_out), nn.ReLU(inplace=True))


class ImageEncoder(nn.Module):
    """A small 2D CNN: (V, 3, S, S) -> (V, C, S/s, S/s), s = 8 or 4, joining the 1/4 and 1/8 stages.

    ``stages`` returns the 1/2, 1/4 and 1/8 maps themselves, for the pixel head.
    """

    def __init__(self, channels: int, stride: int = 8) -> None:
        super().__init__()
        self.stride = stride
        self.stem = nn.Sequential(_conv2d(3, 16, 2), _conv2d(16, 16))  # 1/2
        self.down1 = nn.Sequential(_conv2d(16, 32, 2), _conv2d(32, 32))  # 1/4
        self.down2 = nn.Sequential(_conv2d(32, 48, 2), _conv2d(48, 48))  # 1/8
        self.out = nn.Conv2d(48 + 32, channels, 1)

    def stages(self, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x2 = self.stem(images)  # (V, 16, S/2, S/2)
        x4 = self.down1(x2)  # (V, 32, S/4, S/4)
        return x2, x4, self.down2(x4)  # ..., (V, 48, S/8, S/8)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.join(*self.stages(images)[1:])

    def join(self, x4: torch.Tensor, x8: torch.Tensor) -> torch.Tensor:
        """The lifted feature map from the 1/4 and 1/8 stages."""
        if self.stride == 4:  # context from 1/8 brought up to the 1/4 map
            return self.out(torch.cat([F.interpolate(x8, scale_factor=2.0, mode="nearest"), x4], dim=1))
        skip = F.avg_pool2d(x4, 2)  # (V, 32, S/8, S/8)
        return self.out(torch.cat([x8, skip], dim=1))


class PixelHead(nn.Module):
    """Per-pixel class logits at 1/2 of the input from the encoder's 1/2, 1/4 and 1/8 maps (a tiny U-Net top).

    (V, 16, S/2, S/2), (V, 32, S/4, S/4), (V, 48, S/8, S/8) -> (V, C + 1, S/2, S/2); channel C = "other".
    """

    def __init__(self, n_classes: int, width: int = 32) -> None:
        super().__init__()
        self.up8 = _conv2d(48 + 32, width)  # 1/8 brought to 1/4, joined with 1/4
        self.up4 = _conv2d(width + 16, width)  # 1/4 brought to 1/2, joined with 1/2
        self.refine = _conv2d(width, width)
        self.logits = nn.Conv2d(width, n_classes + 1, 1)

    def forward(self, x2: torch.Tensor, x4: torch.Tensor, x8: torch.Tensor) -> torch.Tensor:
        y4 = self.up8(torch.cat([F.interpolate(x8, scale_factor=2.0, mode="nearest"), x4], dim=1))
        y2 = self.up4(torch.cat([F.interpolate(y4, scale_factor=2.0, mode="nearest"), x2], dim=1))
        return self.logits(self.refine(y2))  # (V, C + 1, S/2, S/2)


class VoxelLifting(nn.Module):
    """Project voxel centres into every view and sample its features (4-D grid_sample), average over views."""

    def __init__(self, config: PerceptronConfig) -> None:
        super().__init__()
        centres = torch.from_numpy(config.voxel_centres())  # (N, 3)
        self.register_buffer("centres_h", torch.cat([centres, torch.ones(len(centres), 1)], dim=1).T.contiguous())
        self.grid_shape = config.grid_shape
        self.image_size = float(config.image_size)

    def forward(self, features: torch.Tensor, projections: torch.Tensor) -> torch.Tensor:
        _v, c = features.shape[0], features.shape[1]
        uvw = torch.matmul(projections, self.centres_h)  # (V, 3, N) homogeneous pixels
        w = uvw[:, 2:3]  # (V, 1, N)
        in_front = (w > 1e-3).float()
        uv = uvw[:, 0:2] / torch.clamp(w, min=1e-3)  # (V, 2, N) pixels of the S x S input
        grid = uv / self.image_size * 2.0 - 1.0  # align_corners=False: pixel edges at -1 and 1
        inside = ((grid.abs() <= 1.0).float().prod(dim=1, keepdim=True)) * in_front  # (V, 1, N)
        grid = grid.permute(0, 2, 1).unsqueeze(1)  # (V, 1, N, 2)
        sampled = F.grid_sample(features, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        sampled = sampled.squeeze(2) * inside  # (V, C, N)
        count = inside.sum(dim=0)  # (1, N) views that see each voxel
        volume = sampled.sum(dim=0) / torch.clamp(count, min=1.0)  # (C, N)
        seen = (count > 0).float()  # (1, N)
        x, y, z = self.grid_shape
        return torch.cat([volume, seen], dim=0).reshape(1, c + 1, x, y, z)  # (1, C + 1, X, Y, Z)


class VolumeFPN(nn.Module):
    """3D CNN with three levels and a top-down FPN back to the full and the 1/2 resolution."""

    def __init__(self, c_in: int, channels: tuple[int, int, int]) -> None:
        super().__init__()
        c0, c1, c2 = channels
        self.level0 = _conv3d(c_in, c0)  # one conv at full resolution: it dominates the cost
        self.level1 = nn.Sequential(_conv3d(c0, c1, 2), _conv3d(c1, c1))
        self.level2 = nn.Sequential(_conv3d(c1, c2, 2), _conv3d(c2, c2))
        self.lateral1 = nn.Conv3d(c1, c1, 1)
        self.top2 = nn.Conv3d(c2, c1, 1)
        self.smooth1 = _conv3d(c1, c1)
        self.lateral0 = nn.Conv3d(c0, c0, 1)
        self.top1 = nn.Conv3d(c1, c0, 1)
        self.smooth0 = _conv3d(c0, c0)

    def forward(self, volume: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        f0 = self.level0(volume)  # (1, c0, X, Y, Z)
        f1 = self.level1(f0)  # (1, c1, X/2, Y/2, Z/2)
        f2 = self.level2(f1)  # (1, c2, X/4, Y/4, Z/4)
        p1 = self.smooth1(self.lateral1(f1) + F.interpolate(self.top2(f2), scale_factor=2.0, mode="nearest"))
        p0 = self.smooth0(self.lateral0(f0) + F.interpolate(self.top1(p1), scale_factor=2.0, mode="nearest"))
        return p0, p1


class EmbodiedPerceptron(nn.Module):
    """Images + projections + depth volume -> occupancy logits and dense 9-DoF box predictions."""

    def __init__(self, config: PerceptronConfig) -> None:
        super().__init__()
        if not config.classes or not config.occupancy_classes:
            raise ConfigError("the network's class vocabularies (model.classes, model.occupancy_classes) are not set")
        self.config = config
        n, c = config.num_classes, config.box_channels
        self.image_encoder = ImageEncoder(config.image_channels, config.feature_stride)
        self.lifting = VoxelLifting(config)
        self.fpn = VolumeFPN(config.image_channels + 1 + 1, config.volume_channels)  # + seen + depth
        self.occupancy_head = nn.Conv3d(config.volume_channels[0], config.empty_label + 1, 1)
        self.box_tower = _conv3d(c, c)
        self.box_cls = nn.Conv3d(c, n, 1)
        self.box_ctr = nn.Conv3d(c, 1, 1)
        self.box_dist = nn.Conv3d(c, 6, 1)
        self.box_rot = nn.Conv3d(c, 6, 1)
        nn.init.constant_(self.box_cls.bias, -4.6)  # focal-loss prior: p(object) ~ 0.01 at start
        self.pixel_head = PixelHead(n) if config.pixel_head else None

    def forward(
        self, images: torch.Tensor, projections: torch.Tensor, depth_volume: torch.Tensor
    ) -> tuple[torch.Tensor, ...]:
        x2, x4, x8 = self.image_encoder.stages(images)
        features = self.image_encoder.join(x4, x8)  # (V, Ci, S/s, S/s)
        # The projections map to pixels of the S x S input; the lifting samples the 1/s map,
        # whose normalised coordinates are the same (grid_sample works in [-1, 1]).
        volume = self.lifting(features, projections)  # (1, Ci + 1, X, Y, Z)
        p0, p1 = self.fpn(torch.cat([volume, depth_volume], dim=1))
        occupancy = self.occupancy_head(p0)  # (1, C + 1, X, Y, Z)
        t = self.box_tower(p0 if self.config.box_stride == 1 else p1)  # (1, c, X/b, Y/b, Z/b)
        dist = F.softplus(self.box_dist(t)) - self.config.face_margin  # metres, >= -face_margin
        outputs = (occupancy, self.box_cls(t), self.box_ctr(t), dist, self.box_rot(t), t)
        if self.pixel_head is not None:
            outputs += (self.pixel_head(x2, x4, x8),)
        return outputs

    def pixel_logits(self, images: torch.Tensor) -> torch.Tensor:
        """(V, 3, S, S) -> (V, C + 1, S/2, S/2) pixel head logits alone (training it costs no 3D pass)."""
        if self.pixel_head is None:
            raise ConfigError("this network has no pixel head (model.pixel_head: false)")
        return self.pixel_head(*self.image_encoder.stages(images))


INPUT_NAMES = ("images", "projections", "depth_volume")
OUTPUT_NAMES = ("occupancy", "box_cls", "box_ctr", "box_dist", "box_rot", "features")
PIXEL_OUTPUT = "pixel_cls"


def output_names(config: PerceptronConfig) -> tuple[str, ...]:
    """The graph's output names: OUTPUT_NAMES, then ``pixel_cls`` when the config has a pixel head."""
    return OUTPUT_NAMES + ((PIXEL_OUTPUT,) if config.pixel_head else ())


def example_inputs(config: PerceptronConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Zero inputs of the graph's fixed shapes (for export and tests)."""
    s, v = config.image_size, config.n_views
    return (torch.zeros(v, 3, s, s), torch.zeros(v, 3, 4), torch.zeros(1, 1, *config.grid_shape))


def count_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def perceptron_contract(config: PerceptronConfig) -> IOContract:
    """The graph's interface for every backend (names, fixed shapes, float32), from its config."""
    v, s = config.n_views, config.image_size
    x, y, z = config.grid_shape
    n, k, f = config.num_classes, config.empty_label + 1, config.box_channels
    half = config.box_shape
    inputs = (
        TensorSpec("images", (v, 3, s, s), "float32", "RGB in [0, 1], each view resized to S x S"),
        TensorSpec("projections", (v, 3, 4), "float32", "grid-frame point (m) -> homogeneous pixel of the S x S image"),
        TensorSpec("depth_volume", (1, 1, x, y, z), "float32", "log(1 + depth points per voxel) in the grid"),
    )
    outputs = (
        TensorSpec("occupancy", (1, k, x, y, z), "float32", "occupancy logits; last channel = empty"),
        TensorSpec("box_cls", (1, n, *half), "float32", "class logits per box voxel"),
        TensorSpec("box_ctr", (1, 1, *half), "float32", "centerness logit"),
        TensorSpec("box_dist", (1, 6, *half), "float32", "signed distances (m) to the six faces along the box axes"),
        TensorSpec("box_rot", (1, 6, *half), "float32", "6D rotation (two columns of R), grid frame"),
        TensorSpec("features", (1, f, *half), "float32", "FPN features for the grounding head"),
    )
    if config.pixel_head:
        outputs += (TensorSpec(PIXEL_OUTPUT, (v, n + 1, s // 2, s // 2), "float32",
                               "per-pixel class logits at 1/2 of the input; last channel = other"),)
    return IOContract(inputs, outputs)


class PerceptronNetwork:
    """The trained network as runtime.contract.ExportableNetwork (what `embodied-ros export` needs)."""

    def __init__(self, model: EmbodiedPerceptron) -> None:
        self.model = model.eval()
        self.contract = perceptron_contract(model.config)

    def torch_module(self) -> nn.Module:
        return self.model

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        return example_inputs(self.model.config)
