"""`train`: config files, a tiny real run, checkpoint resume, held-out evaluation, and DDP under torchrun."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from embodied_ros.errors import ConfigError
from embodied_ros.network.grounding_head import GroundingHead
from embodied_ros.training.config import TrainConfig, dump_config, load_config
from embodied_ros.training.trainer import CHECKPOINT, HISTORY, PLOT, WEIGHTS, load_head, load_weights, train

TINY_YAML = """
model:
  image_size: 64
  grid_shape: [8, 8, 4]
  voxel_size: 0.8
  image_channels: 8
  volume_channels: [8, 8, 8]
data:
  train_seeds: [0, 2]
  val_seeds: [100, 101]
  frames_per_scene: 3
  val_frames_per_scene: 2
  min_visibility: 0.05
  image_width: 192
  image_height: 192
optim:
  steps: 4
  accumulate: 1
  warmup_steps: 1
  threads: 1
eval_every: 4
checkpoint_every: 2
log_every: 2
"""


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_YAML)
    return path


def test_config_round_trip_and_errors(tiny: Path, tmp_path: Path) -> None:
    config = load_config(tiny)
    assert config.model.grid_shape == (8, 8, 4) and config.optim.steps == 4 and config.data.val_seeds == (100, 101)
    assert config.optim.lr == TrainConfig().optim.lr  # missing keys take the defaults
    again = tmp_path / "again.yaml"
    again.write_text(dump_config(config))
    assert load_config(again) == config
    (tmp_path / "bad.yaml").write_text("optim:\n  stepz: 3\n")
    with pytest.raises(ConfigError, match="stepz"):
        load_config(tmp_path / "bad.yaml")
    (tmp_path / "broken.yaml").write_text("optim: [\n")
    with pytest.raises(ConfigError):
        load_config(tmp_path / "broken.yaml")


def test_the_shipped_stages_configs_load() -> None:
    """Every config the README and the model card name parses, and the pixel stages train the pixel head alone."""
    configs = sorted((Path(__file__).parents[1] / "config").glob("train_*.yaml"))
    assert len(configs) >= 3
    for path in configs:
        config = load_config(path)
        if "pixels" in path.name:
            assert config.model.pixel_head and tuple(config.optim.train_only) == ("perceptron.pixel_head",), path
            assert config.init_weights, path


def test_train_evaluate_and_resume(tiny: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = train(load_config(tiny), out, progress=False)
    assert result is not None and result.steps == 4
    for name in (CHECKPOINT, WEIGHTS, HISTORY, PLOT, "config.yaml"):
        assert (out / name).is_file(), name
    history = json.loads((out / HISTORY).read_text())
    losses = [h for h in history if "total" in h]
    evals = [h for h in history if "map25_frame" in h]
    assert [h["step"] for h in losses] == [2, 4] and all(h["total"] > 0 for h in losses)
    assert len(evals) == 1 and 0.0 <= evals[0]["miou"] <= 1.0  # evaluated on the held-out scene
    assert 0.0 <= evals[0]["miou_view"] <= 1.0  # and on the voxels in view only
    assert 0.0 <= evals[0]["miou_map_grid"] <= 1.0  # the accumulated world map on whole grids
    assert all("grounding" in h and "ground_acc" in h for h in losses)  # the grounding head trained too
    assert any(h["grounding"] > 0 for h in losses)
    assert "grounding_acc" in evals[0]
    head = load_head(out / WEIGHTS)
    assert isinstance(head, GroundingHead) and head.config.feature_dim == 8  # the perceptron's feature width
    model, config = load_weights(out / WEIGHTS)
    assert config == load_config(tiny)
    with torch.no_grad():
        assert model(*[torch.zeros(1, 3, 64, 64), torch.zeros(1, 3, 4), torch.zeros(1, 1, 8, 8, 4)])[0].shape[2:] == (
            8, 8, 4)
    longer = tmp_path / "longer.yaml"
    longer.write_text(TINY_YAML.replace("steps: 4", "steps: 6").replace("eval_every: 4", "eval_every: 100"))
    resumed = train(load_config(longer), out, resume=True, progress=False)
    assert resumed is not None
    steps = [h["step"] for h in json.loads((out / HISTORY).read_text()) if "total" in h]
    assert steps == [2, 4, 6]  # continued from the step-4 checkpoint, not restarted


def test_ddp_under_torchrun(tiny: Path, tmp_path: Path) -> None:
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip(f"torchrun not found beside {sys.executable}")
    ddp_yaml = tmp_path / "ddp.yaml"
    ddp_yaml.write_text(TINY_YAML.replace("steps: 4", "steps: 2").replace("eval_every: 4", "eval_every: 100"))
    out = tmp_path / "ddp"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1"}
    proc = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                           str(29500 + os.getpid() % 1000), "-m", "embodied_ros.cli", "train", "--config",
                           str(ddp_yaml), "--out", str(out), "--no-progress"],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (out / WEIGHTS).is_file()
    history = json.loads((out / HISTORY).read_text())
    assert [h["step"] for h in history if "total" in h] == [2]


def test_pixel_head_stage_trains_only_the_head(tiny: Path, tmp_path: Path) -> None:
    """A pixel head added to trained weights: only its tensors change, batch-norm statistics included."""
    base = tmp_path / "base"
    train(load_config(tiny), base, progress=False)
    stage = tmp_path / "stage.yaml"
    with_head = "  volume_channels: [8, 8, 8]\n  pixel_head: true\n"
    stage.write_text(TINY_YAML.replace("  volume_channels: [8, 8, 8]\n", with_head)
                     .replace("optim:\n", "optim:\n  train_only: [perceptron.pixel_head]\n")
                     + f"init_weights: {base / WEIGHTS}\n")
    out = tmp_path / "pixels"
    result = train(load_config(stage), out, progress=False)
    assert result is not None
    before = torch.load(base / WEIGHTS, weights_only=True)
    after = torch.load(out / WEIGHTS, weights_only=True)
    fresh = [k for k in after["state_dict"] if k not in before["state_dict"]]
    assert fresh and all(k.startswith("pixel_head.") for k in fresh)
    assert all(torch.equal(before["state_dict"][k], after["state_dict"][k]) for k in before["state_dict"])
    heads = before["head_state_dict"], after["head_state_dict"]
    assert all(torch.equal(heads[0][k], heads[1][k]) for k in heads[0])
    history = json.loads((out / HISTORY).read_text())
    assert all("pixel" in h and h["pixel"] > 0 and "cls" not in h for h in history if "total" in h)
    evals = [h for h in history if "pixel_miou" in h]
    assert len(evals) == 1 and 0.0 <= evals[0]["pixel_miou"] <= 1.0
    model, _ = load_weights(out / WEIGHTS)
    assert model.pixel_logits(torch.zeros(1, 3, 64, 64)).shape == (1, model.config.num_classes + 1, 32, 32)


def test_train_only_and_init_weights_errors(tiny: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(TINY_YAML.replace("optim:\n", "optim:\n  train_only: [perceptron.no_such_module]\n"))
    with pytest.raises(ConfigError, match="no_such_module"):
        train(load_config(bad), tmp_path / "bad_run", progress=False)
    base = tmp_path / "base"
    train(load_config(tiny), base, progress=False)
    wider = tmp_path / "wider.yaml"  # other shapes: the tensors do not fit
    wider.write_text(TINY_YAML.replace("image_channels: 8", "image_channels: 12") + f"init_weights: {base / WEIGHTS}\n")
    with pytest.raises(RuntimeError, match="size mismatch"):
        train(load_config(wider), tmp_path / "wider_run", progress=False)
