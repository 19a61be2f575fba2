"""Configurations drawn by Optuna's samplers through its ask-and-tell API: random
(`RandomSampler`) or Bayesian (`TPESampler`, the Tree-structured Parzen Estimator).

The portal's rows are the study's storage: each time more configurations are needed, an
in-memory study is rebuilt from the sweep's configurations so far (`Trial`: finished ones
with their value, stopped ones as pruned with the values they reached), and asked for more.
The sampler's seed is the sweep's seed plus the number of trials already asked, so a sweep's
draws are reproducible and two asks never replay the same draw. No second schema or database
engine beside Django's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)
from optuna.trial import TrialState

from .spec import Range

optuna.logging.set_verbosity(optuna.logging.WARNING)

#: The sweep's axes as Optuna parameter names (sweepgrid.AXES).
AXES = ("model", "lr", "lr_step", "weight_decay")


@dataclass(frozen=True)
class Trial:
    """One configuration so far: its params, its final value (finished), or the values it
    reached by epoch (stopped early: pruned); neither while it runs."""

    params: Mapping[str, Any]
    value: float | None = None
    intermediate: Mapping[int, float] = field(default_factory=dict)
    stopped: bool = False


def distributions(space: Mapping[str, Sequence[Any] | Range]) -> dict[str, BaseDistribution]:
    """Each axis as an Optuna distribution: a Range as a float (or int) one, a list as a
    categorical choice."""
    found: dict[str, BaseDistribution] = {}
    for name in AXES:
        axis = space[name]
        if isinstance(axis, Range) and axis.integer:
            found[name] = IntDistribution(int(axis.low), int(axis.high), log=axis.log)
        elif isinstance(axis, Range):
            found[name] = FloatDistribution(axis.low, axis.high, log=axis.log)
        else:
            found[name] = CategoricalDistribution(list(axis))
    return found


def _frozen(trial: Trial, dists: dict[str, BaseDistribution]) -> optuna.trial.FrozenTrial | None:
    params = {name: trial.params[name] for name in AXES}
    if trial.value is not None:
        return optuna.trial.create_trial(params=params, distributions=dists, value=trial.value)
    if trial.stopped and trial.intermediate:
        return optuna.trial.create_trial(
            params=params,
            distributions=dists,
            state=TrialState.PRUNED,
            intermediate_values=dict(trial.intermediate),
        )
    return None  # still running, or ended without a value: the sampler learns nothing from it


def ask(
    *,
    strategy: str,
    seed: int,
    space: Mapping[str, Sequence[Any] | Range],
    history: Sequence[Trial],
    count: int,
    startup: int = 10,
) -> list[dict[str, Any]]:
    """`count` new configurations (fewer when a categorical space has no unseen point left),
    none equal to one in `history`. Maximises the value (the ranking metric). TPE draws at
    random until `startup` trials have a value (Optuna's n_startup_trials; the caller caps it
    below the search's trials, so a small search still models)."""
    dists = distributions(space)
    offset = seed + len(history)
    sampler: optuna.samplers.BaseSampler = (
        optuna.samplers.TPESampler(seed=offset, n_startup_trials=startup)
        if strategy == "tpe"
        else optuna.samplers.RandomSampler(seed=offset)
    )
    study = optuna.create_study(direction="maximize", sampler=sampler)
    for past in history:
        frozen = _frozen(past, dists)
        if frozen is not None:
            study.add_trial(frozen)
    seen = {_key(t.params) for t in history}
    found: list[dict[str, Any]] = []
    tries = 0
    while len(found) < count and tries < 20 * count:
        tries += 1
        trial = study.ask(dists)
        params = dict(trial.params)
        # Asked but not told: a configuration already chosen is never chosen twice.
        study.tell(trial, state=TrialState.FAIL)
        if _key(params) in seen:
            continue
        seen.add(_key(params))
        found.append(params)
    return found


def _key(params: Mapping[str, Any]) -> tuple:
    return tuple(params[name] for name in AXES)
