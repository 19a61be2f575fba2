"""The training loop: ``train(config) -> TrainResult``, with checkpoints, resume, early stopping,
progress and the final metrics. The command line is a thin layer over this function."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from . import checkpoint as ckpt
from . import runtime
from .config import EXIT_PREEMPTED, TrainConfig, UsageError
from .dataset import CtXrayDataset, EpochSampler, Splits, class_weights, make_splits
from .evaluation import loader, predict, validate
from .fingerprint import data_fingerprint
from .metrics import full_report
from .models import build_model
from .progress import Progress
from .sources import discover

METRICS_FILE = "metrics.json"
CACHE_LIMIT_BYTES = 2 * 1024**3  # cache preprocessed samples in memory below this size


@dataclass
class LoopState:
    """Where training stands; saved in every checkpoint so a resume continues exactly."""

    epoch: int = 0  # current (0-based) epoch
    step: int = 0  # steps finished in the current epoch
    loss_sum: float = 0.0  # over the current epoch's finished steps
    best_loss: float = math.inf
    best_epoch: int = -1
    bad_epochs: int = 0
    finished: bool = False
    stopped_early: bool = False
    history: list[dict] = field(default_factory=list)


@dataclass
class TrainResult:
    """What a run ended with. status: succeeded | preempted."""

    status: str
    exit_code: int
    epochs_run: int
    best_epoch: int
    metrics: dict | None
    out: str


@dataclass
class Run:
    """Everything the loop touches, built once per process."""

    cfg: TrainConfig
    rt: runtime.Runtime
    splits: Splits
    classes: tuple[str, str]
    model: nn.Module  # the plain module: state dicts, evaluation
    runner: nn.Module  # what training steps call (maybe DDP-wrapped and compiled)
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.StepLR
    loss_fn: nn.Module
    train_set: CtXrayDataset
    state: LoopState
    progress: Progress

    @property
    def steps_per_epoch(self) -> int:
        """Full batches per epoch on each rank (the last partial batch is dropped)."""
        per_rank = -(-len(self.splits.train) // self.rt.world)
        return per_rank // self.cfg.batch_size


def _cache_ok(cfg: TrainConfig, n: int) -> bool:
    return cfg.workers == 0 and n * 4 * cfg.size**cfg.dims < CACHE_LIMIT_BYTES


def _build(cfg: TrainConfig, rt: runtime.Runtime) -> Run:
    index = discover(cfg.data, cfg.dims, cfg.slices)
    splits = make_splits(index.items, cfg)
    if -(-len(splits.train) // rt.world) < cfg.batch_size:
        raise UsageError(
            f"only {len(splits.train)} training samples: fewer than --batch-size {cfg.batch_size}"
        )
    runtime.seed_everything(cfg.seed)
    model = build_model(cfg.model, cfg.dims, 1, 2, cfg.pretrained)
    runner = runtime.wrap(model, rt, cfg.dims)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, amsgrad=True
    )
    scheduler = torch.optim.lr_scheduler.StepLR(
        optimizer, step_size=cfg.lr_step, gamma=cfg.lr_gamma
    )
    loss_fn = nn.CrossEntropyLoss(weight=class_weights(splits.train).to(rt.device))
    train_set = CtXrayDataset(
        splits.train, cfg, train=True, cache=_cache_ok(cfg, len(splits.train))
    )
    run = Run(
        cfg,
        rt,
        splits,
        index.classes,
        model,
        runner,
        optimizer,
        scheduler,
        loss_fn,
        train_set,
        LoopState(),
        Progress(cfg.out, cfg.epochs, 0, cfg.batch_size * rt.world, rt.main, world_size=rt.world),
    )
    run.progress.steps_per_epoch = run.steps_per_epoch
    return run


def _checkpoint_state(run: Run) -> dict:
    return {
        "version": 1,
        "model": run.model.state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(),
        "loop": dataclasses.asdict(run.state),
        "rng": ckpt.rng_state(),
        "config": run.cfg.to_dict(),
        "classes": list(run.classes),
    }


def _save(run: Run) -> None:
    if run.rt.main:
        ckpt.save(os.path.join(run.cfg.out, ckpt.CHECKPOINT), _checkpoint_state(run))


def _restore(run: Run, path: str) -> None:
    saved = ckpt.load(path)
    now, then = run.cfg.to_dict(), saved["config"]
    changed = [
        k for k in now if k not in TrainConfig.RESUME_FREE and _norm(now[k]) != _norm(then.get(k))
    ]
    if changed:
        k = changed[0]
        raise UsageError(
            f"cannot resume: the checkpoint was made with {k}={then.get(k)!r}, now {now[k]!r}"
        )
    run.model.load_state_dict(saved["model"])
    run.optimizer.load_state_dict(saved["optimizer"])
    run.scheduler.load_state_dict(saved["scheduler"])
    run.state = LoopState(**saved["loop"])
    run.progress.epochs_done(run.state.history)  # a resumed run reports its earlier epochs too
    ckpt.set_rng_state(saved["rng"])


def _norm(value: object) -> object:
    return list(value) if isinstance(value, tuple) else value


def _train_epoch(run: Run, stop: ckpt.StopFlag) -> bool:
    """Run the rest of the current epoch; False if a signal stopped it (after a whole step)."""
    cfg, rt, state = run.cfg, run.rt, run.state
    sampler = EpochSampler(
        len(run.train_set),
        cfg.seed,
        state.epoch,
        True,
        state.step * cfg.batch_size,
        rt.rank,
        rt.world,
    )
    run.runner.train()
    fmt = runtime.memory_format(rt, cfg.dims)
    loss_sum = torch.tensor(state.loss_sum, dtype=torch.float64, device=rt.device)
    run.progress.epoch_started()
    for x, y, _ in loader(run.train_set, sampler, cfg, rt, train=True):
        x = x.to(rt.device, non_blocking=True).contiguous(memory_format=fmt)
        y = y.to(rt.device, non_blocking=True)
        with runtime.autocast(rt):
            logits = run.runner(x)
        loss = run.loss_fn(logits.float(), y)
        run.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        run.optimizer.step()
        loss_sum += loss.detach().double()
        state.step += 1
        run.progress.step_done()
        # At least five reports an epoch, so a short epoch shows its steps as they finish (the
        # page read 0% through all of epoch 1 of the default job: 15 steps, one report per 10).
        every = min(cfg.progress_every, max(1, run.steps_per_epoch // 5))
        state.loss_sum = float(loss_sum) if (state.step % every == 0 or stop) else state.loss_sum
        if state.step % every == 0:
            run.progress.write("running", state.epoch, state.step, state.loss_sum / state.step)
        if runtime.agree(bool(stop), rt) and state.step < run.steps_per_epoch:
            state.loss_sum = float(loss_sum)
            return False
    state.loss_sum = float(loss_sum)
    return True


def _end_epoch(run: Run, val_set: CtXrayDataset) -> None:
    """Validate (rank 0), update early stopping and the best weights, step the LR schedule."""
    cfg, state = run.cfg, run.state
    run.progress.write("validating", state.epoch, state.step, state.loss_sum / max(state.step, 1))
    val_loss, val = validate(run.model, val_set, cfg, run.rt, run.loss_fn)
    state.history.append(
        {
            "epoch": state.epoch + 1,
            "train_loss": state.loss_sum / max(state.step, 1),
            "val_loss": val_loss,
            "val": val,
            "lr": run.optimizer.param_groups[0]["lr"],
        }
    )
    run.progress.epochs_done(state.history)
    if val_loss < state.best_loss or state.best_epoch < 0:
        state.best_loss, state.best_epoch, state.bad_epochs = val_loss, state.epoch, 0
        if run.rt.main:
            ckpt.save(
                os.path.join(cfg.out, ckpt.BEST),
                {"model": run.model.state_dict(), "epoch": state.epoch},
            )
    else:
        state.bad_epochs += 1
    run.scheduler.step()
    state.epoch, state.step, state.loss_sum = state.epoch + 1, 0, 0.0
    state.stopped_early = state.bad_epochs >= cfg.patience and state.epoch < cfg.epochs
    state.finished = state.epoch >= cfg.epochs or state.stopped_early
    _save(run)


def _evaluate(run: Run) -> dict:
    """metrics.json: the best epoch's model on the test split (else validation), per slice and
    per patient, with the run's settings and history."""
    cfg, splits = run.cfg, run.splits
    best = ckpt.load(os.path.join(cfg.out, ckpt.BEST))
    run.model.load_state_dict(best["model"])
    items = splits.test or splits.val
    loss, probs = predict(
        run.model, CtXrayDataset(items, cfg, train=False), cfg, run.rt, run.loss_fn
    )
    labels = np.array([i.label for i in items])
    report = full_report(
        labels, probs, [i.patient for i in items], resamples=cfg.bootstrap, seed=cfg.seed
    )
    report.update(
        {
            "evaluated_on": splits.evaluated_on,
            "loss": loss,
            "model": cfg.model,
            "classes": list(run.classes),
            "samples": {
                "train": len(splits.train),
                "val": len(splits.val),
                "test": len(splits.test),
            },
            "best_epoch": run.state.best_epoch + 1,
            "epochs_run": run.state.epoch,
            "stopped_early": run.state.stopped_early,
            "history": run.state.history,
            "runtime": run.rt.flags(),
            "config": run.cfg.to_dict(),
            "synthetic_data": _is_synthetic(cfg.data),
            "measured": run.progress.measured(run.rt.device),
            "seed": cfg.seed,
            "data_fingerprint": data_fingerprint(
                cfg.data, [*splits.train, *splits.val, *splits.test]
            ),
        }
    )
    ckpt.write_json(os.path.join(cfg.out, METRICS_FILE), report)
    return report


