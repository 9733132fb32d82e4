"""The ncnn reader against the ncnn runtime itself: a hand-made graph of every supported layer, and
NanoDet-Plus on a real redkitchen frame (raw outputs allclose)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from embodied_ros.errors import ModelError
from embodied_ros.network.ncnn import load_ncnn, parse_param
from embodied_ros.runtime.config import RuntimeConfig

ncnn = pytest.importorskip("ncnn", reason="the ncnn runtime (dev extra) is the reference for the reader")

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
NANODET = DATA / "nanodet_plus"
KITCHEN = DATA / "redkitchen"
_TAG_FP16 = 0x01306B47

# Every layer type and option the reader supports; odd channel counts, a fp16 kernel whose byte size
# needs padding (15 values), a float32-tagged kernel, a convolution without bias.
SMALL_PARAM = """7767517
15 18
Input            in    0 1 in 0=8 1=8 2=3
Convolution      c0    1 1 in z 0=5 1=1 5=0 6=15
Convolution      c1    1 1 z a 0=8 1=3 4=1 5=1 6=360 9=2 -23310=1,1.000000e-01
Split            sp    1 2 a a0 a1
ConvolutionDepthWise dw 1 1 a0 b 0=8 1=3 3=2 4=1 5=1 6=72 7=8 9=1
Interp           up    1 1 b c 0=2 1=2.000000e+00 2=2.000000e+00
BinaryOp         add   2 1 c a1 d 0=0
ShuffleChannel   sh    1 1 d e 0=2
Split            sp2   1 2 e e0 e1
Crop             cr    1 1 e0 f -23309=1,2 -23310=1,6 -23311=1,0
Slice            sl    1 2 e1 g h -23300=2,3,-233
Pooling          pool  1 1 h i 0=0 1=3 2=2 3=1 5=1
Interp           up2   1 1 i j 0=1 1=2.000000e+00 2=2.000000e+00
Concat           cat   3 1 f g j k 0=0
Sigmoid          sg    1 1 k out
"""
SMALL_TAIL = """Reshape          rs    1 1 out m 0=-1 1=12
Permute          pm    1 1 m flat 0=1
"""


def _write_small(folder: Path, with_tail: bool = True) -> tuple[Path, Path]:
    rng = np.random.default_rng(3)
    param = SMALL_PARAM.replace("15 18", "17 20") + SMALL_TAIL if with_tail else SMALL_PARAM
    chunks = []
    for count, bias, fp16 in ((15, 0, True), (360, 8, True), (72, 8, False)):
        weights = rng.normal(0, 0.5, count)
        if fp16:
            raw = weights.astype("<f2").tobytes()
            chunks += [np.uint32(_TAG_FP16).tobytes(), raw, b"\0" * (-len(raw) % 4)]
        else:
            chunks += [np.uint32(0).tobytes(), weights.astype("<f4").tobytes()]
        chunks.append(rng.normal(0, 0.5, bias).astype("<f4").tobytes())
    (folder / "small.param").write_text(param)
    (folder / "small.bin").write_bytes(b"".join(chunks))
    return folder / "small.param", folder / "small.bin"


def _ncnn_run(param: Path, weights: Path, inputs: dict[str, np.ndarray], output: str) -> np.ndarray:
    net = ncnn.Net()
    for option in ("use_fp16_storage", "use_fp16_packed", "use_fp16_arithmetic", "use_bf16_storage"):
        setattr(net.opt, option, False)  # float32 arithmetic throughout, as the reader computes
    net.opt.num_threads = 2
    assert net.load_param(str(param)) == 0 and net.load_model(str(weights)) == 0
    extractor = net.create_extractor()
    for name, value in inputs.items():
        extractor.input(name, ncnn.Mat(np.ascontiguousarray(value)))
    status, mat = extractor.extract(output)
    assert status == 0
    return np.array(mat)


def test_every_supported_layer_matches_the_ncnn_runtime(tmp_path: Path) -> None:
    param, weights = _write_small(tmp_path)
    x = np.random.default_rng(0).normal(0, 1, (3, 8, 8)).astype(np.float32)
    net = load_ncnn(param, weights, (3, 8, 8), output_names=("out", "flat"))
    with torch.no_grad():
        out, flat = (t[0].numpy() for t in net(torch.from_numpy(x[None])))
    assert out.shape == (12, 8, 8) and flat.shape == (64, 12)
    np.testing.assert_allclose(out, _ncnn_run(param, weights, {"in": x}, "out"), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(flat, _ncnn_run(param, weights, {"in": x}, "flat"), rtol=1e-5, atol=1e-5)


def test_bad_files_are_refused_with_the_reason(tmp_path: Path) -> None:
    param, weights = _write_small(tmp_path)
    data = weights.read_bytes()
    for name, blob, match in (
        ("short.bin", data[:-4], "ends inside"),
        ("long.bin", data + b"\0" * 8, "8 bytes left"),
        ("int8.bin", np.uint32(0x000D4B38).tobytes() + data[4:], "int8 or quantized"),
    ):
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(ModelError, match=match):
            load_ncnn(param, tmp_path / name, (3, 8, 8), output_names=("out",))
    text = param.read_text()
    for name, bad, match in (
        ("magic.param", text.replace("7767517", "7767518", 1), "not an ncnn .param"),
        ("count.param", text.replace("17 20", "18 20", 1), "header says 18 layers"),
        ("layer.param", text.replace("Sigmoid          sg", "Softmax          sg"), "Softmax is not supported"),
        ("blob.param", text.replace("1 1 out m", "1 1 nowhere m"), "reads blobs \\['nowhere'\\]"),
        ("pad.param", text.replace("4=1 5=1 6=360", "4=-233 5=1 6=360"), "SAME padding"),
    ):
        (tmp_path / name).write_text(bad)
        with pytest.raises(ModelError, match=match):
            load_ncnn(tmp_path / name, weights, (3, 8, 8), output_names=("out",))
    with pytest.raises(ModelError, match="cannot read ncnn param"):
        parse_param(tmp_path / "absent.param")


@pytest.mark.skipif(not (NANODET.is_dir() and KITCHEN.is_dir()), reason=f"nanodet_plus or redkitchen not in {DATA}")
def test_nanodet_reading_matches_the_ncnn_runtime_on_a_real_frame() -> None:
    from embodied_ros.network.nanodet_detector import NanoDetDetector2D

    param, weights = NANODET / "nanodet-plus-m_416.param", NANODET / "nanodet-plus-m_416.bin"
    detector = NanoDetDetector2D(param, weights, NANODET / "coco.names",
                                 runtime=RuntimeConfig(backend="torch"))
    image = np.asarray(Image.open(KITCHEN / "frame-000300.color.jpg").convert("RGB"))
    batch, _ = detector.preprocess(image)
    (ours,) = detector.infer(batch)
    reference = _ncnn_run(param, weights, {"data": batch[0]}, "output")
    assert ours.shape == (1, *reference.shape) == (1, 3598, 112)
    # float32 both ways; they differ in summation order through ~110 layers (seen: 4e-5 of 18).
    np.testing.assert_allclose(ours[0], reference, rtol=1e-4, atol=2e-4)
    assert reference[:, :80].max() > 0.5  # the frame's cup, not an empty scene
