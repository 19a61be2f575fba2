"""The launch parameters' one home: every `ctxray train` parameter a job or a sweep may set, with
its type and bounds, the GPU, wall-time and concurrency bounds, the defaults of the launch and
sweep forms, and the rules that only hold in combination (fewer training samples than the batch
size, more folds than patients of a class). The API serializers, the browser forms and the launch
services all read this module, so a bad combination is a per-field 400 (or form error) at launch,
never an exit code 2 in a job's log.

The rules are plain functions returning {field: message}; only ParamsError, the refusal in the
domain's vocabulary (core.errors), comes from the portal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from core.errors import Invalid
from launcher.workloads.ctxray.config import TrainConfig


@dataclass(frozen=True)
class Param:
    """One train parameter: its Python type, bounds (inclusive) or choices, and whether a single
    job may set it (`job`) or only a sweep's `fixed` block."""

    kind: type
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    job: bool = True
    help: str = ""

    @property
    def bounds(self) -> tuple[float, float]:
        """(low, high) of a bounded parameter."""
        if self.low is None or self.high is None:
            raise ValueError("a parameter without bounds")
        return self.low, self.high

    @property
    def int_low(self) -> int | None:
        """`low` of an int parameter, typed as one (their bounds are whole numbers)."""
        return None if self.low is None else int(self.low)

    @property
    def int_high(self) -> int | None:
        """`high` of an int parameter, typed as one."""
        return None if self.high is None else int(self.high)


class SweepGrid(Protocol):
    """What `check_sweep` reads of a validated grid (sweepgrid.GridSpec)."""

    @property
    def folds(self) -> int: ...

    @property
    def fixed(self) -> dict[str, Any]: ...


#: The models a job or a sweep may train (the workload's own, by name).
MODELS = ("densenet121", "densenet161", "densenet169", "densenet201", "resnet18", "resnet50")
GPUS = (1, 64)
WALL_TIME_MINUTES = (1, 7 * 24 * 60)
CONCURRENCY = (1, 1000)
#: Synthetic datasets by name, with the `ctxray synth --modality` each makes.
SYNTHETIC = {"synthetic-ct": "ct", "synthetic-xray": "xray"}
#: Images per synthetic patient (`ctxray synth --per-patient`'s default, which bundles use).
SYNTH_PER_PATIENT = 3

PARAMS: dict[str, Param] = {
    "model": Param(str, choices=MODELS),
    "epochs": Param(int, 1, 500),
    "synthetic_n": Param(int, 8, 5000, help="Images in the synthetic set (3 per patient)."),
    "size": Param(int, 16, 512, help="Input size in pixels (images are resized to size x size)."),
    "dims": Param(int, choices=(2, 3)),
    "lr": Param(float, 1e-7, 1.0),
    "lr_step": Param(int, 1, 500),
    "weight_decay": Param(float, 0, 0.99),
    "batch_size": Param(int, 2, 4096, help="At least 2: batch norm needs two samples."),
    "patience": Param(int, 1, 500),
    "folds": Param(int, 1, 20),
    "fold": Param(int, 0, 19),
    "seed": Param(int, 0, 2**31 - 1),
    "threads": Param(int, 1, 256),
    "bootstrap": Param(int, 10, 10000),
    "progress_every": Param(int, 1, 10000),
    "deterministic": Param(bool),
    "augment": Param(bool),
    # Only in a sweep's `fixed` block (sweepgrid.FIXED_ALLOWED).
    "slices": Param(int, 0, 4096, job=False),
    "window": Param(str, job=False, help="CT LEVEL,WIDTH in HU, e.g. -500,1500."),
    "lr_gamma": Param(float, 1e-6, 1.0, job=False),
    "lung_crop": Param(bool, job=False),
    "workers": Param(int, 0, 64, job=False),
}

#: The default job on any facility: a synthetic CT set large enough to learn (measured on the
#: 2-core development VM: docs/workload.md, "The default launch").
DEFAULT_JOB: dict[str, Any] = {
    "model": "densenet121",
    "dataset": "synthetic-ct",
    "synthetic_n": 300,
    "size": 64,
    "epochs": 8,
    "batch_size": 16,
    "lr": 1e-3,
}
DEFAULT_GPUS = 1
#: The seed a job trains with unless it names one; every job records its seed in its params, so
#: "Run again" reproduces it.
DEFAULT_SEED = 0
#: The wall time a launch gets when it names none and nothing can be predicted (no node type, a
#: dataset of unknown size). With a prediction, the default is the predicted run time times
#: WALL_TIME_MARGIN, rounded up to whole minutes and at least WALL_TIME_FLOOR_MINUTES
#: (launcher/estimates.py: default_wall_time): a loaded machine or a cold start still finishes,
#: and a run that hangs is stopped long before an hour of a trial is gone.
DEFAULT_WALL_TIME_MINUTES = 60
WALL_TIME_MARGIN = 3
WALL_TIME_FLOOR_MINUTES = 30
#: The sweep form's default grid: 2 learning rates x 3 folds of the default job's model and data.
DEFAULT_SWEEP_GRID: dict[str, Any] = {
    "models": ["densenet121"],
    "lrs": [1e-3, 1e-4],
    "lr_steps": [5],
    "weight_decays": [1e-4],
    "folds": 3,
    "fixed": {"epochs": 6, "size": 64, "batch_size": 16},
}
DEFAULT_SWEEP_PARAMS: dict[str, Any] = {"dataset": "synthetic-ct", "synthetic_n": 300}
DEFAULT_CONCURRENCY = 2


