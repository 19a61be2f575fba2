"""ASHA on cloud workers: a sweep with early stopping posted to the API trains its cells on spot
workers one at a time; the second configuration trains exactly as the first up to the rung (its
LR step comes after the last epoch), so it is not better at epoch 1 (a tie goes to the earlier
arrival) and is outside the top 1 of 2: it ends `stopped_early`, its task is cancelled and its worker
terminated (what the cloud backend's cancel does), and its reservation is released at once."""

from __future__ import annotations

import pytest

from allocations.models import Allocation
from launcher.cloud.models import CloudTask, Node
from launcher.cloud.tasks import sync_all
from launcher.models import Job
from launcher.tasks import poll_jobs
from tests.cloud.conftest import TRAINS_TO_END
from tests.cloud.test_jobs_api import PARAMS
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _beat() -> None:
    sync_all()
    poll_jobs()  # polls the workers' files, then advances staged sweeps


def test_asha_stops_a_configuration_no_better_at_its_rung_on_a_cloud_worker(
    api, researcher, allocation, cluster, emulator
):
    params = {k: v for k, v in PARAMS.items() if k not in ("model", "lr", "epochs", "size")}
    grid = {
        "models": ["resnet18"],
        "lrs": [1e-3],
        "lr_steps": [6, 7],
        "weight_decays": [0.0],
        "folds": 1,
        # Enough epochs after the rung for the beat to see epoch 1 before the cell ends.
        "fixed": {"epochs": 5, "size": 32},
        "early_stopping": {"method": "asha", "eta": 3, "min_epochs": 1},
    }
    response = api.as_user(researcher).post(
        "/api/v1/sweeps/",
        {
            "allocation": allocation.pk,
            "gpus": 1,
            "wall_time_minutes": 30,
            "concurrency": 1,
            "grid": grid,
            "params": params,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    sweep_id = response.json()["id"]
    first, second = Job.objects.filter(sweep_id=sweep_id).order_by("array_index")
    assert not first.held and second.held
    seen: dict[str, object] = {}

    def settled() -> bool:
        second.refresh_from_db()
        if second.state == Job.State.STOPPED_EARLY and "reserved" not in seen:
            seen["reserved"] = Allocation.objects.get(pk=allocation.pk).cost_reserved
        return all(j.state in Job.FINAL for j in Job.objects.filter(sweep_id=sweep_id))

    wait_for(settled, step=_beat, timeout=2 * TRAINS_TO_END, every=1.0, what="the sweep's end")

    first.refresh_from_db()
    assert first.state == Job.State.SUCCEEDED, first.state_reason
    assert second.state == Job.State.STOPPED_EARLY and second.rung == 0
    assert 1 <= second.stopped_at_epoch < 5
    assert seen["reserved"] == 0  # nothing else live: its reservation went when it stopped
    task = CloudTask.objects.get(job_id=second.pk)
    assert task.state == CloudTask.State.CANCELLED
    node = task.node
    assert node is not None
    node.refresh_from_db()
    assert node.state in (Node.State.STOPPING, *Node.GONE), node.state
