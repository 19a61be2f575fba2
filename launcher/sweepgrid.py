"""Sweep grids: expand models x learning rates x LR steps x weight decays x folds into cells,
validate specs, and rank results in a leaderboard (a cell's ``ctxray train`` arguments are
launcher/bundles.py's `cell_argv`).

Pure Python (no torch), so the portal, Celery tasks and tests share it cheaply; only GridError,
the refusal in the domain's vocabulary (core.errors), comes from the portal.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.errors import Invalid

from .params import MODELS, PARAMS
from .search import spec as search_spec
from .stats import bounded_interval

#: Models the workload can train (launcher.workloads.ctxray.config.MODEL_NAMES; a test keeps
#: the two lists equal). densenet161 is built from MONAI's DenseNet class with its own layout.
MAX_CELLS = 5000
METRIC_NAMES = ("accuracy", "precision", "recall", "specificity", "f1", "roc_auc")
AXES = ("model", "lr", "lr_step", "weight_decay")


class GridError(Invalid, ValueError):
    """A sweep spec that cannot be run (HTTP 400); the message names the field and what is wrong,
    and the body puts it there (`grid.<field>`, or `sort_by` for a leaderboard's metric)."""

    def __init__(self, message: str) -> None:
        head = message.partition(": ")[0]
        dotted = all(part.isidentifier() for part in head.split("."))
        field = head if head == "sort_by" else f"grid.{head}" if dotted else "grid"
        super().__init__(message, field=field)


@dataclass(frozen=True)
class GridSpec:
    """A validated grid. `fixed` holds train arguments shared by every cell (epochs, size...)."""

    models: tuple[str, ...]
    lrs: tuple[float, ...]
    lr_steps: tuple[int, ...]
    weight_decays: tuple[float, ...]
    folds: int
    fixed: dict[str, Any] = field(default_factory=dict)
    early_stopping: search_spec.EarlyStopping | None = None
    search: search_spec.Search | None = None
    # A random or TPE search's space: each axis a list (categorical) or a Range.
    space: dict[str, Any] = field(default_factory=dict)

    @property
    def sampled(self) -> bool:
        """Configurations drawn by a sampler (random, TPE) rather than every grid point."""
        return self.search is not None and self.search.samples

    @property
    def staged(self) -> bool:
        """Cells released as slots free up (launcher/services/sweeps.py), not all at once."""
        return self.sampled or self.early_stopping is not None

    @property
    def size(self) -> int:
        """Number of cells (training runs): every grid point's folds, or the trials' folds."""
        if self.search is not None and self.search.samples:
            return self.search.trials * self.folds
        return (
            len(self.models)
            * len(self.lrs)
            * len(self.lr_steps)
            * len(self.weight_decays)
            * self.folds
        )


#: The CLAIRE COVID-19 universal pipeline's grid (Colonnelli et al.): 4 x 3 x 3 x 3 x 5 = 540 runs,
#: Adam (amsgrad) + StepLR, 50 epochs, early stopping after 10, input 224, CT window (-500, 1500).
CLAIRE_PRESET: dict[str, Any] = {
    "models": ["densenet121", "densenet161", "densenet169", "densenet201"],
    "lrs": [1e-3, 1e-4, 1e-5],
    "lr_steps": [10, 15, 20],
    "weight_decays": [5e-4, 1e-4, 5e-5],
    "folds": 5,
    "fixed": {"epochs": 50, "patience": 10, "size": 224, "window": "-500,1500"},
}
PRESETS = {"claire": CLAIRE_PRESET}

FIXED_ALLOWED = {
    "epochs": int,
    "patience": int,
    "size": int,
    "batch_size": int,
    "dims": int,
    "slices": int,
    "window": str,
    "seed": int,
    "lr_gamma": float,
    "bootstrap": int,
    "deterministic": bool,
    "augment": bool,
    "lung_crop": bool,
    "workers": int,
    "threads": int,
}


def _list(spec: Mapping[str, Any], key: str, kind: type) -> tuple:
    values = spec.get(key)
    if not isinstance(values, (list, tuple)) or not values:
        raise GridError(f"{key}: give a non-empty list")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float) if kind is float else kind):
            raise GridError(f"{key}: {v!r} is not a {kind.__name__}")
        if isinstance(v, (int, float)) and not (math.isfinite(v) and v > 0):  # not for str
            raise GridError(f"{key}: {v!r} must be a positive number")
        out.append(kind(v))
    if len(set(out)) != len(out):
        raise GridError(f"{key}: values repeat")
    return tuple(out)