def _is_synthetic(data: str) -> bool:
    path = os.path.join(data, "dataset.json")
    if not os.path.isfile(path):
        return False
    with open(path) as f:
        return bool(json.load(f).get("synthetic", False))


def _start(run: Run) -> None:
    path = os.path.join(run.cfg.out, ckpt.CHECKPOINT)
    if os.path.exists(path) and not run.cfg.resume:
        raise UsageError(
            f"{run.cfg.out} already holds a checkpoint: pass --resume, or choose another --out"
        )
    if os.path.exists(path):
        _restore(run, path)
        if run.rt.main:  # the job's log says that this attempt continued rather than restarted
            print(
                f"resumed from the checkpoint in {run.cfg.out} at epoch {run.state.epoch + 1} of "
                f"{run.cfg.epochs}, step {run.state.step}",
                file=sys.stderr,
                flush=True,
            )


def train(cfg: TrainConfig) -> TrainResult:
    """Train (or, with cfg.resume, continue) one run and write OUT/metrics.json.

    Guarantees: a checkpoint after every epoch and when SIGTERM/SIGUSR1 arrives (then status
    "preempted", exit_code EXIT_PREEMPTED); in deterministic mode a resumed run ends with the same
    weights and metrics as an uninterrupted one. Raises UsageError for bad settings or data.
    """
    cfg.validate()
    os.makedirs(cfg.out, exist_ok=True)
    rt = runtime.setup(cfg)
    try:
        run = _build(cfg, rt)
        _start(run)
        return _loop(run)
    finally:
        runtime.teardown(rt)


