"""A client generated from the live OpenAPI document (openapi-python-client) imports and runs a
researcher's whole trial-to-job flow: token, trial request (auto-approved), active allocation,
a launched job with its estimate. If the document lied about a shape, the generated models
would fail to parse the answers."""

from __future__ import annotations

import datetime as dt
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.utils import timezone

from tests.portal.api_server import seeded_portal  # noqa: F401  (fixture)

pytestmark = [pytest.mark.django_db(transaction=True)]

BIN = Path(sys.executable).parent
PACKAGE = "portal_client"


def generate_client(schema_url: str, where: Path) -> None:
    """Generate the client package `portal_client` into the folder `where`."""
    schema = where / "openapi.json"
    schema.write_bytes(requests.get(schema_url, timeout=60).content)
    out = where / PACKAGE
    # ruff must be on PATH: the generator formats its output with it.
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    result = subprocess.run(
        [
            str(BIN / "openapi-python-client"),
            "generate",
            "--path",
            str(schema),
            "--output-path",
            str(out),
            "--meta",
            "none",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    assert (out / "__init__.py").exists()


@pytest.mark.parametrize("seeded_portal", [{"eager": True}], indirect=True)
def test_a_generated_client_runs_the_trial_to_job_flow(seeded_portal, tmp_path):  # noqa: F811
    generate_client(f"{seeded_portal.url}/api/v1/schema/?format=json", tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        run_flow(seeded_portal, package=importlib.import_module(PACKAGE))
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def run_flow(portal, package) -> None:
    from portal_client.api.allocations import allocations_retrieve
    from portal_client.api.auth import auth_token_create
    from portal_client.api.jobs import jobs_cancel_create, jobs_create
    from portal_client.api.requests import requests_create
    from portal_client.models import (
        JobOut,
        LaunchInputRequest,
        RequestInputRequest,
        TokenInputRequest,
        TrainParamsRequest,
    )

    anonymous = package.Client(base_url=portal.url, raise_on_unexpected_status=True)
    token = auth_token_create.sync(
        client=anonymous, body=TokenInputRequest(username="rosalind", password="pw-for-tests")
    )
    client = package.AuthenticatedClient(
        base_url=portal.url, token=token.token, prefix="Token", raise_on_unexpected_status=True
    )

    today = timezone.localdate()
    trial = requests_create.sync(
        client=client,
        body=RequestInputRequest.from_dict(
            {
                "project": portal.project_id,
                "facility": portal.facility,
                "kind": "trial",
                "gpu_hours": 50,
                "start_date": today.isoformat(),
                "end_date": (today + dt.timedelta(days=30)).isoformat(),
                "data_sensitivity": "public",
                "justification": "Scoping DenseNet-121 on chest CT.",
                "submit": True,
            }
        ),
    )
    assert trial.status.value == "approved" and trial.reviewed_by is None
    allocation = allocations_retrieve.sync(client=client, id=trial.allocation)
    assert allocation.status.value == "active" and allocation.gpu_hours_remaining == 50

    response = jobs_create.sync_detailed(
        client=client,
        body=LaunchInputRequest(
            allocation=allocation.id,
            gpus=1,
            wall_time_minutes=30,
            params=TrainParamsRequest.from_dict({"model": "resnet18", "epochs": 1}),
        ),
    )
    assert response.status_code == 201
    job = response.parsed
    assert isinstance(job, JobOut)
    assert float(job.estimate_gpu_hours) == 0.5  # 1 GPU x 30 minutes, nothing measured
    assert job.estimate_source == "wall-time" and float(job.estimate_cost) == 0.25
    # Leave nothing running (a local runner, where one is registered, would start it).
    jobs_cancel_create.sync_detailed(client=client, id=job.id)
