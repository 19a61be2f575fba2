"""A sweep on the real Slurm: one job array with a concurrency limit, every cell trained, and a
leaderboard of mean cross-validated metrics with intervals from the API."""

from __future__ import annotations

import pytest

from launcher import services
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from tests.launcher.slurm_fixtures import TINY, slurm_allocation, slurm_facility  # noqa: F401
from tests.launcher.test_slurm_jobs import jobs_named
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db


def test_a_sweep_is_one_array_and_ranks_its_combinations(slurm_allocation, researcher, api, client):
    params = {k: v for k, v in TINY.items() if k not in ("wall_time_minutes", "model", "epochs")}
    grid = {
        "models": ["resnet18"],
        "lrs": [0.001],
        "lr_steps": [5],
        "weight_decays": [0.0],
        "folds": 2,
        "fixed": {"epochs": 1, "size": 32, "bootstrap": 50, "batch_size": 8},
    }
    sweep = services.sweep_launch(
        by=researcher,
        allocation=slurm_allocation,
        grid=grid,
        gpus=1,
        wall_time_minutes=5,
        params=params,
        concurrency=2,
    )
    services.sweep_submit(sweep_id=sweep.pk)
    cells = list(sweep.jobs.order_by("array_index"))
    assert [c.array_index for c in cells] == [0, 1]
    assert {c.scheduler_id for c in cells} == {cells[0].scheduler_id}
    array = cells[0].scheduler_id
    names = jobs_named(slurm_backend.slurm_client(slurm_allocation.facility), sweep.token)
    assert names and {n.split("_")[0] for n in names} == {array}  # one array job for the sweep

    # Done = every cell final and, when it succeeded, its metrics.json read: that is what the
    # leaderboard below needs. (Waiting for final states alone raced the one read of the files
    # at the moment a cell finished: a failed read left the cell without metrics for good.)
    def finished():
        services.jobs_poll(facility_id=slurm_allocation.facility_id)
        return all(
            c.state in Job.FINAL and (c.state != "succeeded" or c.metrics) for c in sweep.jobs.all()
        )

    wait_for(finished, timeout=300, every=1, what="both cells and their metrics")

    assert set(sweep.jobs.values_list("state", flat=True)) == {"succeeded"}, list(
        sweep.jobs.values_list("log_tail", flat=True)
    )
    # A read that failed when the cell finished is made up by a later poll.
    Job.objects.filter(pk=cells[1].pk).update(metrics=None)
    assert slurm_allocation.facility_id in services.facilities_with_live_jobs()
    services.jobs_poll(facility_id=slurm_allocation.facility_id)
    assert Job.objects.get(pk=cells[1].pk).metrics["patient"]["accuracy"]["value"] is not None
    body = api.as_user(researcher).get(f"/api/v1/sweeps/{sweep.pk}/").json()
    assert body["counts"]["succeeded"] == 2 and body["size"] == 2
    [row] = body["leaderboard"]
    assert row["model"] == "resnet18" and row["folds_done"] == 2
    assert row["accuracy"]["n"] == 2 and row["accuracy"]["mean"] is not None
    assert len(row["accuracy"]["ci"]) == 2
    client.force_login(researcher)
    page = client.get(f"/sweeps/{sweep.pk}/")
    assert page.status_code == 200 and b"leaderboard" in page.content
