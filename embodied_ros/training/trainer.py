"""The training loop: samples -> losses -> AdamW, checkpoints, resume, held-out evaluation, plot; DDP-ready.

Under ``torchrun --nproc_per_node N`` every process trains on its own share of the scenes and
DistributedDataParallel (gloo, CPU) averages the gradients; only rank 0 evaluates and writes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..network.perceptron import EmbodiedPerceptron
from ..network.perceptron_loss import perceptron_loss
from ..network.perceptron_perceptor import torch_runner
from .config import TrainConfig, dump_config
from .evaluate import evaluate
from .samples import TrainingSample, generate_samples

log = logging.getLogger(__name__)

CHECKPOINT = "checkpoint.pt"
WEIGHTS = "perceptron.pt"
HISTORY = "history.json"
PLOT = "training.png"


@dataclass(frozen=True)
class TrainResult:
    """What a finished run left behind (rank 0)."""

    steps: int
    weights: Path
    history: list[dict[str, Any]]
    seconds: float


def _dist_info() -> tuple[int, int]:
    """(rank, world size) from torchrun's environment; (0, 1) for a plain run."""
    return int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))


def _lr_factor(step: int, warmup: int, total: int) -> float:
    if step < warmup:
        return (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))


def save_weights(model: EmbodiedPerceptron, config: TrainConfig, path: Path,
                 extra: dict[str, Any] | None = None) -> None:
    """The shipped form: state dict + the config that built it (atomic write)."""
    tmp = path.with_suffix(".tmp")
    torch.save({"state_dict": model.state_dict(), "config_yaml": dump_config(config), **(extra or {})}, tmp)
    tmp.replace(path)


def load_weights(path: Path) -> tuple[EmbodiedPerceptron, TrainConfig]:
    """A model (eval mode) and its TrainConfig from a weights file written by save_weights."""
    import tempfile

    from .config import load_config

    blob = torch.load(path, map_location="cpu", weights_only=True)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(blob["config_yaml"])
    config = load_config(f.name)
    Path(f.name).unlink()
    model = EmbodiedPerceptron(config.model)
    model.load_state_dict(blob["state_dict"])
    return model.eval(), config


def _sample_loss(model: nn.Module, sample: TrainingSample, config: TrainConfig, coarse: torch.Tensor) -> dict:
    x = sample.inputs
    outputs = model(torch.from_numpy(x.images), torch.from_numpy(x.projections), torch.from_numpy(x.depth_volume))
    return perceptron_loss(outputs, sample.targets, torch.from_numpy(sample.occupancy), coarse, config.loss)


def _plot(history: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    losses = [h for h in history if "total" in h]
    evals = [h for h in history if "map25_frame" in h]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5), dpi=100)
    for key in ("total", "cls", "centerness", "corners", "occupancy", "affinity"):
        a.plot([h["step"] for h in losses], [h[key] for h in losses], label=key)
    a.set_yscale("log")
    a.set_xlabel("step")
    a.set_title("training losses")
    a.legend(fontsize=8)
    for key, label in (("map25_frame", "mAP@0.25 per frame"), ("map25_scene", "mAP@0.25 accumulated"),
                       ("miou", "occupancy mIoU")):
        b.plot([h["step"] for h in evals], [h[key] for h in evals], "o-", label=label)
    b.set_ylim(0, 1)
    b.set_xlabel("step")
    b.set_title("held-out scenes")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def train(config: TrainConfig, out_dir: Path, resume: bool = False, progress: bool = True) -> TrainResult | None:
    """Train (or resume) a run in ``out_dir``; returns the result on rank 0, None on other ranks."""
    import time

    from tqdm import tqdm

    rank, world = _dist_info()
    distributed = world > 1
    if distributed:
        torch.distributed.init_process_group("gloo")
    torch.set_num_threads(config.optim.threads)
    torch.manual_seed(config.seed + rank)
    rng = np.random.default_rng([config.seed, rank])
    out_dir.mkdir(parents=True, exist_ok=True)
    if rank == 0:
        (out_dir / "config.yaml").write_text(dump_config(config))

    model = EmbodiedPerceptron(config.model)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.optim.lr, weight_decay=config.optim.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: _lr_factor(s, config.optim.warmup_steps, config.optim.steps))
    history: list[dict[str, Any]] = []
    start = 0
    if resume and (out_dir / CHECKPOINT).is_file():
        blob = torch.load(out_dir / CHECKPOINT, map_location="cpu", weights_only=False)
        model.load_state_dict(blob["model"])
        optimiser.load_state_dict(blob["optimiser"])
        schedule.load_state_dict(blob["schedule"])
        start, history = int(blob["step"]), list(blob["history"])
        log.info("resumed %s at step %d", out_dir, start)
    ddp = torch.nn.parallel.DistributedDataParallel(model) if distributed else model

    seeds = range(*config.data.train_seeds)[rank::world]
    samples = generate_samples(seeds, config.model, config.data, config.data.frames_per_scene,
                               progress=progress and rank == 0)
    coarse = torch.from_numpy(config.model.coarse_voxel_centres())
    t0 = time.perf_counter()
    window: list[dict[str, float]] = []
    bar = tqdm(range(start, config.optim.steps), initial=start, total=config.optim.steps, unit="step",
               desc="training", disable=not progress or rank != 0)
    for step in bar:
        model.train()
        optimiser.zero_grad()
        for k in range(config.optim.accumulate):
            sample = samples[int(rng.integers(len(samples)))]
            last = k == config.optim.accumulate - 1
            context = ddp.no_sync() if distributed and not last else contextlib.nullcontext()
            with context:
                losses = _sample_loss(ddp, sample, config, coarse)
                (losses["total"] / config.optim.accumulate).backward()
            window.append({key: float(v.detach()) for key, v in losses.items()})
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.optim.grad_clip)
        optimiser.step()
        schedule.step()
        done = step + 1
        if done % config.log_every == 0 or done == config.optim.steps:
            mean = {key: float(np.mean([w[key] for w in window])) for key in window[0]}
            history.append({"step": done, "lr": schedule.get_last_lr()[0], **mean})
            bar.set_postfix(loss=f"{mean['total']:.3f}")
            window = []
        if rank == 0 and (done % config.eval_every == 0 or done == config.optim.steps):
            result = evaluate(torch_runner(model.eval()), config.model, config.data)
            history.append({"step": done, "map25_frame": result.per_frame.mean_ap[0.25],
                            "map25_scene": result.accumulated.mean_ap[0.25], "miou": result.occupancy.miou,
                            "map50_scene": result.accumulated.mean_ap[0.5]})
            log.info("step %d: %s", done, result.summary())
        if rank == 0 and (done % config.checkpoint_every == 0 or done == config.optim.steps):
            tmp = out_dir / (CHECKPOINT + ".tmp")
            torch.save({"model": model.state_dict(), "optimiser": optimiser.state_dict(),
                        "schedule": schedule.state_dict(), "step": done, "history": history}, tmp)
            tmp.replace(out_dir / CHECKPOINT)
            (out_dir / HISTORY).write_text(json.dumps(history, indent=1))
        if distributed:
            torch.distributed.barrier()
    seconds = time.perf_counter() - t0
    if distributed:
        torch.distributed.destroy_process_group()
    if rank != 0:
        return None
    weights = out_dir / WEIGHTS
    save_weights(model, config, weights, extra={"steps": config.optim.steps, "train_seconds": seconds})
    (out_dir / HISTORY).write_text(json.dumps(history, indent=1))
    _plot(history, out_dir / PLOT)
    return TrainResult(config.optim.steps, weights, history, seconds)

