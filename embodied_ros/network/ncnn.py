"""ncnn .param/.bin reader: an ncnn network as a PyTorch module (as darknet.py does for Darknet).

The .param file is the layer graph as text: a magic line, "layer_count blob_count", then one line
per layer, ``Type name n_in n_out in_blobs... out_blobs... key=value...`` in execution order; a
key <= -23300 holds an array (id ``-key - 23300``, value ``count,v1,v2,...``). The .bin file holds
the weights of the layers that have any, in layer order (ncnn ``ModelBin``): a weight array starts
with a 4-byte tag (0x01306B47: fp16, 0: float32), bias arrays are plain float32.

ncnn blobs have no batch axis: an ncnn axis ``a`` is torch dimension ``a + 1`` here. Only the
layers and options a reader of NanoDet-Plus-style detectors needs are implemented; anything else
is refused with a ModelError rather than computed differently from ncnn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ..errors import ModelError

_MAGIC = 7767517
_TAG_FP16 = 0x01306B47
_UNSET = -233  # ncnn's "not given" / "to the end" marker in params
_ARRAY_KEY = -23300


@dataclass(frozen=True)
class NcnnLayer:
    """One layer line of a .param file.

    Attributes:
        kind: layer type, e.g. ``Convolution``.
        name: layer name (unique in the file).
        inputs / outputs: blob names read and written.
        params: param id -> int, float, or a list of them (arrays).
        line: 1-based line in the file, for error messages.
    """

    kind: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    params: dict[int, int | float | list[int | float]] = field(default_factory=dict)
    line: int = 0

    def get(self, key: int, default):
        return self.params.get(key, default)


def parse_param(path: str | Path) -> list[NcnnLayer]:
    """Read an ncnn .param text file into its layers, in file (execution) order.

    Raises:
        ModelError: missing file, wrong magic, malformed line, or a count that does not match.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"cannot read ncnn param {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    lines = [ln for ln in lines if ln.strip()]
    if not lines or lines[0].strip() != str(_MAGIC):
        raise ModelError(f"{path}: not an ncnn .param file (first line must be {_MAGIC})")
    try:
        layer_count, _ = (int(v) for v in lines[1].split())
    except (IndexError, ValueError):
        raise ModelError(f"{path}:2: expected 'layer_count blob_count'") from None
    layers = []
    for number, raw in enumerate(lines[2:], start=3):
        tokens = raw.split()
        try:
            kind, name, n_in, n_out = tokens[0], tokens[1], int(tokens[2]), int(tokens[3])
            blobs = tokens[4 : 4 + n_in + n_out]
            if len(blobs) != n_in + n_out:
                raise ValueError
            params = dict(_param(tok) for tok in tokens[4 + n_in + n_out :])
        except (IndexError, ValueError):
            raise ModelError(f"{path}:{number}: malformed ncnn layer line {raw.strip()!r}") from None
        layers.append(NcnnLayer(kind, name, tuple(blobs[:n_in]), tuple(blobs[n_in:]), params, number))
    if len(layers) != layer_count:
        raise ModelError(f"{path}: header says {layer_count} layers, the file has {len(layers)}")
    return layers


def _param(token: str) -> tuple[int, int | float | list[int | float]]:
    key_text, value = token.split("=", 1)
    key = int(key_text)
    if key <= _ARRAY_KEY:
        count, *values = value.split(",")
        if int(count) != len(values):
            raise ValueError(token)
        return _ARRAY_KEY - key, [_number(v) for v in values]
    return key, _number(value)


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


class _Conv(nn.Module):
    """ncnn Convolution / ConvolutionDepthWise with its fused activation."""

    def __init__(self, layer: NcnnLayer, in_ch: int, depthwise: bool):
        super().__init__()
        p = layer.get
        out_ch, kw = int(p(0, 0)), int(p(1, 0))
        kh, dw, sw = int(p(11, kw)), int(p(2, 1)), int(p(3, 1))
        dh, sh = int(p(12, dw)), int(p(13, sw))
        left = int(p(4, 0))
        right, top = int(p(15, left)), int(p(14, left))
        bottom = int(p(16, top))
        groups = int(p(7, 1)) if depthwise else 1
        if min(left, right, top, bottom) < 0 or float(p(18, 0.0)) != 0.0 or p(8, 0) or p(19, 0):
            raise ModelError(f"{_where(layer)}: SAME padding, a pad value, int8 or dynamic weights are not supported")
        if in_ch % groups or out_ch % groups or int(p(6, 0)) != out_ch * (in_ch // groups) * kh * kw:
            raise ModelError(f"{_where(layer)}: weight size {p(6, 0)} does not fit {in_ch} -> {out_ch} channels")
        symmetric = left == right and top == bottom
        self.pad = None if symmetric else (left, right, top, bottom)
        self.conv = nn.Conv2d(in_ch, out_ch, (kh, kw), (sh, sw), (top, left) if symmetric else 0, (dh, dw),
                              groups=groups, bias=bool(p(5, 0)))
        self.act = _activation(layer, int(p(9, 0)), p(10, []))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.pad is not None:
            x = F.pad(x, self.pad)
        return self.act(self.conv(x))


class _LeakyReLU(nn.Module):
    def __init__(self, slope: float):
        super().__init__()
        self.slope = slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, self.slope)


