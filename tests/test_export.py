"""`embodied-ros export` (export_command): the YOLO network to ONNX with its documented contract, and its errors."""

from __future__ import annotations

import argparse
import io
import os
import re
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest

from embodied_ros.errors import ConfigError, ModelError
from embodied_ros.network.export_command import add_export_arguments, cmd_export, export_command
from embodied_ros.runtime.tensorrt_backend import tensorrt_status

DATA = Path(os.environ.get("EMBODIED_ROS_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
YOLO = DATA / "yolo_fastest"
needs_data = pytest.mark.skipif(not YOLO.is_dir(), reason=f"Yolo-Fastest files not found in {DATA}")


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exports and engines go to a per-session cache, not the user's home."""
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="embodied-ros export")
    add_export_arguments(parser)
    return parser.parse_args(argv)


@needs_data
def test_export_writes_the_documented_graph(tmp_path: Path) -> None:
    out = io.StringIO()
    path = tmp_path / "models" / "yolo.onnx"
    assert export_command("yolo-fastest-1.1-xl", onnx_path=path, weights=YOLO, out=out) == 0
    text = out.getvalue()
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 10 and model.opset_import[0].version == 17
    assert f"wrote {path} (ONNX IR 10, opset 17)" in text
    assert "image: float32 (1, 3, 320, 320)" in text and "head_1: float32 (1, 255, 20, 20)" in text
    assert "TensorRT compatibility check: no problems found" in text
    diff = float(re.search(r"ONNX Runtime vs PyTorch on a random input: max abs diff (\S+),", text).group(1))
    assert diff < 1e-3  # raw logits of O(10): float32 summation order only
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])  # the installed ORT loads it
    assert [i.name for i in session.get_inputs()] == ["image"]
    assert [o.name for o in session.get_outputs()] == ["head_0", "head_1"]


@pytest.mark.parametrize(("model", "folder", "shapes"), [
    ("yolox-nano", "yolox_nano", ("images: float32 (1, 3, 416, 416)", "output: float32 (1, 3549, 85)")),
    ("nanodet-plus-m-416", "nanodet_plus", ("data: float32 (1, 3, 416, 416)", "output: float32 (1, 3598, 112)")),
])
def test_export_of_the_stronger_detectors(model: str, folder: str, shapes: tuple[str, str], tmp_path: Path) -> None:
    if not (DATA / folder).is_dir():
        pytest.skip(f"{model}'s files not found in {DATA / folder}")
    out = io.StringIO()
    path = tmp_path / f"{model}.onnx"
    assert export_command(model, onnx_path=path, weights=DATA / folder, out=out) == 0
    text = out.getvalue()
    assert f"wrote {path} (ONNX IR 10, opset 17)" in text and all(s in text for s in shapes)
    assert "TensorRT compatibility check: no problems found" in text
    diff = float(re.search(r"ONNX Runtime vs PyTorch on a random input: max abs diff (\S+),", text).group(1))
    assert diff < 1e-3
    ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


@needs_data
@pytest.mark.skipif(tensorrt_status() is None, reason="TensorRT is usable here")
def test_engine_without_tensorrt_is_one_clear_error(tmp_path: Path) -> None:
    args = _parse(["--weights", str(YOLO), "--onnx", str(tmp_path / "y.onnx"), "--engine", str(tmp_path / "y.engine"),
                   "--fp16"])
    with pytest.raises(ModelError, match="--engine needs TensorRT: "):
        cmd_export(args)
    assert not (tmp_path / "y.onnx").exists()  # refused before any work


def test_export_argument_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--fp16 applies to the TensorRT engine"):
        cmd_export(_parse(["--onnx", str(tmp_path / "y.onnx"), "--fp16"]))
    with pytest.raises(ModelError, match="unknown model 'nope'"):
        cmd_export(_parse(["--model", "nope", "--onnx", str(tmp_path / "y.onnx")]))
    with pytest.raises(SystemExit):
        _parse(["--model", "yolo-fastest-1.1-xl"])  # --onnx is required
