"""Staged sweeps (launcher/services/sweeps.py): ASHA stops the configurations outside the top
1/eta of a rung on every fold (`stopped_early`, with epoch and rung) and releases their
reservations at once; only what runs at once is reserved; random and TPE searches draw their
configurations as slots free, within their trials; bad specs are 400s naming the field."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.ledger import ledger_rebuild
from allocations.models import Allocation
from launcher.models import Job, Sweep
from launcher.search import asha
from launcher.services import sweep_advance, sweep_launch
from launcher.sweep_selectors import sweep_leaderboard, sweep_schedule
from tests.factories import FacilityFactory

pytestmark = [pytest.mark.django_db]
S = Job.State
ASHA = {"method": "asha", "eta": 3, "min_epochs": 1}
GRID = {
    "models": ["resnet18"],
    "lrs": [1e-1, 1e-2, 1e-3],
    "lr_steps": [5],
    "weight_decays": [1e-4],
    "folds": 2,
    "fixed": {"epochs": 9, "size": 32, "batch_size": 8},
    "early_stopping": ASHA,
}
PARAMS = {"dataset": "synthetic-ct", "synthetic_n": 48}


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(slug="local-asha", backend="local", gpu_hour_rate=Decimal("0.50"))
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(20),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="asha-a1",
    )


def launch(allocation, by, grid=GRID, concurrency=2):
    return sweep_launch(
        by=by,
        allocation=allocation,
        grid=grid,
        gpus=1,
        wall_time_minutes=30,
        params=PARAMS,
        concurrency=concurrency,
    )


def reserved(allocation) -> int:
    return Allocation.objects.get(pk=allocation.pk).gpu_seconds_reserved


def run_to(cell: Job, epochs: int, accuracy: float, *, state=S.RUNNING) -> None:
    """The cell as a poll leaves it: running (or ended), its epochs' validation results read."""
    cell.refresh_from_db()
    now = timezone.now()
    Job.objects.filter(pk=cell.pk).update(
        state=state,
        scheduler_id=cell.scheduler_id or f"portal-test-{cell.pk}",
        submitted_at=now,
        started_at=now - dt.timedelta(seconds=10 * max(epochs, 1)),
        progress={
            "epoch_metrics": [
                {"epoch": e, "val_loss": 1 - accuracy, "val": {"accuracy": accuracy}}
                for e in range(1, epochs + 1)
            ]
        },
    )


def flat(errors, prefix="") -> set[str]:
    """An error body's fields as dotted paths (nested objects and dotted keys alike)."""
    if not isinstance(errors, dict):
        return {prefix}
    found = set()
    for key, value in errors.items():
        found |= flat(value, f"{prefix}.{key}" if prefix else key)
    return found


def test_only_the_cells_that_run_at_once_are_reserved(allocation, researcher):
    sweep = launch(allocation, researcher)

    cells = list(sweep.jobs.order_by("array_index"))
    released = [c for c in cells if not c.held]
    assert sweep.staged and len(cells) == 6 and len(released) == 2
    per_cell = sweep.cell_estimate_gpu_hours
    assert reserved(allocation) == int(2 * per_cell * 3600)
    assert all(c.estimate_gpu_hours == 0 for c in cells if c.held)
    # The worst case is every cell to its end; the expected case follows the rung schedule.
    assert sweep.estimate_gpu_hours == 6 * per_cell
    assert sweep.expected_gpu_hours < sweep.estimate_gpu_hours
    assert {c.token for c in released} == {f"{sweep.token}-r1"}


def test_a_configuration_outside_the_top_third_stops_on_every_fold(allocation, researcher):
    sweep = launch(allocation, researcher, concurrency=6)
    cells = {c.array_index: c for c in sweep.jobs.order_by("array_index")}
    # Configuration lr=0.1 (cells 0, 1) is first at rung 1 and goes on; lr=0.01 (2, 3) is worse
    # (1 of 2 go on: the better); lr=0.001 (4, 5) arrives third and best.
    for index in (0, 1):
        run_to(cells[index], 1, 0.80)
    assert sweep_advance(sweep_id=sweep.pk).stopped == 0
    before = reserved(allocation)
    run_to(cells[2], 1, 0.60)
    run_to(cells[3], 2, 0.62)  # a fold past the rung counts at its rung epoch
    done = sweep_advance(sweep_id=sweep.pk)

    assert done.stopped == 2
    for index in (2, 3):
        cell = Job.objects.get(pk=cells[index].pk)
        assert cell.state == S.STOPPED_EARLY and cell.rung == 0
        assert cell.stopped_at_epoch == (1 if index == 2 else 2)
        assert "outside the top 1 of 2" in cell.state_reason
    # Both folds' reservations are released in the same step.
    assert reserved(allocation) == before - 2 * int(sweep.cell_estimate_gpu_hours * 3600)

    run_to(cells[4], 1, 0.95)
    run_to(cells[5], 1, 0.93)
    assert sweep_advance(sweep_id=sweep.pk).stopped == 0  # top 1 of 3: the best goes on
    sweep.refresh_from_db()
    values = sweep.schedule["values"]["0"]
    assert list(values) == [
        "resnet18|0.1|5|0.0001",
        "resnet18|0.01|5|0.0001",
        "resnet18|0.001|5|0.0001",
    ]
    assert values["resnet18|0.01|5|0.0001"][0] == pytest.approx(0.61)

    board = {row["lr"]: row for row in sweep_leaderboard(sweep)}
    assert board[0.01]["stopped_at_rung"] == 0 and board[0.001]["stopped_at_rung"] is None
    schedule = sweep_schedule(sweep)
    assert schedule["rungs"] == [1, 3] and schedule["saved_gpu_hours_estimate"] > 0


