"""Darknet .cfg/.weights reader: the network as a PyTorch module whose outputs are the raw YOLO heads."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ..errors import ModelError
from .yolo_decode import YoloHeadSpec

# Darknet's CPU batch norm divides by sqrt(var) + 1e-6 (the epsilon sits outside the root).
_DARKNET_BN_EPS = 1e-6
_LEAKY_SLOPE = 0.1

# Options that change what a layer computes but this reader does not implement: refuse them
# rather than build a network that silently differs from Darknet's.
_UNSUPPORTED = {
    "convolutional": {"stride_x", "stride_y", "dilation", "binary", "xnor", "antialiasing", "deform", "share_index"},
    "maxpool": {"stride_x", "stride_y", "maxpool_depth", "antialiasing", "out_channels"},
    "shortcut": {"weights_type", "weights_normalization"},
    "yolo": {"new_coords"},
    "route": set(),
    "upsample": set(),
    "dropout": set(),
}
_ALIASES = {"conv": "convolutional", "max": "maxpool", "network": "net"}
_ACTIVATIONS = {"linear", "leaky", "relu", "logistic", "mish", "swish"}


@dataclass(frozen=True)
class CfgSection:
    """One ``[section]`` of a Darknet cfg.

    Attributes:
        kind: section name, aliases resolved (``convolutional``, ``route``, ``yolo``, ...).
        options: raw ``key=value`` strings.
        line: 1-based line of the header, for error messages.
    """

    kind: str
    options: dict[str, str] = field(default_factory=dict)
    line: int = 0


@dataclass(frozen=True)
class DarknetWeightsHeader:
    """The header of a .weights file: format version and how many images training had seen."""

    major: int
    minor: int
    revision: int
    seen: int


def parse_cfg(path: str | Path) -> list[CfgSection]:
    """Read a Darknet cfg into its sections; the first is ``[net]``.

    Raises:
        ModelError: the file is missing or not a Darknet cfg.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ModelError(f"cannot read Darknet cfg {path}: {exc.strerror or exc}") from exc
    sections: list[CfgSection] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = re.split(r"[#;]", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            if not line.endswith("]"):
                raise ModelError(f"{path}:{number}: malformed section header {line!r}")
            kind = line[1:-1].strip().lower()
            sections.append(CfgSection(_ALIASES.get(kind, kind), {}, number))
        elif "=" in line and sections:
            key, value = line.split("=", 1)
            sections[-1].options[key.strip()] = value.strip()
        else:
            raise ModelError(f"{path}:{number}: expected '[section]' or 'key=value', got {line!r}")
    if not sections or sections[0].kind != "net":
        raise ModelError(f"{path}: a Darknet cfg must start with a [net] section")
    return sections


class _Conv(nn.Module):
    """Darknet [convolutional]; batch norm is folded into the conv when the weights are loaded."""

    def __init__(self, in_ch: int, out_ch: int, size: int, stride: int, padding: int, groups: int, bn: bool, act: str):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, out_ch, size, stride, padding, groups=groups, bias=True)
        self.batch_normalize = bn
        self.act = _activation(act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.conv(x))


