"""A facility without GPUs says so: its forms and pages count CPUs and CPU-hours, a GPU facility's
GPUs and GPU-hours (issue 39: the `local` workstation, a 2-core machine with no GPU, asked for
"GPU hours", "1 GPU" and notebooks of "1 GPU for 2 h")."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from allocations.units import GPU, unit_of
from tests.factories import FacilityFactory, NodeTypeFactory, charge, open_job

pytestmark = pytest.mark.django_db


def _allocation(project, facility) -> Allocation:
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        node_type=facility.node_types.first(),
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name=f"acct-{facility.slug}",
    )


@pytest.fixture
def workstation(db):
    """The `local` facility as the demo seeds it: one CPU node type, 2 cores, one slot."""
    facility = FacilityFactory(
        slug="workstation", name="Local workstation", kind="local", backend="local"
    )
    NodeTypeFactory(
        facility=facility,
        name="local-cpu",
        accelerator="CPU",
        device="cpu",
        cpu_cores=2,
        accelerators_per_node=1,
        max_accelerators=1,
    )
    return facility


@pytest.fixture
def gpu_cluster(db):
    facility = FacilityFactory(slug="gpu-cluster", name="GPU cluster", backend="local")
    NodeTypeFactory(facility=facility, name="A100x4", accelerators_per_node=4, cpu_cores=32)
    return facility


def test_the_unit_follows_the_node_types(workstation, gpu_cluster):
    cpu = workstation.unit
    assert (cpu.key, cpu.hours, cpu.seconds, cpu.count(1)) == (
        "cpu",
        "CPU-hours",
        "CPU-seconds",
        "1 CPU (2 cores)",
    )
    assert gpu_cluster.unit == GPU and GPU.count(2) == "2 GPUs" and GPU.hours == "GPU-hours"
    assert unit_of([]) == GPU  # no catalogue yet: the portal's premise
    mixed = [*workstation.node_types.all(), *gpu_cluster.node_types.all()]
    assert unit_of(mixed) == GPU  # any GPU node type: the ledger counts its GPUs


def test_the_request_form_asks_for_the_facilitys_hours(
    client, researcher, workstation, gpu_cluster
):
    client.force_login(researcher)

    cpu_page = client.get("/requests/new/?facility=workstation&kind=trial").content.decode()
    gpu_page = client.get("/requests/new/?facility=gpu-cluster&kind=trial").content.decode()

    assert re.search(r'<label for="id_gpu_hours">CPU-hours requested', cpu_page)
    assert "capped at 400 CPU-hours and 90 days" in cpu_page
    assert "one CPU here is 2 cores of a node for one process" in cpu_page
    assert re.search(r'<label for="id_gpu_hours">GPU-hours requested', gpu_page)
    assert "capped at 400 GPU-hours and 90 days" in gpu_page
    # The page's script relabels the field when another facility is chosen: the server's words.
    units = json.loads(
        re.search(
            r'<script id="facility-units" type="application/json">(.*?)</script>', cpu_page
        ).group(1)
    )
    assert units["workstation"]["label"] == "CPU-hours requested" and units["workstation"]["cpu"]
    assert units["gpu-cluster"]["label"] == "GPU-hours requested"
    assert not units["gpu-cluster"]["cpu"]


def test_a_trial_over_the_cap_is_refused_in_the_facilitys_hours(
    client, researcher, project, workstation
):
    client.force_login(researcher)
    page = client.post(
        "/requests/new/",
        {
            "project": project.pk,
            "facility": "workstation",
            "kind": "trial",
            "purpose": "new",
            "gpu_hours": "401",
            "cpu_hours": "0",
            "start_date": timezone.localdate().isoformat(),
            "end_date": (timezone.localdate() + dt.timedelta(days=30)).isoformat(),
            "data_sensitivity": "public",
            "justification": "Try the trainer on the workstation.",
        },
    ).content.decode()
    assert "A trial on Local workstation is capped at 400 CPU-hours; you asked for 401." in page


def test_a_cpu_allocations_page_and_forms_count_cpus_and_cpu_hours(
    client, researcher, project, workstation
):
    allocation = _allocation(project, workstation)
    charge(allocation=allocation, source="local", external_id="u1", gpu_seconds=720)
    client.force_login(researcher)

    page = client.get(f"/allocations/{allocation.pk}/").content.decode()

    grant = page[page.index('id="h-grant"') : page.index('id="h-charts"')]
    assert "10 CPU-hours" in grant and "720 CPU-seconds charged" in grant
    assert "CPU-hours for unfinished work" in grant and "CPU-hours <small>" in grant
    assert "GPU-" not in grant and " GPU " not in grant  # only "this facility has no GPUs"
    assert '<label for="id_gpus">CPUs' in page  # the job launch form
    assert '<label for="sweep_gpus">CPUs' in page  # the sweep form
    assert 'data-unit-hours="CPU-hours"' in page  # the sweep estimate's script
    assert "Ask for more CPU-hours" in page

    api = client.get(f"/api/v1/allocations/{allocation.pk}/").json()
    assert api["unit"] == {
        "key": "cpu",
        "singular": "CPU",
        "plural": "CPUs",
        "hours": "CPU-hours",
        "seconds": "CPU-seconds",
        "cores_each": 2,
    }
    assert api["gpu_seconds_used"] == 720  # the contract's field names, in the facility's unit

    job = open_job(
        allocation=allocation,
        created_by=researcher,
        token="portal-job-units",
        state="running",
        wall_time_minutes=30,
        gpus=1,
        params={"model": "resnet18", "epochs": 2, "dataset": "synthetic-ct"},
    )
    job_page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "<dt>CPUs, wall time</dt>" in job_page and "1 CPU, 30 min" in job_page
    assert "CPU-hours (wall time x CPUs;" in job_page and "GPU-hours" not in job_page


def test_a_gpu_allocations_page_counts_gpus_and_gpu_hours(client, researcher, project, gpu_cluster):
    allocation = _allocation(project, gpu_cluster)
    charge(allocation=allocation, source="local", external_id="u2", gpu_seconds=720)
    client.force_login(researcher)

    page = client.get(f"/allocations/{allocation.pk}/").content.decode()

    grant = page[page.index('id="h-grant"') : page.index('id="h-charts"')]
    assert "10 GPU-hours" in grant and "720 GPU-seconds charged" in grant
    assert "CPU" not in grant
    assert '<label for="id_gpus">GPUs' in page and '<label for="sweep_gpus">GPUs' in page
    assert client.get(f"/api/v1/allocations/{allocation.pk}/").json()["unit"]["key"] == "gpu"
    facilities = {f["slug"]: f for f in client.get("/api/v1/facilities/").json()["results"]}
    assert facilities["gpu-cluster"]["unit"]["hours"] == "GPU-hours"


def test_the_usage_charts_count_the_facilitys_hours(project, workstation, gpu_cluster):
    from allocations.charts import burn_down_figure, daily_figure

    for facility, hours in ((workstation, "CPU-hours"), (gpu_cluster, "GPU-hours")):
        allocation = _allocation(project, facility)
        burn = burn_down_figure(allocation, [], None)
        daily = daily_figure(allocation, [])
        assert burn["layout"]["title"]["text"] == f"{hours} used against granted"
        assert burn["layout"]["yaxis"]["title"]["text"] == hours
        assert daily["layout"]["yaxis"]["title"]["text"] == hours


def test_the_usage_report_counts_each_facilitys_hours(
    client, admin, project, workstation, gpu_cluster
):
    from decimal import Decimal

    from tests.factories import charge

    cpu = _allocation(project, workstation)
    client.force_login(admin)
    charge(allocation=cpu, source="local", external_id="c1", gpu_seconds=5400, cost=Decimal(0))
    page = client.get("/reports/usage/").content.decode()
    assert "1.50 CPU-hours" in page and "GPU-hours" not in page

    gpu = _allocation(project, gpu_cluster)
    charge(allocation=gpu, source="slurm", external_id="g1", gpu_seconds=1800, cost=Decimal(0))
    body = client.get("/api/v1/reports/usage/").json()
    assert body["units"] == {"GPU-hours": 0.5, "CPU-hours": 1.5}
    assert body["unit_label"] == "Hours (GPU or CPU)"
    page = client.get("/reports/usage/").content.decode()
    assert "0.50 GPU-hours and 1.50 CPU-hours" in page


def test_a_report_before_any_charge_names_its_facilities_unit(client, pi, project, workstation):
    _allocation(project, workstation)
    client.force_login(pi)
    header = client.get("/reports/usage/").content.decode().split('id="report-totals">')[1]
    assert header.startswith("0.00 CPU-hours")


def test_a_cpu_facilitys_job_sizes_and_reservation_count_cpus(client, pi, project, workstation):
    from launcher.estimates import estimate_run
    from portal.reports.charts import sizes_figure
    from portal.reports.selectors import usage_report

    allocation = _allocation(project, workstation)
    basis = estimate_run(allocation=allocation, params={}, gpus=1, wall_time_minutes=30).basis
    assert "30 min wall time x 1 CPU;" in basis
    report = usage_report(pi)
    assert sizes_figure(report)["layout"]["title"]["text"] == "Jobs by size (CPUs)"


def test_a_cpu_facilitys_sweep_estimate_and_refusals_say_cpus(
    api, researcher, project, workstation
):
    """The sweep estimate's basis and the over-budget refusal named "GPUs" and "GPU-hours" on
    the workstation; they say CPUs and CPU-hours, with the hours by the pages' one rule."""
    allocation = _allocation(project, workstation)
    client = api.as_user(researcher)
    grid = {
        "models": ["resnet18"],
        "lrs": [0.001, 0.0001],
        "lr_steps": [5],
        "weight_decays": [0.0001],
        "folds": 2,
        "fixed": {"epochs": 4, "size": 64, "batch_size": 16},
    }
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 90, "grid": grid}

    response = client.post("/api/v1/sweeps/estimate/", body, format="json")
    assert response.status_code == 200, response.json()
    found = response.json()
    assert found["basis"] == (
        "4 cells x 1.50 CPU-hours per cell (1 CPU x 90 min wall time, the limit each cell is "
        "stopped at)"
    )

    refused = client.post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 720},
        format="json",
    )
    assert refused.status_code == 409
    assert "needs an estimated 12 CPU-hours but only 10 are left" in refused.json()["detail"]
    assert "GPU" not in refused.json()["detail"]

    too_many = client.post(
        "/api/v1/jobs/", {"allocation": allocation.pk, "gpus": 64}, format="json"
    ).json()
    assert too_many == {
        "gpus": [
            "Local workstation runs at most 1 CPU at a time, so a run needing 64 could never "
            "start there: ask for at most 1."
        ]
    }