def _loop(run: Run) -> TrainResult:
    state, cfg = run.state, run.cfg
    val_set = CtXrayDataset(
        run.splits.val, cfg, train=False, cache=_cache_ok(cfg, len(run.splits.val))
    )
    run.progress.write("running", state.epoch, state.step, None)
    with ckpt.StopFlag() as stop:
        while not state.finished:
            if not _train_epoch(run, stop):
                _save(run)
                run.progress.write(
                    "preempted", state.epoch, state.step, state.loss_sum / max(state.step, 1)
                )
                return TrainResult(
                    "preempted", EXIT_PREEMPTED, state.epoch, state.best_epoch + 1, None, cfg.out
                )
            _end_epoch(run, val_set)
            run.progress.write(
                "running",
                state.epoch - 1,
                run.steps_per_epoch,
                state.history[-1]["train_loss"],
                val_loss=state.history[-1]["val_loss"],
            )
            if runtime.agree(bool(stop), run.rt) and not state.finished:
                run.progress.write("preempted", state.epoch, 0, None)
                return TrainResult(
                    "preempted", EXIT_PREEMPTED, state.epoch, state.best_epoch + 1, None, cfg.out
                )
    metrics = _evaluate(run) if run.rt.main else None
    run.progress.write(
        "succeeded",
        state.epoch - 1,
        run.steps_per_epoch,
        state.history[-1]["train_loss"],
        val_loss=state.history[-1]["val_loss"],
        stopped_early=state.stopped_early,
    )
    return TrainResult("succeeded", 0, state.epoch, state.best_epoch + 1, metrics, cfg.out)