class _MaxPool(nn.Module):
    """Darknet [maxpool]: ``padding`` (default size-1) is split left/top = padding // 2, rest right/bottom."""

    def __init__(self, size: int, stride: int, padding: int):
        super().__init__()
        self.pads = (padding // 2, padding - padding // 2)
        symmetric = self.pads[0] == self.pads[1] and self.pads[0] <= size // 2
        self.pool = nn.MaxPool2d(size, stride, padding=self.pads[0] if symmetric else 0)
        self.explicit_pad = not symmetric

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.explicit_pad:
            lo, hi = self.pads
            x = F.pad(x, (lo, hi, lo, hi), value=float("-inf"))
        return self.pool(x)


class _Route(nn.Module):
    """Darknet [route]: concatenates earlier outputs (or one channel group of each) along channels."""

    def __init__(self, groups: int, group_id: int):
        super().__init__()
        self.groups, self.group_id = groups, group_id

    def forward(self, inputs: list[torch.Tensor]) -> torch.Tensor:
        if self.groups > 1:
            inputs = [torch.chunk(t, self.groups, dim=1)[self.group_id] for t in inputs]
        return inputs[0] if len(inputs) == 1 else torch.cat(inputs, dim=1)


class _Shortcut(nn.Module):
    """Darknet [shortcut]: adds earlier outputs to the previous layer's, then an activation."""

    def __init__(self, act: str):
        super().__init__()
        self.act = _activation(act)

    def forward(self, x: torch.Tensor, others: list[torch.Tensor]) -> torch.Tensor:
        for other in others:
            x = x + other
        return self.act(x)


class _Upsample(nn.Module):
    """Darknet [upsample]: nearest-neighbour by an integer stride, values times ``scale``."""

    def __init__(self, stride: int, scale: float):
        super().__init__()
        self.stride, self.scale = stride, scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.interpolate(x, scale_factor=float(self.stride), mode="nearest")
        return x * self.scale if self.scale != 1.0 else x


class Darknet(nn.Module):
    """A Darknet detection network built from its cfg; ``forward`` returns the raw YOLO head tensors.

    Attributes:
        layers: one module per cfg section after ``[net]`` (``layers.{i}`` is Darknet's layer i).
        heads: one YoloHeadSpec per ``[yolo]`` layer, in cfg order.
        input_size: network input (width, height) in pixels.
        channels: input channels (3 for RGB).
        letterbox: the cfg's ``letter_box`` flag (Darknet resizes plainly unless it is set).
        head_shapes: (1, A*(5+C), Hg, Wg) of each head for the cfg's input size.
    """

    def __init__(self, sections: list[CfgSection], source: str = "cfg"):
        super().__init__()
        net = sections[0].options
        self.input_size = (_int(net, "width", 416, source), _int(net, "height", 416, source))
        self.channels = _int(net, "channels", 3, source)
        self.letterbox = bool(_int(net, "letter_box", 0, source))
        self.layers = nn.ModuleList()
        self.heads: list[YoloHeadSpec] = []
        self.head_shapes: list[tuple[int, int, int, int]] = []
        self._kinds: list[str] = []
        self._sources: list[tuple[int, ...]] = []
        shapes: list[tuple[int, int, int]] = []  # (C, H, W) of every layer's output
        c, h, w = self.channels, self.input_size[1], self.input_size[0]
        for i, sec in enumerate(sections[1:]):
            where = f"{source}:{sec.line} [{sec.kind}] (layer {i})"
            if sec.kind not in _UNSUPPORTED:
                raise ModelError(f"{where}: unsupported Darknet layer type")
            bad = _UNSUPPORTED[sec.kind] & sec.options.keys()
            if sec.kind == "yolo" and sec.options.get("new_coords", "0") == "0":
                bad.discard("new_coords")
            if bad:
                raise ModelError(f"{where}: unsupported option(s) {sorted(bad)}")
            srcs: tuple[int, ...] = ()
            o = sec.options
            if sec.kind == "convolutional":
                filters, size = _int(o, "filters", 1, where), _int(o, "size", 1, where)
                stride, groups = _int(o, "stride", 1, where), _int(o, "groups", 1, where)
                pad = size // 2 if _int(o, "pad", 0, where) else _int(o, "padding", 0, where)
                act = o.get("activation", "logistic")
                if act not in _ACTIVATIONS or c % groups or filters % groups:
                    raise ModelError(f"{where}: activation {act!r} or groups={groups} not usable here")
                bn = bool(_int(o, "batch_normalize", 0, where))
                layer: nn.Module = _Conv(c, filters, size, stride, pad, groups, bn, act)
                c, h, w = filters, (h + 2 * pad - size) // stride + 1, (w + 2 * pad - size) // stride + 1
            elif sec.kind == "maxpool":
                stride = _int(o, "stride", 1, where)
                size = _int(o, "size", stride, where)
                padding = _int(o, "padding", size - 1, where)
                layer = _MaxPool(size, stride, padding)
                h, w = (h + padding - size) // stride + 1, (w + padding - size) // stride + 1
            elif sec.kind == "route":
                srcs = _layer_refs(o.get("layers", ""), i, where)
                groups, group_id = _int(o, "groups", 1, where), _int(o, "group_id", 0, where)
                ins = [shapes[j] for j in srcs]
                if any(s[1:] != ins[0][1:] for s in ins) or any(s[0] % groups for s in ins):
                    raise ModelError(f"{where}: routed layers {list(srcs)} have shapes {ins} that cannot be joined")
                layer = _Route(groups, group_id)
                c, h, w = sum(s[0] for s in ins) // groups, ins[0][1], ins[0][2]
            elif sec.kind == "shortcut":
                srcs = _layer_refs(o.get("from", ""), i, where)
                act = o.get("activation", "linear")
                if act not in _ACTIVATIONS or any(shapes[j] != (c, h, w) for j in srcs):
                    raise ModelError(f"{where}: activation {act!r} or mismatched shapes of layers {list(srcs)}")
                layer = _Shortcut(act)
            elif sec.kind == "upsample":
                stride = _int(o, "stride", 2, where)
                layer = _Upsample(stride, _float(o, "scale", 1.0, where))
                h, w = h * stride, w * stride
            elif sec.kind == "dropout":
                layer = nn.Identity()  # inference: dropout does nothing
            else:  # yolo: identity on the raw head; the shared decode does the rest
                layer = nn.Identity()
                spec = _yolo_spec(o, where)
                if spec.channels != c:
                    raise ModelError(f"{where}: the head has {c} channels, anchors/classes need {spec.channels}")
                self.heads.append(spec)
                self.head_shapes.append((1, c, h, w))
            if h < 1 or w < 1:
                raise ModelError(f"{where}: the input {self.input_size} is too small for this network")
            self.layers.append(layer)
            self._kinds.append(sec.kind)
            self._sources.append(srcs)
            shapes.append((c, h, w))
        if not self.heads:
            raise ModelError(f"{source}: no [yolo] layer, so this is not a YOLO detector")
        referenced = {j for s in self._sources for j in s}
        self._keep = [j in referenced for j in range(len(self.layers))]

    @property
    def conv_layers(self) -> list[_Conv]:
        """The convolutional layers in file order (the order of their weights in a .weights file)."""
        return [m for m in self.layers if isinstance(m, _Conv)]

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Run the network.

        Args:
            image: (B, 3, H, W) float32 RGB in [0, 1], H and W the cfg's input size.

        Returns:
            One raw (pre-sigmoid) tensor per [yolo] layer, (B, A*(5+C), Hg, Wg), in cfg order.
        """
        saved: list[torch.Tensor | None] = []
        heads: list[torch.Tensor] = []
        x = image
        for layer, kind, srcs, keep in zip(self.layers, self._kinds, self._sources, self._keep, strict=True):
            if kind == "route":
                x = layer([saved[j] for j in srcs])
            elif kind == "shortcut":
                x = layer(x, [saved[j] for j in srcs])
            else:
                x = layer(x)
                if kind == "yolo":
                    heads.append(x)
            saved.append(x if keep else None)  # only layers a route/shortcut reads stay alive
        return tuple(heads)


def load_darknet_weights(model: Darknet, path: str | Path) -> DarknetWeightsHeader:
    """Load a Darknet .weights file into ``model`` in place, folding batch norm into each conv.

    Layout: int32 major, minor, revision; ``seen`` as int64 when major*10+minor >= 2 (else int32);
    then per [convolutional] layer float32 biases, and with batch norm scales, rolling means and
    rolling variances, then the kernel (out, in/groups, k, k). Every byte must be used.

    Raises:
        ModelError: missing file, unsupported version, or a size that does not match the cfg.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read Darknet weights {path}: {exc.strerror or exc}") from exc
    if len(data) < 16:
        raise ModelError(f"{path}: too short for a Darknet weights header ({len(data)} bytes)")
    major, minor, revision = (int(v) for v in np.frombuffer(data, "<i4", 3))
    if major > 1000 or minor > 1000:
        raise ModelError(f"{path}: transposed Darknet weights (version {major}.{minor}) are not supported")
    wide_seen = major * 10 + minor >= 2
    seen = int(np.frombuffer(data, "<i8" if wide_seen else "<i4", 1, offset=12)[0])
    offset = 20 if wide_seen else 16
    if (len(data) - offset) % 4:
        raise ModelError(f"{path}: {len(data) - offset} bytes after the header is not a whole number of float32")
    values = np.frombuffer(data, "<f4", offset=offset)
    ptr = 0
    with torch.no_grad():
        for n, layer in enumerate(model.conv_layers):
            conv = layer.conv
            out_ch = conv.out_channels
            counts = [out_ch] * (4 if layer.batch_normalize else 1) + [conv.weight.numel()]
            if ptr + sum(counts) > len(values):
                raise ModelError(
                    f"{path}: ends inside convolutional layer {n} of {len(model.conv_layers)} "
                    f"(needs {ptr + sum(counts) - len(values)} more float32); weights and cfg do not match"
                )
            parts = []
            for count in counts:
                parts.append(values[ptr : ptr + count].astype(np.float64))
                ptr += count
            bias, kernel = parts[0], parts[-1].reshape(conv.weight.shape)
            if layer.batch_normalize:
                scales, mean, var = parts[1], parts[2], parts[3]
                factor = scales / (np.sqrt(np.maximum(var, 0.0)) + _DARKNET_BN_EPS)
                kernel = kernel * factor[:, None, None, None]
                bias = bias - mean * factor
            conv.weight.copy_(torch.from_numpy(kernel.astype(np.float32)))
            conv.bias.copy_(torch.from_numpy(bias.astype(np.float32)))
    if ptr != len(values):
        raise ModelError(f"{path}: {len(values) - ptr} float32 left after the last layer; weights and cfg do not match")
    return DarknetWeightsHeader(major, minor, revision, seen)


def load_darknet(cfg_path: str | Path, weights_path: str | Path | None = None) -> Darknet:
    """Build the network of ``cfg_path`` and, when given, load ``weights_path``; eval mode, no grads.

    Raises:
        ModelError: cfg or weights unreadable, unsupported or mismatched.
    """
    model = Darknet(parse_cfg(cfg_path), source=str(cfg_path))
    if weights_path is not None:
        load_darknet_weights(model, weights_path)
    model.eval()
    model.requires_grad_(False)
    return model


def _activation(name: str) -> nn.Module:
    if name == "leaky":
        return nn.LeakyReLU(_LEAKY_SLOPE)
    return {"relu": nn.ReLU(), "logistic": nn.Sigmoid(), "mish": nn.Mish(), "swish": nn.SiLU()}.get(name, nn.Identity())


def _yolo_spec(o: dict[str, str], where: str) -> YoloHeadSpec:
    anchors = np.asarray(_numbers(o.get("anchors", ""), float, where), dtype=np.float64)
    if len(anchors) == 0 or len(anchors) % 2:
        raise ModelError(f"{where}: anchors must be a non-empty list of (w, h) pairs")
    anchors = anchors.reshape(-1, 2)
    mask = _numbers(o["mask"], int, where) if o.get("mask") else list(range(len(anchors)))
    if any(m < 0 or m >= len(anchors) for m in mask):
        raise ModelError(f"{where}: mask {mask} indexes past the {len(anchors)} anchors")
    return YoloHeadSpec(anchors[mask], _int(o, "classes", 20, where), _float(o, "scale_x_y", 1.0, where))


def _layer_refs(text: str, index: int, where: str) -> tuple[int, ...]:
    refs = tuple(r + index if r < 0 else r for r in _numbers(text, int, where))
    if not refs or any(r < 0 or r >= index for r in refs):
        raise ModelError(f"{where}: layer references {text!r} must name earlier layers")
    return refs


def _numbers(text: str, kind: type, where: str) -> list:
    try:
        return [kind(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ModelError(f"{where}: {text!r} is not a list of numbers") from None


def _int(o: dict[str, str], key: str, default: int, where: str) -> int:
    try:
        return int(o[key]) if key in o else default
    except ValueError:
        raise ModelError(f"{where}: {key}={o[key]!r} is not an integer") from None


def _float(o: dict[str, str], key: str, default: float, where: str) -> float:
    try:
        return float(o[key]) if key in o else default
    except ValueError:
        raise ModelError(f"{where}: {key}={o[key]!r} is not a number") from None
