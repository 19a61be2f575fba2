"""Sweep bounds have one home, launcher/params.py: the API's grid serializer, the grid validator
(sweepgrid) and the sweep form's help all read it, and the node-side trainer (which may not
import the portal, so it keeps its own checks) accepts every value the portal lets through and
refuses what lies just outside the shared lower bounds."""

from __future__ import annotations

import pytest

from launcher import params as P
from launcher import sweepgrid
from launcher.api.grid import GridAxes
from launcher.forms import SweepForm
from launcher.workloads.ctxray.config import TrainConfig, UsageError

DECAY, FOLDS = P.PARAMS["weight_decay"], P.PARAMS["folds"]
GRID = {"models": ["resnet18"], "lrs": [1e-3], "lr_steps": [5]}


@pytest.mark.parametrize(
    "decay, ok",
    [(DECAY.low, True), (DECAY.high, True), (DECAY.high + 0.005, False), (DECAY.low - 0.01, False)],
)
def test_the_serializer_and_the_grid_validator_take_the_same_weight_decays(decay, ok):
    grid = {**GRID, "weight_decays": [decay], "folds": 1}
    assert GridAxes(data=grid).is_valid() is ok
    if ok:
        assert sweepgrid.validate(grid).weight_decays == (decay,)
    else:
        with pytest.raises(sweepgrid.GridError, match="weight_decays"):
            sweepgrid.validate(grid)


@pytest.mark.parametrize(
    "folds, ok",
    [(FOLDS.low, True), (FOLDS.high, True), (FOLDS.high + 1, False), (FOLDS.low - 1, False)],
)
def test_the_serializer_and_the_grid_validator_take_the_same_folds(folds, ok):
    grid = {**GRID, "weight_decays": [0.0], "folds": folds}
    assert GridAxes(data=grid).is_valid() is ok
    if ok:
        assert sweepgrid.validate(grid).folds == folds
    else:
        with pytest.raises(sweepgrid.GridError, match="folds"):
            sweepgrid.validate(grid)


def test_the_sweep_form_states_the_bounds_of_params():
    help_text = SweepForm.base_fields["weight_decays"].help_text
    assert f"{DECAY.low:g}" in help_text and f"{DECAY.high:g}" in help_text


def _train(tmp_path, **values) -> TrainConfig:
    return TrainConfig(data=str(tmp_path), out=str(tmp_path / "out"), **values)


def test_the_trainer_accepts_every_bound_the_portal_lets_through(tmp_path):
    for values in (
        {"weight_decay": DECAY.low},
        {"weight_decay": DECAY.high},
        {"folds": FOLDS.low},
        {"folds": FOLDS.high, "fold": FOLDS.high - 1},
    ):
        _train(tmp_path, **values).validate()


@pytest.mark.parametrize("values", [{"weight_decay": DECAY.low - 0.01}, {"folds": FOLDS.low - 1}])
def test_the_trainer_refuses_what_lies_below_the_shared_lower_bounds(tmp_path, values):
    with pytest.raises(UsageError):
        _train(tmp_path, **values).validate()
