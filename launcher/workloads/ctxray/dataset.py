"""Splits by patient, the torch Dataset, and a resumable, shardable epoch sampler."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from .config import TrainConfig, UsageError
from .preprocess import augment, prepare, sample_generator
from .sources import Item, read


@dataclass
class Splits:
    """Samples to train on, to validate (early stopping) on, and to report metrics on."""

    train: list[Item]
    val: list[Item]
    test: list[Item]

    @property
    def evaluated_on(self) -> str:
        """Which split metrics.json describes."""
        return "test" if self.test else "val"


def _patient_folds(items: list[Item], folds: int, seed: int) -> dict[str, int]:
    """Assign each patient a fold, stratified by label: patients of a class are dealt round-robin
    after a seeded shuffle, so every fold gets both classes and no patient spans two folds."""
    labels: dict[str, int] = {}
    for item in items:
        labels.setdefault(item.patient, item.label)
    rng = np.random.default_rng(seed)
    assignment: dict[str, int] = {}
    for label in (0, 1):
        patients = sorted(p for p, y in labels.items() if y == label)
        for position, patient in enumerate(rng.permutation(patients)):
            assignment[str(patient)] = position % folds
    return assignment


def make_splits(items: list[Item], cfg: TrainConfig) -> Splits:
    """Split by patient: the data's own train/val/test, else fold `fold` of `folds` (or a holdout
    of val_fraction when folds is 1) for validation. Raises UsageError for one-class data."""
    given = {split: [i for i in items if i.split == split] for split in ("train", "val", "test")}
    pool, test = (given["train"], given["test"]) if given["train"] else (items, [])
    if given["val"] and cfg.folds == 1:
        train, val = given["train"], given["val"]
    else:
        if given["val"]:
            pool = pool + given["val"]
        folds = cfg.folds if cfg.folds > 1 else max(2, round(1 / cfg.val_fraction))
        assignment = _patient_folds(pool, folds, cfg.seed)
        val = [i for i in pool if assignment[i.patient] == cfg.fold]
        train = [i for i in pool if assignment[i.patient] != cfg.fold]
    for name, split in (("training", train), ("validation", val)):
        present = {i.label for i in split}
        if present != {0, 1}:
            raise UsageError(
                f"the {name} split has only class {sorted(present) or 'none'}: "
                "need samples (and patients) of both classes"
            )
    return Splits(train=train, val=val, test=test)


def class_weights(items: list[Item]) -> torch.Tensor:
    """Inverse-frequency weights (n / (2 n_c)) for the class-weighted cross-entropy."""
    counts = np.bincount([i.label for i in items], minlength=2).astype(np.float64)
    return torch.tensor(len(items) / (2.0 * counts), dtype=torch.float32)


class CtXrayDataset(Dataset):
    """Reads, preprocesses and (when training) augments samples. Keys are (epoch, index) pairs
    from EpochSampler so augmentation is reproducible in any worker process."""

    def __init__(
        self, items: list[Item], cfg: TrainConfig, train: bool, cache: bool = False
    ) -> None:
        self.items = items
        self.cfg = cfg
        self.train = train
        self.cache: dict[int, torch.Tensor] | None = {} if cache else None

    def __len__(self) -> int:
        return len(self.items)

    def prepared(self, index: int) -> torch.Tensor:
        """The deterministic part (read, window, crop, resize, normalise), cached if asked."""
        if self.cache is not None and index in self.cache:
            return self.cache[index]
        item = self.items[index]
        x = prepare(read(item), item.is_ct, self.cfg.size, self.cfg.window, self.cfg.lung_crop)
        if self.cache is not None:
            self.cache[index] = x
        return x

    def __getitem__(self, key: tuple[int, int] | int) -> tuple[torch.Tensor, int, int]:
        epoch, index = key if isinstance(key, tuple) else (0, key)
        x = self.prepared(index)
        if self.train and self.cfg.augment:
            x = augment(x, sample_generator(self.cfg.seed, epoch, index))
        return x, self.items[index].label, index


class EpochSampler(Sampler):
    """Yields (epoch, index) for one epoch: a permutation seeded by (seed, epoch), this rank's
    share of it (every rank gets the same count), starting at sample `start` (for resuming)."""

    def __init__(
        self,
        n: int,
        seed: int,
        epoch: int,
        shuffle: bool = True,
        start: int = 0,
        rank: int = 0,
        world: int = 1,
    ) -> None:
        self.n, self.seed, self.epoch, self.shuffle = n, seed, epoch, shuffle
        self.start, self.rank, self.world = start, rank, world

    def indices(self) -> list[int]:
        """This rank's whole epoch, before skipping `start`."""
        if self.shuffle:
            order = torch.randperm(
                self.n, generator=torch.Generator().manual_seed(self.seed * 7919 + self.epoch)
            )
        else:
            order = torch.arange(self.n)
        ids: list[int] = order.tolist()
        per_rank = -(-self.n // self.world)
        ids += ids[: per_rank * self.world - self.n]  # pad so ranks stay in step
        return ids[self.rank :: self.world]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter([(self.epoch, i) for i in self.indices()[self.start :]])

    def __len__(self) -> int:
        return max(0, -(-self.n // self.world) - self.start)
