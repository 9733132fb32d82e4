"""Darknet cfg parsing, layer semantics against a numpy reference, and exact .weights consumption."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from embodied_ros.errors import ModelError
from embodied_ros.network.darknet import Darknet, load_darknet, load_darknet_weights, parse_cfg

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
YOLO = DATA / "yolo_fastest"
needs_yolo = pytest.mark.skipif(not YOLO.is_dir(), reason=f"Yolo-Fastest files not found in {YOLO}")
MODELS = ["yolo-fastest-1.1-xl", "yolo-fastest-1.1"]

# A tiny network touching every layer kind the Yolo-Fastest cfgs use (and Darknet's odd maxpool padding).
TINY_CFG = """
[net]
width=4
height=4
channels=2   # comments are ignored

[maxpool]
size=3
stride=1

[maxpool]
size=2
stride=2

[upsample]
stride=2

[shortcut]
from=0
activation=linear

[route]
layers=-1,0
groups=2
group_id=1

[dropout]
probability=.2

[convolutional]
batch_normalize=1
filters=6
size=1
stride=1
pad=1
activation=leaky

[yolo]
mask=1
anchors=1,1, 2,3
classes=1
"""


def _write_weights(path: Path, floats: np.ndarray, major: int = 0, minor: int = 2) -> None:
    seen = np.array([1234], "<i8" if major * 10 + minor >= 2 else "<i4")
    path.write_bytes(np.array([major, minor, 5], "<i4").tobytes() + seen.tobytes() + floats.astype("<f4").tobytes())


def _maxpool_ref(x: np.ndarray, size: int, stride: int, pad_lo: int, pad_hi: int) -> np.ndarray:
    """Darknet's forward_maxpool_layer written out with loops; x (C, H, W)."""
    c, h, w = x.shape
    padded = np.full((c, h + pad_lo + pad_hi, w + pad_lo + pad_hi), -np.inf)
    padded[:, pad_lo : pad_lo + h, pad_lo : pad_lo + w] = x
    out_h, out_w = (h + pad_lo + pad_hi - size) // stride + 1, (w + pad_lo + pad_hi - size) // stride + 1
    out = np.empty((c, out_h, out_w))
    for i in range(out_h):
        for j in range(out_w):
            out[:, i, j] = padded[:, i * stride : i * stride + size, j * stride : j * stride + size].max(axis=(1, 2))
    return out


def _tiny_reference(x: np.ndarray, params: dict[str, np.ndarray]) -> np.ndarray:
    """The tiny cfg by hand: x (2, 4, 4) -> head (6, 4, 4)."""
    l0 = _maxpool_ref(x, 3, 1, 1, 1)  # Darknet padding = size - 1 = 2, split 1 / 1
    l1 = _maxpool_ref(l0, 2, 2, 0, 1)  # padding 1: all on the right/bottom
    l2 = l1.repeat(2, axis=1).repeat(2, axis=2)
    l3 = l2 + l0
    l4 = np.concatenate([l3[1:2], l0[1:2]])  # second half of channels of each routed layer
    conv = np.einsum("oc,chw->ohw", params["kernel"][:, :, 0, 0], l4)
    norm = (conv - params["mean"][:, None, None]) / (np.sqrt(params["var"]) + 1e-6)[:, None, None]
    y = params["scales"][:, None, None] * norm + params["bias"][:, None, None]
    return np.where(y > 0, y, 0.1 * y)


@pytest.mark.parametrize("minor", [1, 2])
def test_tiny_network_matches_numpy_reference(tmp_path: Path, minor: int) -> None:
    cfg = tmp_path / "tiny.cfg"
    cfg.write_text(TINY_CFG)
    rng = np.random.default_rng(0)
    params = {
        "bias": rng.normal(size=6),
        "scales": rng.normal(size=6),
        "mean": rng.normal(size=6),
        "var": rng.uniform(0.5, 2.0, size=6),
        "kernel": rng.normal(size=(6, 2, 1, 1)),
    }
    weights = tmp_path / "tiny.weights"
    # Darknet order for a batch-normalised conv: biases, scales, rolling mean, rolling variance, kernel.
    _write_weights(
        weights, np.concatenate([params[k].ravel() for k in ("bias", "scales", "mean", "var", "kernel")]), minor=minor
    )
    model = load_darknet(cfg, weights)
    assert model.head_shapes == [(1, 6, 4, 4)]
    np.testing.assert_array_equal(model.heads[0].anchors, [[2.0, 3.0]])
    x = rng.uniform(size=(2, 4, 4))
    (head,) = model(torch.from_numpy(x[None].astype(np.float32)))
    np.testing.assert_allclose(head[0].numpy(), _tiny_reference(x, params), rtol=1e-5, atol=1e-5)


