"""The probe's findings about input (issue 34), each a 500 or a wrong answer before:

1. a JSON number past a float (`1e400`) or a body nested thousands deep was a 500 (OverflowError,
   RecursionError) on every JSON POST: now a 400 from the parser;
2. `{"allocation": 1.5}` was taken as allocation 1: ids and whole numbers refuse non-integral
   values (1.5, "1.5", true) with a per-field 400;
3. `jobs/estimate/` said `fits: true` for a launch `jobs/` refuses (more GPUs than the
   facility's slots): both ask the same check;
5. a full request could end in 9999 where a facility sets no latest end date: a site-wide
   longest allocation (PORTAL_MAX_ALLOCATION_DAYS).

The other findings: test_probe_logout.py (4) and test_probe_launches.py (6, 7).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from allocations.models import AllocationRequest
from launcher.models import Job, Sweep
from tests.factories import JUSTIFICATION, FacilityFactory
from tests.portal.probe_helpers import GRID, allocation  # noqa: F401 (fixture)

pytestmark = [pytest.mark.django_db]


def post_raw(api, user, path: str, body: str):
    return api.as_user(user).post(path, data=body, content_type="application/json")


# 1. Numbers past a float, NaN and Infinity, bodies nested too deep: 400 from the parser ------

JSON_POSTS = [
    "/api/v1/jobs/",
    "/api/v1/jobs/estimate/",
    "/api/v1/sweeps/",
    "/api/v1/notebooks/",
    "/api/v1/requests/",
    "/api/v1/projects/",
    "/api/v1/recommendations/",
]


@pytest.mark.parametrize("path", JSON_POSTS)
@pytest.mark.parametrize(
    "body",
    [
        '{"allocation": 1e400}',
        '{"allocation": -1e400, "gpus": 1}',
        '{"project": 1e999}',
        '{"allocation": NaN}',
        '{"allocation": Infinity}',
        '{"gpus": -Infinity}',
        "[" * 3000 + "]" * 3000,
        '{"allocation": ' + "[" * 3000 + "]" * 3000 + "}",
        '{"a": ' * 3000 + "1" + "}" * 3000,
    ],
)
def test_numbers_past_a_float_and_deep_bodies_are_a_400(api, researcher, allocation, path, body):
    response = post_raw(api, researcher, path, body)
    assert response.status_code == 400, response.content[:300]
    assert "detail" in response.json()
    assert not Job.objects.exists() and not AllocationRequest.objects.exists()


def test_a_body_nested_within_the_limit_is_read(api, researcher, allocation):
    nested = {"allocation": allocation.pk, "gpus": 1, "name": "x"}
    response = post_raw(api, researcher, "/api/v1/jobs/estimate/", json.dumps(nested))
    assert response.status_code == 200, response.json()
    # 20 levels where a string belongs is that field's error, not the parser's.
    deep = {**nested, "params": {"dataset": json.loads("[" * 20 + "]" * 20)}}
    response = post_raw(api, researcher, "/api/v1/jobs/estimate/", json.dumps(deep))
    assert response.status_code == 400 and set(response.json()) == {"params"}


@pytest.mark.parametrize("value", ["1e300", "-1e300", "1e19", "9.99e307"])
def test_a_huge_finite_number_is_a_per_field_400(api, researcher, allocation, value):
    body = f'{{"allocation": {allocation.pk}, "gpus": {value}}}'
    response = post_raw(api, researcher, "/api/v1/jobs/", body)
    assert response.status_code == 400 and set(response.json()) == {"gpus"}
    response = post_raw(api, researcher, "/api/v1/jobs/", f'{{"allocation": {value}}}')
    assert response.status_code == 400 and "allocation" in response.json()
    assert not Job.objects.exists()


# 2. Ids and whole numbers refuse what is not a whole number ---------------------------------


@pytest.mark.parametrize("value", [1.5, "1.5", True, "1e0", " ", [1], {"id": 1}])
def test_an_id_that_is_no_whole_number_is_a_400_on_its_field(
    api, researcher, project, allocation, facility, dates, value
):
    client = api.as_user(researcher)
    at = allocation.pk + 0.5 if value == 1.5 else value  # 1.5 exactly would be no id here
    for path, body, field in [
        ("/api/v1/jobs/", {"allocation": at, "gpus": 1}, "allocation"),
        ("/api/v1/jobs/estimate/", {"allocation": at, "gpus": 1}, "allocation"),
        ("/api/v1/sweeps/", {"allocation": at, "gpus": 1, "grid": GRID}, "allocation"),
        ("/api/v1/notebooks/", {"allocation": at, "gpus": 1, "hours": 1}, "allocation"),
        (
            "/api/v1/datasets/",
            {
                "project": project.pk + 0.5 if value == 1.5 else value,
                "name": "scans",
                "location": "scans",
            },
            "project",
        ),
        (
            "/api/v1/requests/",
            {
                "project": project.pk + 0.5 if value == 1.5 else value,
                "facility": facility.slug,
                "gpu_hours": 10,
                "justification": JUSTIFICATION,
                **dates,
            },
            "project",
        ),
    ]:
        response = client.post(path, body, format="json")
        assert response.status_code == 400, (path, response.content)
        assert field in response.json(), (path, response.json())
    assert not Job.objects.exists() and not AllocationRequest.objects.exists()


def test_allocation_one_and_a_half_is_not_allocation_one(api, researcher, allocation):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {"allocation": allocation.pk + 0.5, "gpus": 1}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["allocation"] == ["A whole number is required."]
    # An integral number still names it (JSON has one number type: 7.0 is 7).
    response = post_raw(
        api, researcher, "/api/v1/jobs/estimate/", f'{{"allocation": {allocation.pk}.0, "gpus": 1}}'
    )
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("value", [1.5, "1.5", True])
def test_whole_number_fields_refuse_fractions_and_booleans(api, researcher, allocation, value):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": value, "params": {"epochs": value}},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"gpus", "params"}


# 3. The estimate asks the launch's own check ---------------------------------------------


def test_the_estimate_refuses_more_gpus_than_the_slots_as_the_launch_does(
    api, researcher, allocation
):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 2, "wall_time_minutes": 30}
    launch = client.post("/api/v1/jobs/", body, format="json")
    estimate = client.post("/api/v1/jobs/estimate/", body, format="json")
    sweep = client.post("/api/v1/sweeps/", {**body, "grid": GRID}, format="json")
    sweep_estimate = client.post("/api/v1/sweeps/estimate/", {**body, "grid": GRID}, format="json")

    assert launch.status_code == estimate.status_code == 400
    assert sweep.status_code == sweep_estimate.status_code == 400
    assert estimate.json() == launch.json() == sweep_estimate.json() == sweep.json()
    assert "runs at most 1 GPU" in estimate.json()["gpus"][0]
    assert not Job.objects.exists() and not Sweep.objects.exists()
    one = client.post("/api/v1/jobs/estimate/", {**body, "gpus": 1}, format="json")
    assert one.status_code == 200 and one.json()["fits"] is True


def test_the_sweep_form_estimate_shows_the_refusal_under_gpus(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{allocation.pk}/sweep/",
        {
            "name": "two",
            "models": ["resnet18"],
            "lrs": "1e-3",
            "lr_steps": "5",
            "weight_decays": "0.0001",
            "folds": "2",
            "epochs": "1",
            "patience": "",
            "size": "32",
            "batch_size": "16",
            "dataset": "synthetic-ct",
            "synthetic_n": "300",
            "gpus": "2",
            "wall_time_minutes": "30",
            "concurrency": "1",
            "estimate": "1",
        },
    )
    page = response.content.decode()
    assert response.status_code == 400, page[:2000]
    assert "runs at most 1 GPU" in page
    assert not Sweep.objects.exists()


# 5. The longest allocation, site-wide -------------------------------------------------------


@pytest.fixture
def open_facility(db):
    return FacilityFactory(slug="no-end", name="No End", latest_end_date=None)


def full_body(project, facility, *, days: int, **extra):
    today = timezone.localdate()
    return {
        "project": project.pk,
        "facility": facility.slug,
        "gpu_hours": 100,
        "justification": JUSTIFICATION,
        "start_date": today.isoformat(),
        "end_date": (today + dt.timedelta(days=days)).isoformat(),
        **extra,
    }


def test_a_full_request_cannot_end_in_9999(api, researcher, project, open_facility, settings):
    assert settings.PORTAL_MAX_ALLOCATION_DAYS == 1826
    client = api.as_user(researcher)
    body = {**full_body(project, open_facility, days=10), "end_date": "9999-12-31"}
    response = client.post("/api/v1/requests/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["end_date"]
    assert "1826 days" in response.json()["end_date"][0]
    assert not AllocationRequest.objects.exists()


def test_the_longest_allocation_is_a_setting_for_create_and_update(
    api, researcher, project, open_facility, settings
):
    settings.PORTAL_MAX_ALLOCATION_DAYS = 100
    client = api.as_user(researcher)
    ok = client.post(
        "/api/v1/requests/", full_body(project, open_facility, days=100), format="json"
    )
    assert ok.status_code == 201, ok.json()
    too_long = client.post(
        "/api/v1/requests/", full_body(project, open_facility, days=101), format="json"
    )
    assert too_long.status_code == 400 and list(too_long.json()) == ["end_date"]

    end = (timezone.localdate() + dt.timedelta(days=101)).isoformat()
    edit = client.patch(f"/api/v1/requests/{ok.json()['id']}/", {"end_date": end}, format="json")
    assert edit.status_code == 400 and list(edit.json()) == ["end_date"]
    assert AllocationRequest.objects.get().end_date == timezone.localdate() + dt.timedelta(days=100)


def test_the_request_form_says_so_under_the_end_date(client, researcher, project, open_facility):
    client.force_login(researcher)
    today = timezone.localdate()
    response = client.post(
        "/requests/new/",
        {
            "project": project.pk,
            "facility": open_facility.slug,
            "kind": "full",
            "purpose": "new",
            "gpu_hours": 100,
            "cpu_hours": 0,
            "start_date": today.isoformat(),
            "end_date": "9999-12-31",
            "data_sensitivity": "public",
            "justification": JUSTIFICATION,
        },
    )
    assert response.status_code in (200, 400)
    assert "1826 days" in str(response.context["form"].errors.get("end_date"))
    assert not AllocationRequest.objects.exists()