def test_a_running_fold_below_the_rung_holds_its_configurations_judgement(allocation, researcher):
    sweep = launch(allocation, researcher, concurrency=6)
    cells = list(sweep.jobs.order_by("array_index"))
    run_to(cells[0], 1, 0.9)
    run_to(cells[1], 0, 0.0)  # running, not at the rung yet
    sweep_advance(sweep_id=sweep.pk)
    sweep.refresh_from_db()
    assert "0" not in sweep.schedule.get("values", {})


def test_a_stopped_cell_frees_its_slot_for_the_next_held_cell(allocation, researcher):
    sweep = launch(allocation, researcher, grid={**GRID, "folds": 1}, concurrency=2)
    first, second, third = sweep.jobs.order_by("array_index")
    assert not first.held and not second.held and third.held
    run_to(first, 1, 0.9)
    run_to(second, 1, 0.5)
    sweep_advance(sweep_id=sweep.pk)

    third.refresh_from_db()
    assert Job.objects.get(pk=second.pk).state == S.STOPPED_EARLY
    assert not third.held and third.token == f"{sweep.token}-r2"
    assert third.estimate_gpu_hours == sweep.cell_estimate_gpu_hours


def test_held_cells_are_not_run_when_the_allocation_has_no_hours_left(allocation, researcher):
    sweep = launch(allocation, researcher, grid={**GRID, "folds": 1}, concurrency=1)
    first = sweep.jobs.get(array_index=0)
    Allocation.objects.filter(pk=allocation.pk).update(gpu_hours=Decimal("0.001"))
    run_to(first, 9, 0.9, state=S.SUCCEEDED)
    Job.objects.filter(pk=first.pk).update(finished_at=timezone.now())
    ledger_rebuild(allocation_ids=[allocation.pk])  # the first cell ended behind the ledger's back
    sweep_advance(sweep_id=sweep.pk)

    rest = list(sweep.jobs.filter(array_index__gt=0))
    assert {c.state for c in rest} == {S.CANCELLED}
    assert "not enough left on the allocation" in rest[0].state_reason


def test_a_random_search_draws_its_trials_as_slots_free(allocation, researcher):
    grid = {
        "models": ["resnet18"],
        "lrs": {"min": 1e-5, "max": 1e-1, "log": True},
        "lr_steps": {"min": 2, "max": 8},
        "weight_decays": [0.0, 1e-3],  # no decay is a choice too
        "folds": 1,
        "fixed": {"epochs": 3},
        "search": {"strategy": "random", "trials": 3, "seed": 7},
    }
    sweep = launch(allocation, researcher, grid=grid, concurrency=2)
    cells = list(sweep.jobs.order_by("array_index"))
    assert sweep.size == 3 and len(cells) == 2 and not any(c.held for c in cells)
    assert all(1e-5 <= c.params["lr"] <= 1e-1 and 2 <= c.params["lr_step"] <= 8 for c in cells)
    for cell in cells:
        run_to(cell, 3, 0.7, state=S.SUCCEEDED)
    sweep_advance(sweep_id=sweep.pk)
    sweep_advance(sweep_id=sweep.pk)
    assert sweep.jobs.count() == 3  # the trials are the limit


def test_tpe_learns_from_the_sweeps_rows_and_reproduces_its_draws(allocation, researcher):
    grid = {
        "models": ["resnet18"],
        "lrs": {"min": 1e-5, "max": 1e-1, "log": True},
        "lr_steps": [5],
        "weight_decays": [1e-4],
        "folds": 1,
        "fixed": {"epochs": 3},
        "search": {"strategy": "tpe", "trials": 4, "seed": 3},
    }
    one = launch(allocation, researcher, grid=grid, concurrency=1)
    two = launch(allocation, researcher, grid=grid, concurrency=1)
    assert one.jobs.get().params["lr"] == two.jobs.get().params["lr"]