def validate(spec: Mapping[str, Any]) -> GridSpec:
    """Turn a JSON-like spec (or {"preset": "claire", ...overrides}) into a GridSpec, or raise
    GridError with a message fit to show next to the offending field."""
    if not isinstance(spec, Mapping):
        raise GridError("the sweep spec must be an object")
    if "preset" in spec:
        if spec["preset"] not in PRESETS:
            raise GridError(f"preset: unknown {spec['preset']!r}; known: {', '.join(PRESETS)}")
        spec = {**PRESETS[spec["preset"]], **{k: v for k, v in spec.items() if k != "preset"}}
    unknown = set(spec) - {
        "models",
        "lrs",
        "lr_steps",
        "weight_decays",
        "folds",
        "fixed",
        "early_stopping",
        "search",
    }
    if unknown:
        raise GridError(f"unknown field(s): {', '.join(sorted(unknown))}")
    try:
        stopping = search_spec.early_stopping(spec.get("early_stopping"))
        search = search_spec.search(spec.get("search"), max_trials=MAX_CELLS)
    except search_spec.SpecError as error:
        raise GridError(str(error)) from None
    if search is not None and search.samples:
        return _sampled(spec, stopping, search)
    models = _list(spec, "models", str)
    bad = [m for m in models if m not in MODELS]
    if bad:
        raise GridError(f"models: unknown {', '.join(bad)}; choose from {', '.join(MODELS)}")
    weight_decays = _weight_decays(spec)
    folds = _folds(spec)
    grid = GridSpec(
        models,
        _list(spec, "lrs", float),
        _list(spec, "lr_steps", int),
        weight_decays,
        folds,
        _fixed(spec.get("fixed") or {}),
        stopping,
        search,
    )
    if grid.size > MAX_CELLS:
        raise GridError(f"the grid has {grid.size} cells, more than the limit of {MAX_CELLS}")
    return grid


def _weight_decays(spec: Mapping[str, Any]) -> tuple[float, ...]:
    """The weight decays: a non-empty list within the parameter's bounds (0 allowed)."""
    raw = spec.get("weight_decays") or ()
    low, high = PARAMS["weight_decay"].bounds  # the bounds' one home (launcher/params.py)
    if (
        not isinstance(raw, (list, tuple))
        or not raw
        or any(
            isinstance(w, bool) or not isinstance(w, (int, float)) or not low <= w <= high
            for w in raw
        )
    ):
        raise GridError(f"weight_decays: give a non-empty list of numbers from {low:g} to {high:g}")
    if len(set(raw)) != len(raw):
        raise GridError("weight_decays: values repeat")
    return tuple(float(w) for w in raw)


def _folds(spec: Mapping[str, Any]) -> int:
    folds = spec.get("folds", 1)
    low, high = PARAMS["folds"].bounds
    if isinstance(folds, bool) or not isinstance(folds, int) or not low <= folds <= high:
        raise GridError(f"folds: an integer from {low:g} to {high:g}")
    return folds


def _sampled(
    spec: Mapping[str, Any], stopping: search_spec.EarlyStopping | None, search: search_spec.Search
) -> GridSpec:
    """A random or TPE search's spec: lists or ranges per axis, `trials` x folds cells."""
    models = _list(spec, "models", str)
    bad = [m for m in models if m not in MODELS]
    if bad:
        raise GridError(f"models: unknown {', '.join(bad)}; choose from {', '.join(MODELS)}")
    space: dict[str, Any] = {"model": models}
    for key, name, integer in (
        ("lrs", "lr", False),
        ("lr_steps", "lr_step", True),
        ("weight_decays", "weight_decay", False),
    ):
        bounds = PARAMS[name].bounds if name in PARAMS else (1, 500)
        try:
            found = search_spec.axis(spec.get(key), key, integer=integer, bounds=bounds)
        except search_spec.SpecError as error:
            raise GridError(str(error)) from None
        if found is not None:
            space[name] = found
        elif key == "weight_decays":
            space[name] = _weight_decays(spec)
        else:
            space[name] = _list(spec, key, int if integer else float)
    folds = _folds(spec)
    if search.trials * folds > MAX_CELLS:
        raise GridError(
            f"search.trials: {search.trials} trials x {folds} folds is more than the limit of "
            f"{MAX_CELLS} cells"
        )
    return GridSpec(
        tuple(models), (), (), (), folds, _fixed(spec.get("fixed") or {}), stopping, search, space
    )


