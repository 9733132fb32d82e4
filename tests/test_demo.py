"""`embodied-ros demo` on a synthetic scene with real (tiny, freshly trained) Embodied Perceptron weights."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_training import TINY_YAML

from embodied_ros.cli import main
from embodied_ros.errors import ModelError
from embodied_ros.network.registry import build_perceptron
from embodied_ros.network.size_calibration import SizeCalibration, calibration_path
from embodied_ros.runtime.engine_cache import sha256_file
from embodied_ros.training.config import load_config
from embodied_ros.training.trainer import WEIGHTS, train


@pytest.fixture(scope="module")
def tiny_weights(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tiny")
    config = TINY_YAML.replace("steps: 4", "steps: 2").replace("eval_every: 4", "eval_every: 99")
    (root / "tiny.yaml").write_text(config)
    train(load_config(root / "tiny.yaml"), root / "run", progress=False)
    return root / "run" / WEIGHTS


def test_registry_runs_the_perceptron_on_onnx_runtime(tiny_weights: Path, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path / "cache"))
    perceptor = build_perceptron(tiny_weights, backend="onnxruntime", floor_z=0.0)
    assert "onnxruntime" in perceptor.name
    assert list((tmp_path / "cache" / "onnx").glob("embodied-perceptron-*.onnx"))  # exported once, cached


def test_registry_applies_the_size_calibration_beside_the_weights(tiny_weights: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path / "cache"))
    weights = tmp_path / "w" / "embodied_perceptron.pt"
    weights.parent.mkdir()
    shutil.copy(tiny_weights, weights)
    assert build_perceptron(weights, backend="onnxruntime").sizes is None
    SizeCalibration({"cup": (1.5, 0.5)}).save(calibration_path(weights))
    assert build_perceptron(weights, backend="onnxruntime").sizes.factors == {"cup": (1.5, 0.5)}
    # Fitted for these weights: used; for other weights: ignored (a stale file never rescales boxes).
    SizeCalibration({"cup": (1.5, 0.5)}, weights_sha256=sha256_file(weights)).save(calibration_path(weights))
    assert build_perceptron(weights, backend="onnxruntime").sizes is not None
    SizeCalibration({"cup": (1.5, 0.5)}, weights_sha256="0" * 64).save(calibration_path(weights))
    assert build_perceptron(weights, backend="onnxruntime").sizes is None
    calibration_path(weights).write_text("{}")
    with pytest.raises(ModelError, match="not a size calibration"):
        build_perceptron(weights, backend="onnxruntime")


def test_calibrate_command_fits_on_training_seeds_only(tiny_weights: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sizes.json"
    assert main(["calibrate", "--weights", str(tiny_weights), "--seeds", "100", "102", "--out", str(out)]) == 2
    assert "held-out seeds 100..100" in capsys.readouterr().err and not out.exists()
    # A mistyped path is an error, never a silent fall-back to the shipped weights.
    assert main(["calibrate", "--weights", str(tmp_path / "typo.pt"), "--out", str(out)]) == 2
    assert "typo.pt: no such file" in capsys.readouterr().err and not out.exists()
    assert main(["calibrate", "--weights", str(tiny_weights), "--seeds", "0", "1", "--frames", "2", "--out", str(out),
                 "--no-progress"]) == 0
    assert "size calibration of" in capsys.readouterr().out
    fitted = SizeCalibration.load(out)
    assert fitted.source.endswith("seeds 0..0, 2 keyframes each") and fitted.weights_sha256 == sha256_file(tiny_weights)


def test_demo_writes_outputs_and_metrics(tiny_weights: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("EMBODIED_ROS_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "demo"
    assert main(["demo", "--weights", str(tiny_weights), "--max-frames", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "never trained on" in printed and "mAP@0.25" in printed and "grounding:" in printed
    assert "world occupancy map vs ground truth" in printed
    metrics = json.loads((out / "demo_metrics.json").read_text())
    assert metrics["frames"] == 2 and metrics["objects_seen"] > 0
    assert 0.0 <= metrics["map25_accumulated"] <= 1.0 and metrics["grounding_prompts"] > 0
    assert 0.0 <= metrics["occupancy_miou_in_view"] <= 1.0
    for name in ("scene.mcap", "objects.json", "memory.json", "top_down.png"):
        assert (out / name).is_file(), name


def test_export_command_writes_the_perceptron_graph(tiny_weights: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "perceptron.onnx"
    assert main(["export", "--model", "embodied-perceptron", "--weights", str(tiny_weights), "--onnx", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.is_file() and "no problems found" in printed and "depth_volume" in printed