@pytest.mark.parametrize(
    "change, field",
    [
        ({"early_stopping": {**ASHA, "eta": 1}}, "grid.early_stopping.eta"),
        ({"early_stopping": {**ASHA, "min_epochs": 9}}, "grid.early_stopping.min_epochs"),
        ({"early_stopping": {**ASHA, "method": "hyperband"}}, "grid.early_stopping.method"),
        (
            {"lrs": {"min": 1e-1, "max": 1e-3}, "search": {"strategy": "random", "trials": 4}},
            "grid.lrs",
        ),
        ({"search": {"strategy": "tpe", "trials": 4000}}, "grid.search.trials"),
        ({"search": {"strategy": "tpe"}}, "grid.search.trials"),
        ({"search": {"strategy": "grid", "trials": 3}}, "grid.search.trials"),
    ],
)
def test_bad_specs_are_400s_naming_the_field(api, researcher, allocation, change, field):
    response = api.as_user(researcher).post(
        "/api/v1/sweeps/",
        {
            "allocation": allocation.pk,
            "gpus": 1,
            "wall_time_minutes": 30,
            "grid": {**GRID, **change},
            "params": PARAMS,
        },
        format="json",
    )
    assert response.status_code == 400, response.json()
    assert field in flat(response.json()), response.json()
    assert not Sweep.objects.exists()


def test_the_rule_keeps_the_top_third_of_arrivals():
    recorded: dict[str, list[float | None]] = {}
    kept = []
    for label, metric in [("a", 0.5), ("b", 0.4), ("c", 0.9), ("d", 0.1), ("e", 0.2), ("f", 0.95)]:
        recorded[label] = [metric, 0.0]
        kept.append(asha.promoted(label, recorded, 3))
    # n=1 keeps 1; n=2..5 keep 1 (the best so far); n=6 keeps 2.
    assert kept == [True, False, True, False, False, True]
    assert asha.rank_key([None, 0.1]) > asha.rank_key([0.0, 9.0])


def test_the_api_carries_the_cells_how_far_they_went(api, allocation, researcher):
    sweep = launch(allocation, researcher, grid={**GRID, "folds": 1}, concurrency=3)
    first, second, third = sweep.jobs.order_by("array_index")
    run_to(first, 1, 0.9)
    run_to(second, 1, 0.4)
    sweep_advance(sweep_id=sweep.pk)
    client = api.as_user(researcher)

    detail = client.get(f"/api/v1/sweeps/{sweep.pk}/").json()
    assert detail["counts"]["stopped_early"] == 1 and detail["finished"] is False
    assert detail["staged"] is True and detail["expected_gpu_hours"] > 0
    assert detail["schedule"]["rungs"] == [1, 3]
    stopped = [c for c in detail["schedule"]["configurations"] if c["stopped_at_rung"] == 0]
    assert [c["configuration"]["lr"] for c in stopped] == [0.01]

    cells = client.get(f"/api/v1/jobs/?sweep={sweep.pk}").json()["results"]
    assert {c["id"] for c in cells} == {first.pk, second.pk, third.pk}
    by_id = {c["id"]: c for c in cells}
    assert by_id[second.pk]["state"] == "stopped_early"
    assert by_id[second.pk]["stopped_at_epoch"] == 1 and by_id[second.pk]["rung"] == 0
    assert by_id[first.pk]["rung"] is None and isinstance(by_id[second.pk]["gpu_seconds"], int)


def test_a_search_stops_drawing_when_its_own_budget_is_spent(allocation, researcher):
    grid = {
        "models": ["resnet18"],
        "lrs": {"min": 1e-5, "max": 1e-1, "log": True},
        "lr_steps": [5],
        "weight_decays": [1e-4],
        "folds": 1,
        "fixed": {"epochs": 3},
        "search": {"strategy": "random", "trials": 5, "seed": 1, "gpu_hours": 0.75},
    }
    sweep = launch(allocation, researcher, grid=grid, concurrency=1)
    (first,) = sweep.jobs.all()
    per_cell = sweep.cell_estimate_gpu_hours  # 0.5: one GPU for 30 minutes
    assert per_cell == Decimal("0.5")
    run_to(first, 3, 0.7, state=S.SUCCEEDED)
    # It ran 20 minutes: 1/3 GPU-hour spent, so another cell's worst case (1/2) passes 0.75.
    Job.objects.filter(pk=first.pk).update(gpu_seconds=1200, finished_at=timezone.now())
    sweep_advance(sweep_id=sweep.pk)

    assert sweep.jobs.count() == 1  # nothing more drawn
    assert not sweep.jobs.exclude(state__in=Job.FINAL).exists()
    assert sweep_finished_now(sweep)


def sweep_finished_now(sweep) -> bool:
    from launcher.sweep_selectors import sweep_counts, sweep_finished

    return sweep_finished(sweep, sweep_counts(sweep))