@needs_yolo
@pytest.mark.parametrize("name", MODELS)
def test_yolo_fastest_cfg_parses(name: str) -> None:
    sections = parse_cfg(YOLO / f"{name}.cfg")
    kinds = [s.kind for s in sections]
    assert kinds[0] == "net" and kinds.count("convolutional") == 84 and kinds.count("yolo") == 2
    model = Darknet(sections)
    assert model.input_size == (320, 320) and not model.letterbox
    assert model.head_shapes == [(1, 255, 10, 10), (1, 255, 20, 20)]
    # First [yolo] (stride 32) takes the big anchors, mask 3,4,5.
    np.testing.assert_array_equal(model.heads[0].anchors, [[115, 73], [119, 199], [242, 238]])
    np.testing.assert_array_equal(model.heads[1].anchors, [[12, 18], [37, 49], [52, 132]])
    assert all(h.num_classes == 80 for h in model.heads)


@needs_yolo
@pytest.mark.parametrize("name", MODELS)
def test_yolo_fastest_weights_consumed_exactly(name: str, tmp_path: Path) -> None:
    model = Darknet(parse_cfg(YOLO / f"{name}.cfg"))
    header = load_darknet_weights(model, YOLO / f"{name}.weights")
    assert (header.major, header.minor, header.revision) == (0, 2, 5) and header.seen > 0
    assert all(torch.isfinite(c.conv.weight).all() and c.conv.weight.abs().sum() > 0 for c in model.conv_layers)
    raw = (YOLO / f"{name}.weights").read_bytes()
    short, long_ = tmp_path / "short.weights", tmp_path / "long.weights"
    short.write_bytes(raw[:-4])
    long_.write_bytes(raw + b"\0\0\0\0")
    with pytest.raises(ModelError, match="ends inside convolutional layer 83"):
        load_darknet_weights(model, short)
    with pytest.raises(ModelError, match="1 float32 left"):
        load_darknet_weights(model, long_)


@needs_yolo
def test_weights_of_another_cfg_are_refused() -> None:
    model = Darknet(parse_cfg(YOLO / "yolo-fastest-1.1.cfg"))
    with pytest.raises(ModelError, match="left after the last layer"):
        load_darknet_weights(model, YOLO / "yolo-fastest-1.1-xl.weights")


@needs_yolo
def test_model_without_weights_file_is_refused(tmp_path: Path) -> None:
    shutil.copy(YOLO / "yolo-fastest-1.1.cfg", tmp_path / "m.cfg")
    with pytest.raises(ModelError, match="cannot read Darknet weights"):
        load_darknet(tmp_path / "m.cfg", tmp_path / "absent.weights")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[convolutional]\nfilters=1\n", "must start with a \\[net\\]"),
        ("size=3\n[net]\n", ":1: expected"),
        ("[net]\nwidth=8\nheight=8\n[crnn]\n", ":4 \\[crnn\\] \\(layer 0\\): unsupported Darknet layer type"),
        ("[net]\nwidth=8\nheight=8\n[convolutional]\nfilters=2\nstride_x=2\n", "unsupported option"),
        ("[net]\nwidth=8\nheight=8\n[convolutional]\nfilters=x\n", "filters='x' is not an integer"),
        ("[net]\nwidth=8\nheight=8\n[route]\nlayers=-1\n", "must name earlier layers"),
        ("[net]\nwidth=8\nheight=8\n[convolutional]\nfilters=4\n", "no \\[yolo\\] layer"),
        ("[net]\nwidth=8\nheight=8\n[convolutional]\nfilters=4\n[yolo]\nmask=0\nanchors=1,1\nclasses=1\n", "channels"),
    ],
)
def test_bad_cfg_raises_model_error_naming_the_line(tmp_path: Path, text: str, message: str) -> None:
    cfg = tmp_path / "bad.cfg"
    cfg.write_text(text)
    with pytest.raises(ModelError, match=message):
        load_darknet(cfg)
