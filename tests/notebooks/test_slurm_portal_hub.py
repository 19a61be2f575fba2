"""A Slurm notebook session through the portal and the portal's own hub (nbhub's `hub` fixture:
launcher/notebooks/hub/jupyterhub_config.py signed on to the live test portal, PortalSpawner
handing "backend": "slurm" to SlurmNotebookSpawner), on the real Slurm of `make services`."""

from __future__ import annotations

import pytest

from allocations.models import UsageRecord
from launcher.notebooks import sync
from launcher.notebooks.models import NotebookSession
from tests.factories import NodeTypeFactory
from tests.notebooks.test_slurm_sessions import allocation, facility, sacct, services_env, squeue  # noqa: F401  (fixtures)
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def hub_extra_env():
    return {"JUPYTERHUB_START_TIMEOUT": "300"}  # a Slurm start includes its wait in the queue


def test_through_the_portal_a_slurm_session_is_charged_saccts_elapsed_times_its_gpus(
    api, hub, settings, allocation, researcher
):  # noqa: F811
    """The API opens a session (tasks run eagerly after each commit), the beat task's sync
    sees it running, the API stops it, and the charge is sacct's record of the job, once."""
    settings.JUPYTERHUB_URL, settings.JUPYTERHUB_API_TOKEN = hub.url, hub.api_token
    settings.CELERY_TASK_ALWAYS_EAGER = True
    allocation.node_type = NodeTypeFactory(
        facility=allocation.facility, name="vm-gpu", accelerators_per_node=2
    )
    allocation.save()
    client = api.as_user(researcher)
    response = client.post(
        "/api/v1/notebooks/", {"allocation": allocation.pk, "gpus": 2, "hours": 1}, format="json"
    )
    assert response.status_code == 201, response.json()
    pk = response.json()["id"]

    def synced(check):
        sync.notebook_sync_all()
        session = NotebookSession.objects.get(pk=pk)
        return session if check(session) else None

    wait_for(lambda: synced(lambda s: s.state == "running"), timeout=180, what="running")
    job_id = hub.server(researcher.username, f"nb-{pk}")["state"]["child_state"]["job_id"]
    assert squeue(allocation, job_id).startswith(f"{allocation.account_name}|")

    assert client.post(f"/api/v1/notebooks/{pk}/stop/").status_code == 200
    session = wait_for(
        lambda: synced(lambda s: s.charged_at is not None), timeout=180, what="the charge"
    )
    record = sacct(allocation, job_id)
    assert record["state"] == "CANCELLED" and "gres/gpu=2" in record["tres"]
    assert session.gpu_seconds == int(record["elapsed"]) * 2 and session.external_id == job_id
    charge = UsageRecord.objects.get(allocation=allocation)
    assert (charge.source, charge.gpu_seconds) == ("slurm", int(record["elapsed"]) * 2)
