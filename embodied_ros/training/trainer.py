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

from ..errors import ConfigError
from ..network.grounding_head import GroundingHead
from ..network.perceptron import EmbodiedPerceptron
from ..network.perceptron_file import perceptron_from, read_weights
from ..network.perceptron_loss import perceptron_loss, pixel_loss
from ..network.perceptron_perceptor import torch_runner
from .config import TrainConfig, config_from_yaml, dump_config, head_config, synthetic_model
from .evaluate import evaluate, evaluate_grounding_head, evaluate_pixel_head
from .grounding_loss import grounding_loss
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


class _Joint(nn.Module):
    """The perceptron and its grounding head as one module (one optimiser, one DDP wrapper).

    The head runs inside ``forward`` so DistributedDataParallel sees which parameters a sample
    used (a keyframe without prompts leaves the head out of the graph).
    """

    def __init__(self, perceptron: EmbodiedPerceptron, head: GroundingHead | None) -> None:
        super().__init__()
        self.perceptron = perceptron
        self.head = head

    def forward(self, sample: TrainingSample, pixels_only: bool = False
                ) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, int, int] | None]:
        x = sample.inputs
        if pixels_only:  # the pixel head alone: no 3D pass
            return (self.perceptron.pixel_logits(torch.from_numpy(x.images)),), None
        outputs = self.perceptron(torch.from_numpy(x.images), torch.from_numpy(x.projections),
                                  torch.from_numpy(x.depth_volume))
        if self.head is None:
            return outputs, None
        return outputs, grounding_loss(outputs[5], sample, self.head, self.perceptron.config)


def save_weights(model: EmbodiedPerceptron, config: TrainConfig, path: Path,
                 extra: dict[str, Any] | None = None, head: GroundingHead | None = None) -> None:
    """The shipped form: state dicts + the config that built them (atomic write)."""
    tmp = path.with_suffix(".tmp")
    blob = {"state_dict": model.state_dict(), "config_yaml": dump_config(config), **(extra or {})}
    if head is not None:
        blob["head_state_dict"] = head.state_dict()
    torch.save(blob, tmp)
    tmp.replace(path)


def load_head(path: Path) -> GroundingHead | None:
    """The grounding head saved beside the perceptron (eval mode), or None if the file has none."""
    blob = read_weights(path)
    if "head_state_dict" not in blob:
        return None
    head = GroundingHead(head_config(config_from_yaml(blob["config_yaml"], path.name)))
    head.load_state_dict(blob["head_state_dict"])
    return head.eval()


def load_weights(path: Path) -> tuple[EmbodiedPerceptron, TrainConfig]:
    """A model (eval mode) and the whole TrainConfig from a weights file written by save_weights (inference reads
    the model alone: network/perceptron_file.py).

    The labels are the vocabulary saved in the file's config; a file whose config names none was
    trained on the synthetic world and gets its vocabulary (``config.synthetic_model``).
    """
    blob = read_weights(path)
    config = config_from_yaml(blob["config_yaml"], path.name)
    return perceptron_from(blob, config.model), config


def _pixel_term(logits: torch.Tensor, sample: TrainingSample, config: TrainConfig) -> torch.Tensor:
    if sample.pixel_labels is None:
        raise ConfigError("model.pixel_head is on but the training data has no pixel labels")
    labels = torch.from_numpy(sample.pixel_labels.astype(np.int64))
    return pixel_loss(logits, labels, config.loss.pixel_other_weight)


def _sample_loss(joint: nn.Module, sample: TrainingSample, config: TrainConfig, coarse: torch.Tensor,
                 pixels_only: bool = False) -> dict:
    if pixels_only:
        (logits,), _ = joint(sample, pixels_only=True)
        p = _pixel_term(logits, sample, config)
        return {"pixel": p, "total": config.loss.pixel * p}
    outputs, grounding = joint(sample)
    losses = perceptron_loss(outputs, sample.targets, torch.from_numpy(sample.occupancy), coarse, config.loss)
    if len(outputs) > 6:  # the pixel head
        losses["pixel"] = _pixel_term(outputs[6], sample, config)
        losses["total"] = losses["total"] + config.loss.pixel * losses["pixel"]
    if grounding is not None:
        g, correct, total = grounding
        losses["grounding"] = g
        losses["total"] = losses["total"] + config.loss.grounding * g
        losses["ground_correct"], losses["ground_total"] = torch.tensor(float(correct)), torch.tensor(float(total))
    return losses


def _text_encoder() -> object | None:
    """The offline MiniLM encoder for the prompts, or None (logged) when it is not installed."""
    from ..errors import ModelError
    from ..grounding.text_encoder import TextEncoder

    try:
        return TextEncoder()
    except ModelError as err:
        log.warning("no text encoder (%s): the grounding head is not trained", err)
        return None


