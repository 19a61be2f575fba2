"""Bad input is a 400 or a 404 (JSON under /api/v1/), never a 500 (issue 21, "Bad input").

Each case was a 500 (or an HTML page, or the wrong status) before: `"²".isdigit()` is true and
`int("²")` raises; an id past 64 bits reached the database (SQLite raises OverflowError, PostgreSQL
"out of range"); Django's technical 404 page answered unmatched /api/ URLs under DEBUG.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation, AllocationRequest, Dataset
from core.bounds import ID_MAX, ID_MIN
from tests.factories import NodeTypeFactory

pytestmark = [pytest.mark.django_db]

SUPERSCRIPT_TWO = "\u00b2"  # "²": isdigit() is True, int() raises
HUGE = ("99999999999999999999", "-99999999999999999999", "-1e30", "0.5", SUPERSCRIPT_TWO)


@pytest.fixture
def allocation(project, facility):
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="bad-input-a1",
    )


@pytest.mark.parametrize("key", ["gpu_hours", "cpu_hours", "node_type", "project", "extends"])
@pytest.mark.parametrize("value", [SUPERSCRIPT_TWO, "99999999999999999999", "-1"])
def test_the_request_form_ignores_a_prefill_that_is_no_number(
    client, researcher, project, facility, node_type, key, value
):
    # A second node type: with one, the form pre-selects it whatever the query says.
    NodeTypeFactory(facility=facility, name="B-A100-80")
    client.force_login(researcher)
    response = client.get("/requests/new/", {"facility": facility.slug, key: value})
    assert response.status_code == 200
    assert response.context["form"].initial.get(key) is None or key == "project"


def test_the_request_form_still_prefills_ids_and_names(
    client, researcher, project, facility, node_type
):
    client.force_login(researcher)
    initial = (
        client.get(
            "/requests/new/",
            {
                "facility": facility.slug,
                "gpu_hours": "12",
                "node_type": str(node_type.pk),
                "project": project.code,
            },
        )
        .context["form"]
        .initial
    )
    assert (initial["gpu_hours"], initial["node_type"], initial["project"]) == (
        12,
        node_type.pk,
        project.pk,
    )


@pytest.mark.parametrize("hours", [SUPERSCRIPT_TWO, "1.5", "-3", "99999999999999999999"])
def test_the_approve_buttons_hours_are_a_message_not_a_500(client, reviewer, full_request, hours):
    client.force_login(reviewer)
    response = client.post(
        f"/requests/{full_request.pk}/approve/", {"gpu_hours": hours}, follow=True
    )
    assert response.redirect_chain[-1][0] == f"/requests/{full_request.pk}/"
    page = response.content.decode()
    assert "whole number" in page or "less than or equal" in page or "greater than" in page
    full_request.refresh_from_db()
    assert full_request.status == AllocationRequest.Status.SUBMITTED


@pytest.mark.parametrize(
    "path,key",
    [
        ("requests", "project"),
        ("allocations", "project"),
        ("jobs", "allocation"),
        ("datasets", "project"),
    ],
)
@pytest.mark.parametrize("value", HUGE)
def test_an_id_filter_outside_an_id_is_a_400_on_its_field(
    api, researcher, allocation, path, key, value
):
    response = api.as_user(researcher).get(f"/api/v1/{path}/", {key: value})
    assert response.status_code == 400, response.content
    assert list(response.json()) == [key]


@pytest.mark.parametrize(
    "path,key", [("requests", "project"), ("allocations", "project"), ("datasets", "project")]
)
def test_an_id_filter_at_the_bounds_filters_to_nothing(api, researcher, allocation, path, key):
    for value in (ID_MAX, ID_MIN):
        response = api.as_user(researcher).get(f"/api/v1/{path}/", {key: value})
        assert response.status_code == 200 and response.json()["count"] == 0


def test_the_datasets_project_filter_still_filters(api, researcher, project, other_project):
    Dataset.objects.create(project=project, name="cxr", location="cxr/v1", modality="xray")
    mine = api.as_user(researcher).get("/api/v1/datasets/", {"project": project.pk}).json()
    theirs = api.as_user(researcher).get("/api/v1/datasets/", {"project": other_project.pk}).json()
    assert [d["name"] for d in mine["results"]] == ["cxr"] and theirs["count"] == 0


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/requests/0.5/",
        "/api/v1/clusters/abc/",
        "/api/v1/no-such-thing/",
        "/api/v1/requests/99999999999999999999/",
        "/api/v1/allocations/-99999999999999999999/",
    ],
)
def test_unmatched_api_urls_are_json_404s_even_under_debug(api, researcher, settings, url, debug):
    settings.DEBUG = debug
    response = api.as_user(researcher).get(url)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert list(response.json()) == ["detail"]


@pytest.mark.parametrize(
    "url",
    [
        "/requests/99999999999999999999/",
        "/allocations/99999999999999999999/",
        "/jobs/9223372036854775808/",
        "/projects/99999999999999999999/",
    ],
)
def test_page_ids_past_64_bits_are_404s(client, researcher, url):
    client.force_login(researcher)
    assert client.get(url).status_code == 404


@pytest.mark.parametrize("page", [SUPERSCRIPT_TWO, "0", "1.0", "-1", "x"])
def test_a_page_that_is_no_positive_integer_is_a_400(api, researcher, page):
    response = api.as_user(researcher).get("/api/v1/jobs/", {"page": page})
    assert response.status_code == 400
    assert list(response.json()) == ["page"]


def test_the_schema_bounds_every_id_and_documents_every_filter(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/", {"format": "json"}).json()
    datasets = {p["name"]: p for p in schema["paths"]["/api/v1/datasets/"]["get"]["parameters"]}
    assert datasets["project"]["schema"]["type"] == "integer"
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["schema"].get("type") == "integer" and parameter["name"] != "gpus":
                    bounds = (
                        parameter["schema"].get("minimum"),
                        parameter["schema"].get("maximum"),
                    )
                    assert None not in bounds, (path, parameter)
                    assert bounds[1] <= ID_MAX and bounds[0] >= ID_MIN, (path, parameter)


def test_a_nul_in_the_knowledge_search_is_not_written_back(client):
    response = client.get("/knowledge/", {"q": "slurm\x00<b>"})
    assert response.status_code == 400
    assert b"\x00" not in response.content
