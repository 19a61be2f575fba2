"""A newcomer's first hour has no dead end (issue 22): the trial form pre-fills what the policy
allows and states the cap; a facility with one node type (`local`: `local-cpu`) pre-selects it
on the form and in the service, so launches are predicted from the first click; the default
wall time is the prediction times a stated margin, on the form and in the API."""

from __future__ import annotations

import math
from decimal import ROUND_UP, Decimal

import pytest

from allocations.demo import seed_catalogue
from allocations.forms import RequestForm, initial_from_query
from allocations.models import Allocation, AllocationRequest, Facility, NodeType
from benchmarks import catalogue
from benchmarks.demo import _workload
from launcher import estimates
from launcher import params as P
from launcher.estimates import default_wall_time, estimate_run
from launcher.forms import LaunchForm, SweepForm
from launcher.models import Job

pytestmark = [pytest.mark.django_db]


@pytest.fixture
def local(db) -> Facility:
    seed_catalogue()
    for w in catalogue.WORKLOADS:
        _workload(w)
    return Facility.objects.get(slug="local")


def rendered_values(form) -> dict:
    """What the unbound form puts in its fields: what a browser posts when nobody edits them."""
    out = {}
    for name in form.fields:
        value = form[name].value()
        if value not in (None, ""):
            out[name] = value.isoformat() if hasattr(value, "isoformat") else value
    return out


def test_the_trial_form_prefills_the_cap_and_the_only_node_type(client, researcher, project, local):
    client.force_login(researcher)
    page = client.get("/requests/new/?facility=local&kind=trial").content.decode()

    only = NodeType.objects.get(facility=local)
    assert only.name == "local-cpu"
    assert f'name="gpu_hours" value="{local.trial_gpu_hours_cap}"' in page
    assert f'<option value="{only.pk}" selected>' in page
    assert (
        f"A trial on {local.name} is capped at {local.trial_gpu_hours_cap} CPU-hours and "
        f"{local.trial_days} days."
    ) in page

    # The README's words: pick the project, write a sentence, "Submit request"; nothing else.
    form = RequestForm(
        initial=initial_from_query({"facility": "local", "kind": "trial"}, researcher),
        user=researcher,
    )
    body = {
        **rendered_values(form),
        "project": project.pk,
        "submit_request": "",
        "justification": "Trying the CT classifier before a cluster.",
    }
    response = client.post("/requests/new/", body, follow=True)

    request = AllocationRequest.objects.get()
    assert response.status_code == 200 and request.status == "approved", response.content.decode()
    assert request.gpu_hours == local.trial_gpu_hours_cap and request.node_type == only


def test_the_service_names_a_facilitys_only_node_type(api, researcher, project, local, dates):
    response = api.as_user(researcher).post(
        "/api/v1/requests/",
        {
            "project": project.pk,
            "facility": "local",
            "kind": "trial",
            "gpu_hours": 5,
            "justification": "A first try.",
            **dates,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert AllocationRequest.objects.get().node_type.name == "local-cpu"


def test_the_default_wall_time_is_the_prediction_with_its_margin(researcher, project, local):
    # No node type on the allocation: the facility's only one is the basis.
    allocation = Allocation.objects.create(
        project=project,
        facility=local,
        gpu_hours=10,
        start_date=project.created_at.date(),
        end_date=project.created_at.date().replace(year=2100),
        status="active",
        kind="trial",
    )
    estimate = estimate_run(
        allocation=allocation,
        params=P.with_defaults({}),
        gpus=1,
        wall_time_minutes=P.DEFAULT_WALL_TIME_MINUTES,
    )
    assert estimate.source != "wall-time", estimate.basis
    # The prediction's basis counts the workstation's unit: a CPU (its cores), not a GPU.
    assert "batch 16, 1 CPU (2 cores), x 8 epochs" in estimate.basis, estimate.basis
    assert "GPU" not in estimate.basis.replace("GPU-hours", ""), estimate.basis
    predicted_minutes = float(estimate.predicted_hours) * 60
    expected = max(P.WALL_TIME_FLOOR_MINUTES, math.ceil(predicted_minutes * P.WALL_TIME_MARGIN))

    form = LaunchForm(allocation=allocation)
    assert form.fields["wall_time_minutes"].initial == expected
    assert f"{P.WALL_TIME_MARGIN}x the predicted" in form.fields["wall_time_minutes"].help_text
    sweep = SweepForm(allocation=allocation)
    assert f"{P.WALL_TIME_MARGIN}x the predicted" in sweep.fields["wall_time_minutes"].help_text
    # The reservation is the limit (wall time x GPUs), not the prediction.
    assert estimate.gpu_hours == Decimal(P.DEFAULT_WALL_TIME_MINUTES) / 60
    assert estimate.predicted_hours < Decimal("0.5")


def test_an_api_launch_without_a_wall_time_gets_the_predicted_one(api, researcher, project, local):
    allocation = Allocation.objects.create(
        project=project,
        facility=local,
        gpu_hours=10,
        start_date=project.created_at.date(),
        end_date=project.created_at.date().replace(year=2100),
        status="active",
        kind="trial",
        account_name="fh-1",
    )
    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {"allocation": allocation.pk}, format="json"
    )
    assert response.status_code == 201, response.json()
    job = Job.objects.get()
    wanted = default_wall_time(allocation=allocation, params=P.with_defaults({}), gpus=1)
    assert job.wall_time_minutes == wanted.minutes != P.DEFAULT_WALL_TIME_MINUTES
    # It reserves that limit: the predicted time's margin is what keeps it small.
    assert job.estimate_gpu_hours == (Decimal(wanted.minutes) / 60).quantize(
        Decimal("0.001"), rounding=ROUND_UP
    )


def test_the_launch_service_defaults_the_wall_time_from_its_one_prediction(
    api, researcher, project, local, monkeypatch
):
    """The API passes no wall time on; `job_launch` predicts once and uses that one prediction
    for the default wall time and for the estimate beside it."""
    allocation = Allocation.objects.create(
        project=project,
        facility=local,
        gpu_hours=10,
        start_date=project.created_at.date(),
        end_date=project.created_at.date().replace(year=2100),
        status="active",
        kind="trial",
        account_name="fh-2",
    )
    wanted = default_wall_time(allocation=allocation, params=P.with_defaults({}), gpus=1)
    predictions = []
    real = estimates.job_prediction
    monkeypatch.setattr(
        estimates, "job_prediction", lambda **kw: predictions.append(kw) or real(**kw)
    )
    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {"allocation": allocation.pk}, format="json"
    )
    assert response.status_code == 201, response.json()
    assert len(predictions) == 1
    job = Job.objects.get()
    assert job.wall_time_minutes == wanted.minutes
    assert job.predicted_hours is not None
