"""Running the model over a split: the data loader, predictions (loss and probabilities), and the
per-epoch validation whose point metrics progress.json reports for successive halving."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from . import runtime
from .config import TrainConfig
from .dataset import CtXrayDataset, EpochSampler
from .metrics import point_metrics


def loader(
    dataset: CtXrayDataset,
    sampler: EpochSampler,
    cfg: TrainConfig,
    rt: runtime.Runtime,
    train: bool,
) -> DataLoader:
    """Batches of dataset in sampler's order; training drops the last partial batch."""
    return DataLoader(
        dataset,
        batch_size=cfg.batch_size,
        sampler=sampler,
        num_workers=cfg.workers,
        pin_memory=rt.device.type == "cuda",
        drop_last=train,
        prefetch_factor=4 if cfg.workers else None,
    )


@torch.no_grad()
def predict(
    model: nn.Module,
    dataset: CtXrayDataset,
    cfg: TrainConfig,
    rt: runtime.Runtime,
    loss_fn: nn.Module,
) -> tuple[float, np.ndarray]:
    """Mean loss and positive-class probabilities of every sample, in dataset order."""
    model.eval()
    sampler = EpochSampler(len(dataset), cfg.seed, 0, shuffle=False)
    fmt = runtime.memory_format(rt, cfg.dims)
    total, probs = 0.0, []
    for x, y, _ in loader(dataset, sampler, cfg, rt, train=False):
        x = x.to(rt.device, non_blocking=True).contiguous(memory_format=fmt)
        with runtime.autocast(rt):
            logits = model(x).float()
        total += float(loss_fn(logits, y.to(rt.device))) * len(y)
        probs.append(torch.softmax(logits, dim=1)[:, 1].cpu().numpy())
    return total / len(dataset), np.concatenate(probs).astype(np.float64)


def validate(
    model: nn.Module,
    dataset: CtXrayDataset,
    cfg: TrainConfig,
    rt: runtime.Runtime,
    loss_fn: nn.Module,
) -> tuple[float, dict[str, float | None]]:
    """One epoch's validation: the mean loss on every rank (rank 0 computes it, the others act on
    it too: early stopping, the best weights) and the slice-level point metrics, without
    bootstrap. The metrics are rank 0's alone, the only rank that writes progress, checkpoints
    and metrics.json; the other ranks get an empty dict rather than a second broadcast."""
    loss = 0.0
    values: dict[str, float | None] = {}
    if rt.main:
        loss, probs = predict(model, dataset, cfg, rt, loss_fn)
        values = point_metrics(np.array([i.label for i in dataset.items]), probs)
    return runtime.broadcast_float(loss, rt), values
