"""POST /api/v1/sweeps/: an explicit grid or the CLAIRE preset launches one queued job per cell
(201), bad fields are 400s named where the body has them, a grid beyond the GPU-hours left is a
409 with the numbers; sweeps/estimate/ gives the same total first, and the OpenAPI document
describes both bodies as objects with their fields and bounds."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job, Sweep
from tests.factories import FacilityFactory

pytestmark = [pytest.mark.django_db]
GRID = {
    "models": ["densenet121", "resnet18"],
    "lrs": [1e-3, 1e-4],
    "lr_steps": [5],
    "weight_decays": [1e-4],
    "folds": 3,
    "fixed": {"epochs": 4, "size": 64, "batch_size": 16},
}


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(slug="local-sweeps", backend="local", gpu_hour_rate=Decimal("0.50"))
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(20),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="sweeps-a1",
    )


def post(api, user, path="/api/v1/sweeps/", **body):
    return api.as_user(user).post(path, body, format="json")


def test_a_grid_launches_one_queued_job_per_cell(api, researcher, allocation):
    response = post(
        api,
        researcher,
        allocation=allocation.pk,
        gpus=1,
        wall_time_minutes=30,
        concurrency=2,
        grid=GRID,
        name="lr check",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    assert (
        body["size"] == 12 and body["concurrency"] == 2 and body["url"] == f"/sweeps/{body['id']}/"
    )
    assert Decimal(body["estimate_gpu_hours"]) == Decimal("6.000")  # 12 cells x 1 GPU x 0.5 h
    sweep = Sweep.objects.get(pk=body["id"])
    cells = list(sweep.jobs.order_by("array_index"))
    assert [c.state for c in cells] == ["queued"] * 12
    assert {(c.params["model"], c.params["lr"], c.params["fold"]) for c in cells} == {
        (m, lr, f) for m in GRID["models"] for lr in GRID["lrs"] for f in range(3)
    }
    assert all(c.params["synthetic_n"] == 300 and c.params["epochs"] == 4 for c in cells)


def test_the_claire_preset_is_one_word_and_is_checked_on_its_total(api, researcher, allocation):
    response = post(api, researcher, allocation=allocation.pk, grid={"preset": "claire"})

    assert response.status_code == 409
    assert response.json()["estimate_gpu_hours"] == 540.0  # 540 runs x 1 GPU x 60 min
    assert response.json()["remaining_gpu_hours"] == 20.0
    assert not Sweep.objects.exists() and not Job.objects.exists()

    Allocation.objects.filter(pk=allocation.pk).update(gpu_hours=Decimal(1000))
    response = post(
        api,
        researcher,
        allocation=allocation.pk,
        grid={"preset": "claire", "folds": 2},
        wall_time_minutes=10,
    )
    assert response.status_code == 201, response.json()
    assert response.json()["size"] == 216  # 4 x 3 x 3 x 3 x 2 folds


@pytest.mark.parametrize(
    "body, errors",
    [
        ({"grid": {**GRID, "models": ["vgg16"]}}, {"grid": {"models"}}),
        ({"grid": {**GRID, "lrs": []}}, {"grid": {"lrs"}}),
        ({"grid": {**GRID, "lrs": [0.001, 0.001]}}, {"grid": {"lrs"}}),
        ({"grid": {**GRID, "weight_decays": [1.5]}}, {"grid": {"weight_decays"}}),
        ({"grid": {**GRID, "folds": 40}}, {"grid": {"folds"}}),
        ({"grid": {**GRID, "fixed": {"epochs": 0}}}, {"grid": {"fixed"}}),
        ({"grid": {"preset": "imagenet"}}, {"grid": {"preset"}}),
        ({"grid": {**GRID, "folds": 6}, "params": {"synthetic_n": 24}}, {"grid": {"folds"}}),
        (
            {"grid": {**GRID, "fixed": {"batch_size": 64}}, "params": {"synthetic_n": 60}},
            {"grid": {"fixed"}},
        ),
        ({"grid": GRID, "params": {"synthetic_n": 3}}, {"params": {"synthetic_n"}}),
        ({"grid": GRID, "gpus": 0, "concurrency": 0}, {"gpus": None, "concurrency": None}),
        ({}, {"grid": None}),
    ],
)
def test_bad_fields_are_400s_where_the_body_has_them(api, researcher, allocation, body, errors):
    response = post(api, researcher, **{"allocation": allocation.pk, **body})

    assert response.status_code == 400, response.json()
    got = response.json()
    assert set(got) == set(errors)
    for key, inner in errors.items():
        if inner is not None:
            assert set(got[key]) == inner, got
    assert not Sweep.objects.exists() and not Job.objects.exists()


def test_the_jobs_api_path_for_sweeps_still_works(api, researcher, allocation):
    response = post(
        api,
        researcher,
        "/api/v1/jobs/",
        allocation=allocation.pk,
        workload="sweep",
        grid={**GRID, "models": ["resnet18"]},
        wall_time_minutes=10,
    )
    assert response.status_code == 201, response.json()
    assert response.json()["size"] == 6 and Sweep.objects.get().jobs.count() == 6


def test_the_estimate_says_its_total_and_basis_and_launches_nothing(api, researcher, allocation):
    response = post(
        api,
        researcher,
        "/api/v1/sweeps/estimate/",
        allocation=allocation.pk,
        grid=GRID,
        wall_time_minutes=30,
        gpus=2,
    )

    assert response.status_code == 200, response.json()
    e = response.json()
    assert e["cells"] == 12 and e["per_cell_gpu_hours"] == 1.0
    assert e["total_gpu_hours"] == 12.0 and e["currency"] == "USD"
    assert e["total_cost"] == "6.0000" and e["source"] == "wall-time"
    assert (
        e["basis"]
        == "12 cells x 1.00 GPU-hours per cell (2 GPUs x 30 min wall time, the limit each cell is stopped at)"
    )
    assert e["fits"] is True and e["remaining_gpu_hours"] == 20.0
    assert not Sweep.objects.exists()

    claire = post(
        api,
        researcher,
        "/api/v1/sweeps/estimate/",
        allocation=allocation.pk,
        grid={"preset": "claire"},
    ).json()
    assert claire["cells"] == 540 and claire["fits"] is False


def test_others_cannot_launch_or_estimate(api, outsider, reviewer, researcher, allocation):
    # An allocation one may not see is like a missing one; a reviewer sees it but may not act.
    assert set(post(api, outsider, allocation=allocation.pk, grid=GRID).json()) == {"allocation"}
    assert (
        post(
            api, outsider, "/api/v1/sweeps/estimate/", allocation=allocation.pk, grid=GRID
        ).status_code
        == 400
    )
    assert post(api, reviewer, allocation=allocation.pk, grid=GRID).status_code == 403
    sweep_id = post(api, researcher, allocation=allocation.pk, grid=GRID).json()["id"]
    assert api.as_user(outsider).get(f"/api/v1/sweeps/{sweep_id}/").status_code == 404


def test_the_openapi_document_describes_both_bodies(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/?format=json").json()
    components = schema["components"]["schemas"]
    sweep_body = schema["paths"]["/api/v1/sweeps/"]["post"]["requestBody"]["content"][
        "application/json"
    ]["schema"]
    sweep_in = components[sweep_body["$ref"].rsplit("/", 1)[1]]
    assert {"allocation", "grid"} <= set(sweep_in["required"])
    assert set(sweep_in["properties"]) >= {
        "allocation",
        "gpus",
        "wall_time_minutes",
        "concurrency",
        "grid",
        "params",
        "name",
    }
    assert (
        sweep_in["properties"]["gpus"]["minimum"] == 1
        and sweep_in["properties"]["gpus"]["maximum"] == 64
    )

    grid = components[sweep_in["properties"]["grid"]["$ref"].rsplit("/", 1)[1]]
    shapes = [components[s["$ref"].rsplit("/", 1)[1]] for s in grid["oneOf"]]
    explicit = next(s for s in shapes if "lrs" in s["properties"])
    preset = next(s for s in shapes if "preset" in s["properties"])
    assert set(explicit["required"]) == {"models", "lrs", "lr_steps", "weight_decays"}
    assert explicit["properties"]["folds"]["maximum"] == 20
    assert preset["required"] == ["preset"]

    job_body = schema["paths"]["/api/v1/jobs/"]["post"]["requestBody"]["content"][
        "application/json"
    ]["schema"]
    launch_in = components[job_body["$ref"].rsplit("/", 1)[1]]
    params = components[launch_in["properties"]["params"]["$ref"].rsplit("/", 1)[1]]
    assert params["type"] == "object"
    assert params["properties"]["batch_size"]["minimum"] == 2
    assert params["properties"]["synthetic_n"]["maximum"] == 5000
    assert set(schema["paths"]["/api/v1/sweeps/"]["post"]["responses"]) >= {"201", "400", "409"}
