"""The whole loop from a terminal, as issue 23 asks: log in, see the allocation, launch the
job with --follow on the local backend until it exits 0, read its logs; a launch over the
allocation's limit exits 3 with the portal's reason; --json prints the API's objects."""

from __future__ import annotations

import stat
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import Allocation
from portal.tokens.services import account_token_create
from tests.factories import charge
from tests.launcher.local_fixtures import QUICK

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

QUICK_ARGS = [
    "--model",
    QUICK["model"],
    "--epochs",
    str(QUICK["epochs"]),
    "--wall-time",
    "10",
    *[
        a
        for k in ("size", "synthetic_n", "threads", "bootstrap", "progress_every")
        for a in ("--param", f"{k}={QUICK[k]}")
    ],
]


def api_as(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {account_token_create(user=user)[1]}")
    return client


def test_login_launch_follow_logs_and_a_refusal(cli, monitor, local_allocation, researcher):
    login = cli("login", "--url", cli.url, "--username", "rosalind", "--password", "pw-for-tests")
    assert login.code == 0, login.err
    assert stat.S_IMODE(cli.config.stat().st_mode) == 0o600
    assert "rosalind" in cli("whoami").out

    listed = cli("allocations")
    assert listed.code == 0 and f"{local_allocation.pk}" in listed.out and "10.0" in listed.out

    estimate = cli(
        "jobs", "launch", "--allocation", str(local_allocation.pk), *QUICK_ARGS, "--estimate"
    )
    assert estimate.code == 0, estimate.err
    assert "0.17 GPU-hours" in estimate.out and "it fits" in estimate.out  # 10 min x 1 GPU

    run = cli("jobs", "launch", "--allocation", str(local_allocation.pk), *QUICK_ARGS, "--follow")
    assert run.code == 0, run.err
    assert "succeeded" in run.out and "epoch 1/1" in run.out
    job_id = int(run.err.split("Launched job ")[1].split(":")[0])
    assert f"job {job_id}: running" in run.err  # the states it went through, as they came

    job = api_as(researcher).get(f"/api/v1/jobs/{job_id}/").json()
    assert job["state"] == "succeeded"
    logs = cli("jobs", "logs", str(job_id))
    assert logs.code == 0 and logs.out.strip()
    assert logs.out.strip() in api_as(researcher).get(f"/api/v1/jobs/{job_id}/log/").json()["log"]
    followed = cli("jobs", "logs", str(job_id), "--follow")
    assert followed.code == 0 and followed.out == logs.out

    # 10 GPU-hours granted; 12 hours of wall time on one GPU cannot fit: 409, exit 3.
    refused = cli("jobs", "launch", "--allocation", str(local_allocation.pk), "--wall-time", "720")
    assert refused.code == 3
    assert "Refused by the portal" in refused.err and "GPU-hours" in refused.err
    assert "are left on the allocation" in refused.err
    assert api_as(researcher).get("/api/v1/jobs/").json()["count"] == 1  # nothing launched

    cancelled = cli("jobs", "cancel", str(job_id))
    assert cancelled.code == 3 and "succeeded" in cancelled.err  # a finished job


def test_json_is_the_apis_objects(cli, local_allocation, researcher):
    _, key = account_token_create(user=researcher)
    env = {"PORTAL_URL": cli.url, "PORTAL_TOKEN": key}
    api = api_as(researcher)
    allocations = cli("allocations", "--json", **env)
    assert allocations.code == 0, allocations.err
    assert allocations.json() == api.get("/api/v1/allocations/").json()["results"]

    launched = cli(
        "jobs", "launch", "--allocation", str(local_allocation.pk), *QUICK_ARGS, "--json", **env
    )
    assert launched.code == 0, launched.err
    job = launched.json()
    assert job["params"]["model"] == QUICK["model"] and job["params"]["size"] == QUICK["size"]
    cancelled = cli("jobs", "cancel", str(job["id"]), "--json", **env)
    assert cancelled.code == 0 and cancelled.json()["state"] == "cancelled"
    assert (
        cli("jobs", "show", str(job["id"]), "--json", **env).json()
        == api.get(f"/api/v1/jobs/{job['id']}/").json()
    )
    assert cli("jobs", "list", "--json", **env).json() == api.get("/api/v1/jobs/").json()["results"]
    usage = cli("usage", str(local_allocation.pk), "--json", **env).json()
    assert usage["allocation"] == api.get(f"/api/v1/allocations/{local_allocation.pk}/").json()
    assert usage["usage"] == api.get(f"/api/v1/allocations/{local_allocation.pk}/usage/").json()
    me = cli("whoami", "--json", **env).json()
    assert me["username"] == "rosalind" and me["auth"] == "token"

    too_big = cli(
        "jobs",
        "launch",
        "--allocation",
        str(local_allocation.pk),
        "--wall-time",
        "720",
        "--estimate",
        "--json",
        **env,
    )
    assert (
        too_big.code == 3
        and too_big.json()
        == api.post(
            "/api/v1/jobs/estimate/",
            {"allocation": local_allocation.pk, "params": {}, "wall_time_minutes": 720},
            format="json",
        ).json()
    )
    assert too_big.json()["fits"] is False and too_big.json()["source"] == "wall-time"
    refused = cli(
        "jobs",
        "launch",
        "--allocation",
        str(local_allocation.pk),
        "--wall-time",
        "720",
        "--json",
        **env,
    )
    assert refused.code == 3
    assert refused.json()["status"] == 409 and refused.json()["error"]["remaining_gpu_hours"] <= 10


def test_usage_errors_exit_2(cli, local_allocation, researcher):
    _, key = account_token_create(user=researcher)
    env = {"PORTAL_URL": cli.url, "PORTAL_TOKEN": key}
    assert cli("jobs", "launch", **env).code == 2  # --allocation is required
    bad = cli("jobs", "launch", "--allocation", str(local_allocation.pk), "--epochs", "0", **env)
    assert bad.code == 2 and "params.epochs" in bad.err
    assert cli("jobs", "show", "999999", **env).code == 2
    assert (
        cli("sweeps", "launch", "--allocation", "1", "--grid", "/nonexistent.yaml", **env).code == 2
    )


def test_usage_reads_money_as_decimal_strings(cli, local_allocation, researcher):
    """The API gives money as decimal strings; the CLI reads them exactly (no float)."""
    Allocation.objects.filter(pk=local_allocation.pk).update(budget=Decimal("20.00"))
    charge(
        allocation=local_allocation,
        source="local",
        external_id="cli-money",
        period_start=timezone.now(),
        period_end=timezone.now(),
        gpu_seconds=9,
        cost=Decimal("1.2350"),
    )
    _, key = account_token_create(user=researcher)
    env = {"PORTAL_URL": cli.url, "PORTAL_TOKEN": key}
    shown = cli("usage", str(local_allocation.pk), **env)
    assert shown.code == 0, shown.err
    assert "Budget 20.00: spent 1.24, reserved 0.00, left 18.77" in shown.out  # half up
    as_json = cli("usage", str(local_allocation.pk), "--json", **env).json()
    assert as_json["allocation"]["spend"] == "1.2350"
    assert as_json["allocation"]["budget_remaining"] == "18.7650"
    assert as_json["usage"]["daily"][0]["cost"] == "1.2350"