def _fixed(fixed: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(fixed, Mapping):
        raise GridError("fixed: must be an object of train arguments")
    for key, value in fixed.items():
        kind = FIXED_ALLOWED.get(key)
        if kind is None:
            raise GridError(
                f"fixed: {key!r} cannot be set for a sweep; allowed: {', '.join(sorted(FIXED_ALLOWED))}"
            )
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise GridError(f"fixed: {key} must be a {kind.__name__}")
    return dict(fixed)


def expand(grid: GridSpec) -> list[dict[str, Any]]:
    """Every cell as a parameter dict, in a fixed order (model, lr, lr_step, weight_decay, fold
    nested from outermost), each with its 0-based `index` (the Slurm array task id). A sampled
    search has no cells up front (launcher/services/sweeps.py asks for them)."""
    if grid.sampled:
        return []
    product = itertools.product(
        grid.models, grid.lrs, grid.lr_steps, grid.weight_decays, range(grid.folds)
    )
    return [
        {
            "index": i,
            "model": m,
            "lr": lr,
            "lr_step": step,
            "weight_decay": wd,
            "fold": fold,
            "folds": grid.folds,
            **grid.fixed,
        }
        for i, (m, lr, step, wd, fold) in enumerate(product)
    ]


def combo_key(cell: Mapping[str, Any]) -> tuple:
    """The hyper-parameter combination a cell belongs to (everything but the fold)."""
    return tuple(cell[a] for a in AXES)


def combo_label(cell: Mapping[str, Any]) -> str:
    """combo_key as a string (a JSON key in a sweep's schedule)."""
    return "|".join(str(cell[a]) for a in AXES)


def config_cells(config: Mapping[str, Any], *, folds: int, fixed: Mapping[str, Any], start: int):
    """One configuration's cells, one per fold, indexed from `start` (a sampled search's)."""
    return [
        {
            "index": start + fold,
            **{a: config[a] for a in AXES},
            "fold": fold,
            "folds": folds,
            **fixed,
        }
        for fold in range(folds)
    ]


def metric_value(metrics: Mapping[str, Any], name: str, level: str = "patient") -> float | None:
    """A metric from a metrics.json (``{level: {name: {"value": x}}}``) or a flat {name: x}."""
    source = metrics.get(level, metrics) if isinstance(metrics.get(level), Mapping) else metrics
    value = source.get(name)
    if isinstance(value, Mapping):
        value = value.get("value")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def leaderboard(
    results: Iterable[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
    sort_by: str = "accuracy",
    level: str = "patient",
    metrics: tuple[str, ...] = METRIC_NAMES,
) -> list[dict[str, Any]]:
    """Rank hyper-parameter combinations by the mean over folds of `sort_by`, best first.

    results: (cell, metrics or None for a cell without results yet). Each row carries the combo,
    the folds done and expected, and each metric's {"mean", "ci", "n"}: the 95% interval
    stays inside [0, 1] (launcher/stats.py says how).
    """
    if sort_by not in metrics:
        raise GridError(f"sort_by: unknown metric {sort_by!r}; choose from {', '.join(metrics)}")
    groups: dict[tuple, dict[str, Any]] = {}
    for cell, result in results:
        row = groups.setdefault(
            combo_key(cell),
            {
                **{a: cell[a] for a in AXES},
                "folds_expected": cell.get("folds", 1),
                "_values": {m: [] for m in metrics},
                "folds_done": 0,
            },
        )
        if result is not None:
            row["folds_done"] += 1
            for m in metrics:
                v = metric_value(result, m, level)
                if v is not None:
                    row["_values"][m].append(v)
    rows = []
    for row in groups.values():
        values = row.pop("_values")
        for m in metrics:
            mean, ci = bounded_interval(values[m]) if values[m] else (None, None)
            row[m] = {"mean": mean, "ci": ci, "n": len(values[m])}
        rows.append(row)
    rows.sort(key=lambda r: (r[sort_by]["mean"] is None, -(r[sort_by]["mean"] or 0.0)))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    return rows