class ParamsError(Invalid, ValueError):
    """Parameters that cannot run together (HTTP 400); `errors` maps each field to what is wrong
    with it. The body places them where the request has them: a job's under `params`; a
    sweep's (`sweep=True`) `folds` and `fixed.<name>` under `grid`, the rest under `params`."""

    def __init__(self, errors: Mapping[str, str], *, sweep: bool = False) -> None:
        self.errors = dict(errors)
        super().__init__({_placed(k, sweep): [v] for k, v in self.errors.items()})

    def __str__(self) -> str:
        return "; ".join(f"{k}: {v}" for k, v in self.errors.items())


def _placed(key: str, sweep: bool) -> str:
    return (
        f"grid.{key}" if sweep and (key == "folds" or key.startswith("fixed.")) else f"params.{key}"
    )


def with_defaults(params: Mapping[str, Any]) -> dict[str, Any]:
    """A job's params with the default job's values where it gave none: all of them for a
    synthetic set (so an empty launch is the default job), the model and epochs otherwise; the
    seed always, so every job records the seed it trained with."""
    if params.get("dataset", DEFAULT_JOB["dataset"]) in SYNTHETIC:
        return {**DEFAULT_JOB, "seed": DEFAULT_SEED, **params}
    return {**{k: DEFAULT_JOB[k] for k in ("model", "epochs")}, "seed": DEFAULT_SEED, **params}


def synthetic_patients(n: int) -> tuple[int, int]:
    """(negative, positive) patients of a synthetic set of n images (as `ctxray synth` deals them)."""
    patients = max(2, math.ceil(n / SYNTH_PER_PATIENT))
    return patients - patients // 2, patients // 2


def _defaults() -> TrainConfig:
    return TrainConfig(data="", out="")


def combination_errors(
    params: Mapping[str, Any], *, gpus: int = 1, folds: int | None = None
) -> dict[str, str]:
    """What is wrong with these parameters together, field by field (empty when they can run).

    `folds` is a sweep's fold count (every fold 0..folds-1 will run); a single job's come from
    its params. Only a synthetic set's size is known here; a dataset on disk is checked by the
    trainer itself.
    """
    errors: dict[str, str] = {}
    d = _defaults()
    folds = folds if folds is not None else int(params.get("folds") or 1)
    fold = params.get("fold")
    if fold is not None and fold >= folds:
        errors["fold"] = f"Must be below folds ({folds})."
    synthetic = params.get("dataset", "synthetic-ct") in SYNTHETIC
    if synthetic and int(params.get("dims") or 2) == 3:
        errors["dims"] = "The synthetic sets are 2D slices; 3D needs a dataset of volumes."
    if not synthetic:
        return errors
    n = int(params.get("synthetic_n") or DEFAULT_JOB["synthetic_n"])
    negative, positive = synthetic_patients(n)
    fewest = min(negative, positive)
    # Validation takes one fold (or a 1/val_fraction holdout for a single split); patients of
    # each class are dealt round-robin, so every fold needs one of each, and training at least one.
    split = folds if folds > 1 else max(2, round(1 / d.val_fraction))
    if folds > 1 and fewest < folds:
        errors["folds"] = (
            f"{folds} folds need at least {folds} patients of each class; "
            f"{n} synthetic images make {fewest}."
        )
    elif fewest < 2:
        errors["synthetic_n"] = (
            f"{n} synthetic images make {fewest} patient(s) of a class; "
            "training and validation need at least 2 of each."
        )
    batch = int(params.get("batch_size") or d.batch_size)
    held_out = SYNTH_PER_PATIENT * (math.ceil(negative / split) + math.ceil(positive / split))
    train_per_gpu = max(n - held_out, 0) // max(gpus, 1)
    if train_per_gpu < batch and not {"folds", "synthetic_n"} & set(errors):
        errors["batch_size"] = (
            f"Only about {train_per_gpu} training images per GPU ({n} synthetic images less the "
            f"validation fold, over {gpus} GPU{'s' if gpus != 1 else ''}): use a batch size of at "
            f"most {max(train_per_gpu, 2)}, or more synthetic images."
        )
    return errors


def check_job(params: Mapping[str, Any], *, gpus: int) -> None:
    """Raise ParamsError when a single job's parameters cannot run together."""
    errors = combination_errors(params, gpus=gpus)
    if errors:
        raise ParamsError(errors)


def check_sweep(params: Mapping[str, Any], grid: SweepGrid, *, gpus: int) -> None:
    """Raise ParamsError when a sweep's cells cannot run: its shared params with the grid's
    `fixed` arguments, over every fold. Keys are `folds` and `fixed.<name>` for the grid's
    fields, the parameter's name otherwise."""
    merged = {**params, **grid.fixed}
    errors = combination_errors(merged, gpus=gpus, folds=grid.folds)
    errors.pop("fold", None)
    if errors:
        raise ParamsError(
            {(f"fixed.{k}" if k in grid.fixed else k): v for k, v in errors.items()}, sweep=True
        )