def _initialise(joint: _Joint, path: Path) -> None:
    """Start from a weights file: every tensor it holds must fit; modules it lacks stay fresh."""
    blob = read_weights(path)
    missing, unexpected = joint.perceptron.load_state_dict(blob["state_dict"], strict=False)
    if unexpected:
        raise ConfigError(f"init_weights {path}: tensors this model does not have: {', '.join(unexpected[:5])}")
    if joint.head is not None and "head_state_dict" in blob:
        joint.head.load_state_dict(blob["head_state_dict"])
    log.info("initialised from %s (fresh: %s)", path, sorted({k.split(".")[0] for k in missing}) or "none")


def _trained(joint: nn.Module, train_only: tuple[str, ...]) -> list[nn.Parameter]:
    """The parameters the optimiser updates (all, or those under ``train_only``); the others are frozen."""
    if not train_only:
        return list(joint.parameters())
    chosen = []
    for name, p in joint.named_parameters():
        p.requires_grad_(any(name.startswith(t + ".") for t in train_only))
        if p.requires_grad:
            chosen.append(p)
    if not chosen:
        raise ConfigError(f"optim.train_only {list(train_only)}: no parameters under those module names")
    return chosen


def _train_mode(joint: nn.Module, train_only: tuple[str, ...]) -> None:
    """Training mode for what trains; frozen modules stay in eval mode (their batch norm statistics too)."""
    if not train_only:
        joint.train()
        return
    joint.eval()
    for name, module in joint.named_modules():
        if name in train_only:
            module.train()


def _plot(history: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    losses = [h for h in history if "total" in h]
    evals = [h for h in history if "map25_frame" in h]
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5), dpi=100)
    for key in ("total", "cls", "centerness", "corners", "occupancy", "affinity", "grounding", "pixel"):
        if any(key in h for h in losses):
            a.plot([h["step"] for h in losses if key in h], [h[key] for h in losses if key in h], label=key)
    a.set_yscale("log")
    a.set_xlabel("step")
    a.set_title("training losses")
    a.legend(fontsize=8)
    for key, label in (("map25_frame", "mAP@0.25 per frame"), ("map25_scene", "mAP@0.25 accumulated"),
                       ("miou", "occupancy mIoU (whole grid)"), ("miou_view", "occupancy mIoU (in view)"),
                       ("grounding_acc", "grounding head top-1"), ("pixel_miou", "pixel head IoU")):
        b.plot([h["step"] for h in evals if key in h], [h[key] for h in evals if key in h], "o-", label=label)
    b.set_ylim(0, 1)
    b.set_xlabel("step")
    b.set_title("held-out scenes")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _check_vocabulary(config: TrainConfig) -> None:
    world_classes = synthetic_model()
    if (config.model.classes, config.model.occupancy_classes) != (world_classes.classes,
                                                                 world_classes.occupancy_classes):
        raise ConfigError("model.classes and model.occupancy_classes must be the synthetic world's "
                          "(training labels are indices into them; synthetic/classes.py)")