def _activation(layer: NcnnLayer, kind: int, params) -> nn.Module:
    """ncnn activation_type: 0 none, 1 relu, 2 leaky relu (slope), 3 clip (min, max), 4 sigmoid."""
    values = list(params) if isinstance(params, list) else [params]
    if kind == 0:
        return nn.Identity()
    if kind == 1:
        return nn.ReLU() if not values or values[0] == 0 else _LeakyReLU(float(values[0]))
    if kind == 2:
        return _LeakyReLU(float(values[0]) if values else 0.0)
    if kind == 3 and len(values) == 2:
        return nn.Hardtanh(float(values[0]), float(values[1]))
    if kind == 4:
        return nn.Sigmoid()
    raise ModelError(f"{_where(layer)}: activation type {kind} is not supported")


class _Pool(nn.Module):
    """ncnn Pooling, max only; pad_mode 0 (ceil, "full") or 1 (floor, "valid")."""

    def __init__(self, layer: NcnnLayer):
        super().__init__()
        p = layer.get
        kw = int(p(1, 0))
        kh, sw = int(p(11, kw)), int(p(2, 1))
        sh, left = int(p(12, sw)), int(p(3, 0))
        right, top = int(p(14, left)), int(p(13, left))
        bottom, mode = int(p(15, top)), int(p(5, 0))
        if p(0, 0) != 0 or p(4, 0) or p(7, 0) or mode not in (0, 1) or left != right or top != bottom:
            raise ModelError(f"{_where(layer)}: only max pooling with symmetric padding (pad_mode 0 or 1) is supported")
        self.pool = nn.MaxPool2d((kh, kw), (sh, sw), (top, left), ceil_mode=mode == 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


class NcnnNet(nn.Module):
    """An ncnn network as a torch module; ``forward(input)`` returns the named output blobs.

    Attributes:
        input_name: the Input layer's blob (e.g. ``data``).
        output_names: blobs returned by forward, in the order given.
        layers: the layers that are torch modules (convolutions, pooling), in file order.
    """

    def __init__(self, layers: list[NcnnLayer], input_shape: tuple[int, int, int], output_names: tuple[str, ...],
                 source: str = "param"):
        """Build the graph.

        Args:
            layers: ``parse_param``'s layers.
            input_shape: (C, H, W) of the single input blob (ncnn's Input layer often leaves it open).
            output_names: the blobs forward returns.
            source: file name for error messages.

        Raises:
            ModelError: an unsupported layer or option, an unknown blob, or shapes that do not fit.
        """
        super().__init__()
        inputs = [la for la in layers if la.kind == "Input"]
        if len(inputs) != 1:
            raise ModelError(f"{source}: expected one Input layer, found {len(inputs)}")
        self.input_name = inputs[0].outputs[0]
        self.output_names = tuple(output_names)
        self.layers = nn.ModuleDict()
        self._steps: list[tuple[NcnnLayer, str]] = []
        shapes: dict[str, tuple[int, ...]] = {self.input_name: (1, *input_shape)}
        with torch.no_grad():
            for layer in layers:
                if layer.kind == "Input":
                    continue
                missing = [b for b in layer.inputs if b not in shapes]
                if missing:
                    raise ModelError(f"{_where(layer)}: reads blobs {missing} that no earlier layer writes")
                key = ""
                if layer.kind in ("Convolution", "ConvolutionDepthWise"):
                    key = f"l{len(self.layers)}"
                    self.layers[key] = _Conv(layer, shapes[layer.inputs[0]][1], layer.kind == "ConvolutionDepthWise")
                elif layer.kind == "Pooling":
                    key = f"l{len(self.layers)}"
                    self.layers[key] = _Pool(layer)
                elif layer.kind not in _OPS:
                    raise ModelError(f"{_where(layer)}: ncnn layer type {layer.kind} is not supported")
                self._steps.append((layer, key))
                outs = self._run(layer, key, [torch.zeros(shapes[b]) for b in layer.inputs])
                shapes.update({b: tuple(t.shape) for b, t in zip(layer.outputs, outs, strict=True)})
        unknown = [n for n in self.output_names if n not in shapes]
        if unknown:
            raise ModelError(f"{source}: no blob named {unknown}")
        self.blob_shapes = shapes

    @property
    def weight_layers(self) -> list[nn.Conv2d]:
        """The convolutions in .bin order."""
        return [m.conv for m in self.layers.values() if isinstance(m, _Conv)]

    def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """Run the graph; ``image`` (1, C, H, W) -> the output blobs (each with a leading batch axis of 1)."""
        blobs = {self.input_name: image}
        for layer, key in self._steps:
            outs = self._run(layer, key, [blobs[b] for b in layer.inputs])
            blobs.update(zip(layer.outputs, outs, strict=True))
        return tuple(blobs[n] for n in self.output_names)

    def _run(self, layer: NcnnLayer, key: str, xs: list[torch.Tensor]) -> list[torch.Tensor]:
        if key:
            return [self.layers[key](xs[0])]
        return _OPS[layer.kind](layer, xs)


def _split(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    return [xs[0]] * len(layer.outputs)


def _concat(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    return [torch.cat(xs, dim=_dim(layer, int(layer.get(0, 0)), xs[0].dim()))]


def _crop(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Crop with starts (9), ends (10) and axes (11) arrays; ends of -233 run to the end."""
    starts, ends, axes = (layer.get(k, None) for k in (9, 10, 11))
    if not isinstance(starts, list) or not isinstance(ends, list) or len(starts) != len(ends):
        raise ModelError(f"{_where(layer)}: only Crop with starts/ends/axes arrays is supported")
    x = xs[0]
    axes = axes if isinstance(axes, list) else list(range(len(starts)))
    for axis, start, end in zip(axes, starts, ends, strict=True):
        dim = _dim(layer, int(axis), x.dim())
        size = x.shape[dim]
        stop = size if end == _UNSET else (end + size if end < 0 else min(int(end), size))
        x = x.narrow(dim, int(start), stop - int(start))
    return [x]


def _slice(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Slice into parts of the sizes in array 0 (-233: the rest) along axis 1 (default 0)."""
    sizes = layer.get(0, None)
    if not isinstance(sizes, list) or len(sizes) != len(layer.outputs) or list(sizes).count(_UNSET) > 1:
        raise ModelError(f"{_where(layer)}: Slice needs one size per output (at most one -233)")
    dim = _dim(layer, int(layer.get(1, 0)), xs[0].dim())
    rest = xs[0].shape[dim] - sum(s for s in sizes if s != _UNSET)
    return list(torch.split(xs[0], [rest if s == _UNSET else int(s) for s in sizes], dim=dim))


def _shuffle(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """ShuffleChannel: channels seen as (group, C/group) are transposed (reverse: (C/group, group))."""
    x = xs[0]
    b, c, h, w = x.shape
    group = int(layer.get(0, 1))
    a, g = (c // group, group) if layer.get(1, 0) else (group, c // group)
    return [x.reshape(b, a, g, h, w).transpose(1, 2).reshape(b, c, h, w)]  # (B, a, g, H, W) -> (B, g, a, H, W)


def _interp(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Interp: 1 nearest or 2 bilinear, by scales (1 height, 2 width) or a size (3 height, 4 width)."""
    mode = {1: "nearest", 2: "bilinear"}.get(int(layer.get(0, 0)))
    if mode is None or layer.get(5, 0):
        raise ModelError(f"{_where(layer)}: only nearest/bilinear Interp with a fixed size or scale is supported")
    align = bool(layer.get(6, 0)) if mode == "bilinear" else None
    out_h, out_w = int(layer.get(3, 0)), int(layer.get(4, 0))
    if out_h and out_w:
        return [F.interpolate(xs[0], size=(out_h, out_w), mode=mode, align_corners=align)]
    scale = (float(layer.get(1, 1.0)), float(layer.get(2, 1.0)))
    return [F.interpolate(xs[0], scale_factor=scale, mode=mode, align_corners=align)]


_BINARY = {0: torch.add, 1: torch.sub, 2: torch.mul, 3: torch.div, 4: torch.maximum, 5: torch.minimum}


def _binary(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """BinaryOp add/sub/mul/div/max/min of two blobs, or of one blob and the scalar param 2."""
    op = _BINARY.get(int(layer.get(0, 0)))
    if op is None:
        raise ModelError(f"{_where(layer)}: BinaryOp type {layer.get(0, 0)} is not supported")
    if layer.get(1, 0):
        return [op(xs[0], torch.tensor(float(layer.get(2, 0.0))))]
    if len(xs) != 2 or xs[0].shape != xs[1].shape:
        raise ModelError(f"{_where(layer)}: BinaryOp of blobs of shapes {[tuple(x.shape) for x in xs]}")
    return [op(xs[0], xs[1])]


def _reshape(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Reshape to ncnn (w), (h, w) or (c, h, w) from params 0 w, 1 h, 2 c; -1 is inferred."""
    w, h, c = (int(layer.get(k, _UNSET)) for k in (0, 1, 2))
    if layer.get(3, 0) or layer.get(11, _UNSET) != _UNSET:
        raise ModelError(f"{_where(layer)}: Reshape with permute or 4-D shapes is not supported")
    dims = [w] if h == _UNSET else [h, w] if c == _UNSET else [c, h, w]
    return [xs[0].reshape(xs[0].shape[0], *dims)]


def _permute(layer: NcnnLayer, xs: list[torch.Tensor]) -> list[torch.Tensor]:
    """Permute of a 2-D blob: order 0 keeps (h, w), order 1 swaps them."""
    order = int(layer.get(0, 0))
    if xs[0].dim() != 3 or order not in (0, 1):
        raise ModelError(f"{_where(layer)}: only Permute of 2-D blobs is supported")
    return [xs[0].transpose(1, 2) if order else xs[0]]


_OPS = {
    "Split": _split,
    "Concat": _concat,
    "Crop": _crop,
    "Slice": _slice,
    "ShuffleChannel": _shuffle,
    "Interp": _interp,
    "BinaryOp": _binary,
    "Sigmoid": lambda layer, xs: [torch.sigmoid(xs[0])],
    "Reshape": _reshape,
    "Permute": _permute,
}


def load_ncnn_weights(net: NcnnNet, path: str | Path) -> None:
    """Load an ncnn .bin into ``net`` in place: per convolution the tagged kernel, then float32 bias.

    Raises:
        ModelError: missing file, an unsupported storage tag, or a size that does not match the graph.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ModelError(f"cannot read ncnn weights {path}: {exc.strerror or exc}") from exc
    offset = 0
    with torch.no_grad():
        for n, conv in enumerate(net.weight_layers):
            try:
                kernel, offset = _tagged_array(data, offset, conv.weight.numel())
                conv.weight.copy_(torch.from_numpy(kernel.reshape(conv.weight.shape)))
                if conv.bias is not None:
                    bias, offset = _float32_array(data, offset, conv.bias.numel())
                    conv.bias.copy_(torch.from_numpy(bias))
            except ValueError as exc:
                raise ModelError(f"{path}: weight layer {n} of {len(net.weight_layers)}: {exc}") from None
    if offset != len(data):
        raise ModelError(f"{path}: {len(data) - offset} bytes left after the last layer; .bin and .param do not match")


def _tagged_array(data: bytes, offset: int, count: int) -> tuple[np.ndarray, int]:
    """ncnn ModelBin type 0: a 4-byte tag, then fp16 (padded to 4 bytes) or float32 values."""
    if offset + 4 > len(data):
        raise ValueError("the file ends before its tag")
    tag = int(np.frombuffer(data, "<u4", 1, offset)[0])
    offset += 4
    if tag == _TAG_FP16:
        values = _read(data, offset, "<f2", count)
        return values.astype(np.float32), offset + (count * 2 + 3) // 4 * 4
    if tag == 0:
        return _float32_array(data, offset, count)
    raise ValueError(f"storage tag {tag:#010x} (int8 or quantized weights) is not supported")


def _float32_array(data: bytes, offset: int, count: int) -> tuple[np.ndarray, int]:
    return _read(data, offset, "<f4", count).copy(), offset + 4 * count


def _read(data: bytes, offset: int, dtype: str, count: int) -> np.ndarray:
    if offset + np.dtype(dtype).itemsize * count > len(data):
        raise ValueError(f"the file ends inside an array of {count} values")
    return np.frombuffer(data, dtype, count, offset)


def load_ncnn(param_path: str | Path, bin_path: str | Path | None, input_shape: tuple[int, int, int],
              output_names: tuple[str, ...] = ("output",)) -> NcnnNet:
    """The network of ``param_path`` with ``bin_path``'s weights (when given); eval mode, no grads.

    Raises:
        ModelError: the files are unreadable, unsupported or do not match each other.
    """
    net = NcnnNet(parse_param(param_path), input_shape, output_names, source=str(param_path))
    if bin_path is not None:
        load_ncnn_weights(net, bin_path)
    return net.eval().requires_grad_(False)


def _dim(layer: NcnnLayer, axis: int, ndim: int) -> int:
    """ncnn axis (no batch; negative counts from the end) -> torch dimension."""
    dim = axis + ndim if axis < 0 else axis + 1
    if not 1 <= dim < ndim:
        raise ModelError(f"{_where(layer)}: axis {axis} outside a {ndim - 1}-D blob")
    return dim


def _where(layer: NcnnLayer) -> str:
    return f"line {layer.line} ({layer.kind} {layer.name})"
