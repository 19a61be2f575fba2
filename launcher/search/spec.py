"""A sweep spec's `early_stopping` and `search`, validated, and the search space's ranges.

    "early_stopping": {"method": "asha", "eta": 3, "min_epochs": 1}
    "search": {"strategy": "random" | "tpe" | "grid", "trials": 40, "seed": 0, "gpu_hours": 100}

With a random or TPE search, `lrs` and `weight_decays` may be ranges
(`{"min": 1e-5, "max": 1e-1, "log": true}`), `lr_steps` an integer range (`{"min": 5, "max":
20}`), and every axis may stay a list (a categorical choice). Every refusal is a GridError
naming its field (`grid.early_stopping.eta`, `grid.search.trials`, `grid.lrs.min`...).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

METHODS = ("asha",)
STRATEGIES = ("grid", "random", "tpe")
ETA_RANGE = (2, 10)
MAX_SEED = 2**31 - 1


class SpecError(ValueError):
    """What sweepgrid.GridError carries: `field` (under `grid.`) and the message."""

    def __init__(self, field: str, message: str) -> None:
        self.field, self.message = field, message
        super().__init__(f"{field}: {message}")


@dataclass(frozen=True)
class EarlyStopping:
    """Asynchronous successive halving: rungs at min_epochs x eta^k epochs (below the last
    epoch); at each, the top 1/eta of the configurations that reached it continue."""

    method: str
    eta: int
    min_epochs: int

    def rungs(self, epochs: int) -> tuple[int, ...]:
        """The rung epochs before the last epoch (a run that reaches `epochs` has finished)."""
        found, rung = [], self.min_epochs
        while rung < epochs:
            found.append(rung)
            rung *= self.eta
        return tuple(found)

    def as_dict(self) -> dict[str, Any]:
        return {"method": self.method, "eta": self.eta, "min_epochs": self.min_epochs}


@dataclass(frozen=True)
class Range:
    """A continuous (or integer) interval of one axis, sampled uniformly or log-uniformly."""

    low: float
    high: float
    log: bool = False
    integer: bool = False

    def as_dict(self) -> dict[str, Any]:
        low, high = (int(self.low), int(self.high)) if self.integer else (self.low, self.high)
        return {"min": low, "max": high, "log": self.log}


@dataclass(frozen=True)
class Search:
    """How configurations are chosen: every grid point, or `trials` drawn by a sampler."""

    strategy: str
    trials: int
    seed: int
    gpu_hours: Decimal | None = None

    @property
    def samples(self) -> bool:
        return self.strategy != "grid"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"strategy": self.strategy, "trials": self.trials, "seed": self.seed}
        if self.gpu_hours is not None:
            out["gpu_hours"] = float(self.gpu_hours)
        return out


def _int(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(field, f"an integer from {low} to {high}")
    return value


def _object(value: Any, field: str, allowed: set[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise SpecError(field, "must be an object")
    unknown = set(value) - allowed
    if unknown:
        raise SpecError(field, f"unknown key(s) {', '.join(sorted(unknown))}")
    return value


def early_stopping(value: Any) -> EarlyStopping | None:
    """The validated `early_stopping`, or None when absent (every cell runs to the end)."""
    if value is None:
        return None
    spec = _object(value, "early_stopping", {"method", "eta", "min_epochs"})
    method = spec.get("method", "asha")
    if method not in METHODS:
        raise SpecError("early_stopping.method", f"unknown {method!r}; known: {', '.join(METHODS)}")
    eta = _int(spec.get("eta", 3), "early_stopping.eta", *ETA_RANGE)
    min_epochs = _int(spec.get("min_epochs", 1), "early_stopping.min_epochs", 1, 500)
    return EarlyStopping(method, eta, min_epochs)


def check_epochs(stopping: EarlyStopping | None, epochs: int) -> None:
    """Refuse a schedule without a rung: min_epochs must be below the cells' epochs."""
    if stopping is not None and stopping.min_epochs >= epochs:
        raise SpecError(
            "early_stopping.min_epochs",
            f"{stopping.min_epochs} must be below the cells' {epochs} epochs, or no cell is ever "
            "compared",
        )


def search(value: Any, *, max_trials: int) -> Search | None:
    """The validated `search`, or None when absent (a grid)."""
    if value is None:
        return None
    spec = _object(value, "search", {"strategy", "trials", "seed", "gpu_hours"})
    strategy = spec.get("strategy", "grid")
    if strategy not in STRATEGIES:
        raise SpecError("search.strategy", f"unknown {strategy!r}; known: {', '.join(STRATEGIES)}")
    if strategy == "grid":
        if "trials" in spec:
            raise SpecError("search.trials", "a grid runs every point: trials is for random or tpe")
        trials = 0
    else:
        if "trials" not in spec:
            raise SpecError("search.trials", f"how many configurations {strategy} may try")
        trials = _int(spec["trials"], "search.trials", 1, max(max_trials, 1))
    seed = _int(spec.get("seed", 0), "search.seed", 0, MAX_SEED)
    budget = spec.get("gpu_hours")
    hours = None
    if budget is not None:
        try:
            hours = Decimal(str(budget)) if not isinstance(budget, bool) else None
        except InvalidOperation:
            hours = None
        if hours is None or not hours.is_finite() or hours <= 0:
            raise SpecError("search.gpu_hours", "a positive number of GPU-hours")
    return Search(strategy, trials, seed, hours)


def axis(value: Any, key: str, *, integer: bool, bounds: tuple[float, float]) -> Range | None:
    """`value` as a Range when it is an object ({"min", "max", "log"}), None when it is not
    (the caller validates a list). Bounds are the parameter's own (launcher/params.py)."""
    if not isinstance(value, Mapping):
        return None
    spec = _object(value, key, {"min", "max", "log"})
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise SpecError(f"{key}.log", "true or false")
    ends = []
    for end in ("min", "max"):
        number = spec.get(end)
        kind_ok = isinstance(number, int) if integer else isinstance(number, (int, float))
        if isinstance(number, bool) or not isinstance(number, (int, float)) or not kind_ok:
            raise SpecError(f"{key}.{end}", f"{'an integer' if integer else 'a number'}")
        if not math.isfinite(number):
            raise SpecError(f"{key}.{end}", f"{'an integer' if integer else 'a number'}")
        if log and number <= 0:
            raise SpecError(f"{key}.{end}", f"{number!r} must be positive on a log scale")
        if not bounds[0] <= number <= bounds[1]:
            raise SpecError(f"{key}.{end}", f"{number!r} is outside {bounds[0]:g}..{bounds[1]:g}")
        ends.append(float(number))
    if ends[0] >= ends[1]:
        raise SpecError(key, f"min ({ends[0]:g}) must be below max ({ends[1]:g})")
    return Range(ends[0], ends[1], log, integer)


def expected_fraction(stopping: EarlyStopping | None, epochs: int) -> float:
    """The share of the worst case (every cell to its last epoch) that ASHA's rung schedule
    expects to run when configurations rank at random: a fraction 1/eta^k of the
    configurations trains from rung k to rung k+1. 1.0 without early stopping."""
    if stopping is None:
        return 1.0
    bounds = [0, *stopping.rungs(epochs), epochs]
    run = sum((bounds[k + 1] - bounds[k]) / stopping.eta**k for k in range(len(bounds) - 1))
    return run / epochs
