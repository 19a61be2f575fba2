"""ASHA on real backends: the local processes and the Slurm of `make services`. A sweep of two
configurations, one cell at a time (so they reach the rung in order): the first goes on; the
second trains exactly as the first up to the rung (only its LR step, after the last epoch,
differs; training is deterministic), so it is not better at epoch 1, is outside the top 1 of 2
(a tie goes to the earlier arrival, whatever the machine's arithmetic) and stops. It ends `stopped_early` with its epoch and rung, its reservation is released the moment
it stops, it is charged what it ran from the backend's own records (the local supervisor's
wall time; Slurm's sacct), and the leaderboard and API say how far each configuration went."""

from __future__ import annotations

import pytest

from allocations.models import Allocation, UsageRecord
from launcher import services
from launcher.models import Job
from tests.launcher.local_fixtures import QUICK, jobs_dir, local_allocation, local_facility  # noqa: F401
from tests.launcher.slurm_fixtures import TINY, slurm_allocation, slurm_facility  # noqa: F401
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db
S = Job.State
# Long enough that the judge, polling every second or so, sees the rung (epoch 1) well before the
# second cell could finish: with 3 epochs a loaded machine once saw it only after its last epoch.
# An eta above the epochs keeps one rung, at epoch 1.
EPOCHS, ETA = 8, 9


def grid(fixed: dict) -> dict:
    return {
        "models": ["resnet18"],
        "lrs": [1e-3],
        # Steps past the last epoch: both configurations train identically up to the rung.
        "lr_steps": [EPOCHS + 2, EPOCHS + 3],
        "weight_decays": [0.0],
        "folds": 1,
        "fixed": {**fixed, "epochs": EPOCHS, "deterministic": True},
        "early_stopping": {"method": "asha", "eta": ETA, "min_epochs": 1},
    }


def run(allocation: Allocation, researcher, params: dict, *, timeout: float) -> None:
    params = {k: v for k, v in params.items() if k not in ("wall_time_minutes", "epochs")}
    fixed = {k: params.pop(k) for k in ("size", "bootstrap", "threads") if k in params}
    sweep = services.sweep_launch(
        by=researcher,
        allocation=allocation,
        grid=grid(fixed),
        gpus=1,
        wall_time_minutes=10,
        params=params,
        concurrency=1,
    )
    per_cell = sweep.cell_estimate_gpu_hours * 3600
    first, second = sweep.jobs.order_by("array_index")
    assert not first.held and second.held
    assert Allocation.objects.get(pk=allocation.pk).gpu_seconds_reserved == per_cell
    seen: dict[str, int] = {}

    def settled() -> bool:
        services.sweep_submit(sweep_id=sweep.pk)  # what the released batch's task does
        services.jobs_poll(facility_id=allocation.facility_id)  # polls, then advances
        second.refresh_from_db()
        reserved = Allocation.objects.get(pk=allocation.pk).gpu_seconds_reserved
        if second.state == S.STOPPED_EARLY and "stopped" not in seen:
            seen["stopped"] = reserved
        return all(c.state in Job.FINAL for c in sweep.jobs.all())

    wait_for(settled, timeout=timeout, every=1, what="the sweep's cells to end")

    first.refresh_from_db()
    second.refresh_from_db()
    assert first.state == S.SUCCEEDED, first.log_tail
    assert second.state == S.STOPPED_EARLY, (second.state, second.state_reason, second.progress)
    assert second.rung == 0 and 1 <= second.stopped_at_epoch < EPOCHS
    # Released when it stopped: nothing else was live (one cell at a time, none left held).
    assert seen["stopped"] == 0

    def charged() -> bool:
        services.usage_ingest(allocation=allocation)
        return UsageRecord.objects.filter(job_id=second.pk).exists()

    wait_for(charged, timeout=120, every=2, what="the stopped cell's charge")
    record = UsageRecord.objects.get(job_id=second.pk)
    first_record = UsageRecord.objects.filter(job_id=first.pk).first()
    assert 0 < record.gpu_seconds
    if first_record is not None:  # it ran all its epochs; the stopped one did not
        assert record.gpu_seconds < first_record.gpu_seconds + 60

    board = {row["lr_step"]: row for row in services_board(sweep)}
    assert board[EPOCHS + 3]["stopped_at_rung"] == 0 and board[EPOCHS + 2]["furthest_rung"] == 0


def services_board(sweep):
    from launcher.sweep_selectors import sweep_leaderboard

    sweep.refresh_from_db()
    return sweep_leaderboard(sweep)


def test_asha_stops_a_configuration_no_better_at_its_rung_on_local_processes(
    local_allocation, researcher
):
    run(local_allocation, researcher, dict(QUICK), timeout=300)


def test_asha_stops_a_configuration_no_better_at_its_rung_on_slurm(slurm_allocation, researcher):
    run(slurm_allocation, researcher, dict(TINY), timeout=400)