def _optimiser(joint: _Joint, config: TrainConfig) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW over the trained parameters and its warm-up + cosine schedule."""
    optimiser = torch.optim.AdamW(_trained(joint, config.optim.train_only), lr=config.optim.lr,
                                  weight_decay=config.optim.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser, lambda s: _lr_factor(s, config.optim.warmup_steps, config.optim.steps))
    return optimiser, schedule


def _resume(path: Path, joint: _Joint, optimiser: torch.optim.Optimizer, schedule: Any) -> tuple[int, list]:
    """Load a checkpoint into the model, optimiser and schedule: (step reached, history so far)."""
    blob = torch.load(path, map_location="cpu", weights_only=False)
    joint.load_state_dict(blob["model"])
    optimiser.load_state_dict(blob["optimiser"])
    schedule.load_state_dict(blob["schedule"])
    log.info("resumed %s at step %d", path.parent, int(blob["step"]))
    return int(blob["step"]), list(blob["history"])


def _window_means(window: list[dict[str, float]], grounding: bool) -> dict[str, float]:
    """Mean losses over the steps since the last log line (and the grounding head's accuracy)."""
    mean = {key: float(np.mean([w[key] for w in window])) for key in window[0] if not key.startswith("ground_")}
    if grounding:
        total = sum(w["ground_total"] for w in window)
        mean["ground_acc"] = sum(w["ground_correct"] for w in window) / total if total else float("nan")
    return mean


def _held_out(done: int, model: EmbodiedPerceptron, head: GroundingHead | None, encoder: object | None,
              config: TrainConfig, pixels_only: bool) -> dict[str, Any]:
    """The held-out scenes' metrics at step ``done``: the pixel head's IoU alone when only it trains."""
    if pixels_only:
        ious = evaluate_pixel_head(model.eval(), config)  # the rest is frozen: its metrics cannot move
        log.info("step %d: pixel head IoU %.3f (%s)", done, ious["mean"],
                 ", ".join(f"{k} {v:.2f}" for k, v in ious.items() if k != "mean"))
        return {"step": done, "pixel_miou": ious["mean"],
                **{f"pixel_iou_{k}": v for k, v in ious.items() if k != "mean"}}
    result = evaluate(torch_runner(model.eval()), config.model, config.data)
    record = {"step": done, "map25_frame": result.per_frame.mean_ap[0.25],
              "map25_scene": result.accumulated.mean_ap[0.25], "miou": result.occupancy.miou,
              "miou_view": result.occupancy_in_view.miou, "miou_map": result.occupancy_map.miou,
              "miou_map_grid": result.occupancy_map_grid.miou,
              "map50_scene": result.accumulated.mean_ap[0.5]}
    if head is not None and encoder is not None:
        record["grounding_acc"] = evaluate_grounding_head(model, head.eval(), config, encoder)
    log.info("step %d: %s", done, result.summary())
    return record


def _checkpoint(out_dir: Path, joint: _Joint, optimiser: torch.optim.Optimizer, schedule: Any, done: int,
                history: list[dict[str, Any]]) -> None:
    """Write the checkpoint atomically (a crash mid-write keeps the last one) and the history."""
    tmp = out_dir / (CHECKPOINT + ".tmp")
    torch.save({"model": joint.state_dict(), "optimiser": optimiser.state_dict(),
                "schedule": schedule.state_dict(), "step": done, "history": history}, tmp)
    tmp.replace(out_dir / CHECKPOINT)
    (out_dir / HISTORY).write_text(json.dumps(history, indent=1))


def _accumulated_losses(ddp: nn.Module, samples: list[TrainingSample], rng: np.random.Generator, config: TrainConfig,
                        coarse: torch.Tensor, pixels_only: bool, distributed: bool) -> list[dict[str, float]]:
    """Backward passes over ``config.optim.accumulate`` random samples (gradients synced on the last only)."""
    losses_per_sample = []
    for k in range(config.optim.accumulate):
        sample = samples[int(rng.integers(len(samples)))]
        last = k == config.optim.accumulate - 1
        context = ddp.no_sync() if distributed and not last else contextlib.nullcontext()
        with context:
            losses = _sample_loss(ddp, sample, config, coarse, pixels_only)
            (losses["total"] / config.optim.accumulate).backward()
        losses_per_sample.append({key: float(v.detach()) for key, v in losses.items()})
    return losses_per_sample


def train(config: TrainConfig, out_dir: Path, resume: bool = False, progress: bool = True) -> TrainResult | None:
    """Train (or resume) a run in ``out_dir``; returns the result on rank 0, None on other ranks."""
    import time

    from tqdm import tqdm

    _check_vocabulary(config)
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
    head = GroundingHead(head_config(config)) if config.data.prompts_per_sample > 0 else None
    joint = _Joint(model, head)
    resuming = resume and (out_dir / CHECKPOINT).is_file()
    if config.init_weights and not resuming:
        _initialise(joint, Path(config.init_weights))
    train_only = config.optim.train_only
    pixels_only = bool(train_only) and all(t == "perceptron.pixel_head" for t in train_only)
    optimiser, schedule = _optimiser(joint, config)
    start, history = _resume(out_dir / CHECKPOINT, joint, optimiser, schedule) if resuming else (0, [])
    # find_unused_parameters: the head gets no gradient from a keyframe without prompts.
    ddp = torch.nn.parallel.DistributedDataParallel(joint, find_unused_parameters=True) if distributed else joint
    encoder = _text_encoder() if head is not None and not pixels_only else None

    seeds = range(*config.data.train_seeds)[rank::world]
    samples = generate_samples(seeds, config.model, config.data, config.data.frames_per_scene,
                               progress=progress and rank == 0, encoder=encoder)
    coarse = torch.from_numpy(config.model.box_voxel_centres())
    t0 = time.perf_counter()
    window: list[dict[str, float]] = []
    bar = tqdm(range(start, config.optim.steps), initial=start, total=config.optim.steps, unit="step",
               desc="training", disable=not progress or rank != 0)
    for step in bar:
        _train_mode(joint, train_only)
        optimiser.zero_grad()
        window += _accumulated_losses(ddp, samples, rng, config, coarse, pixels_only, distributed)
        torch.nn.utils.clip_grad_norm_(joint.parameters(), config.optim.grad_clip)
        optimiser.step()
        schedule.step()
        done = step + 1
        if done % config.log_every == 0 or done == config.optim.steps:
            mean = _window_means(window, grounding=head is not None and not pixels_only)
            history.append({"step": done, "lr": schedule.get_last_lr()[0], **mean})
            bar.set_postfix(loss=f"{mean['total']:.3f}")
            window = []
        if rank == 0 and (done % config.eval_every == 0 or done == config.optim.steps):
            history.append(_held_out(done, model, head, encoder, config, pixels_only))
        if rank == 0 and (done % config.checkpoint_every == 0 or done == config.optim.steps):
            _checkpoint(out_dir, joint, optimiser, schedule, done, history)
        if distributed:
            torch.distributed.barrier()
    seconds = time.perf_counter() - t0
    if distributed:
        torch.distributed.destroy_process_group()
    if rank != 0:
        return None
    weights = out_dir / WEIGHTS
    save_weights(model, config, weights, extra={"steps": config.optim.steps, "train_seconds": seconds}, head=head)
    (out_dir / HISTORY).write_text(json.dumps(history, indent=1))
    _plot(history, out_dir / PLOT)
    return TrainResult(config.optim.steps, weights, history, seconds)
