"""List pages and API lists run a bounded number of queries, whatever the number of rows."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import ProjectMembership
from tests.factories import AllocationFactory, ProjectFactory, RequestFactory, charge

pytestmark = pytest.mark.django_db


def grow(researcher, facility, reviewer, n):
    """Give the researcher n more projects, each with requests, allocations and usage."""
    for _ in range(n):
        project = ProjectFactory()
        ProjectMembership.objects.create(project=project, user=researcher)
        RequestFactory(
            project=project,
            facility=facility,
            requested_by=researcher,
            status="submitted",
            submitted_at=timezone.now(),
        )
        allocation = AllocationFactory(project=project, facility=facility)
        now = timezone.now()
        charge(
            allocation=allocation,
            source="local",
            external_id=f"u{allocation.pk}",
            period_start=now,
            period_end=now,
            gpu_seconds=3600,
        )


def count(fn):
    with CaptureQueriesContext(connection) as ctx:
        response = fn()
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    "who,url",
    [
        ("researcher", "/"),
        ("reviewer", "/review/"),
        ("researcher", "/api/v1/requests/"),
        ("researcher", "/api/v1/allocations/"),
        ("researcher", "/api/v1/projects/"),
        ("researcher", "/api/v1/facilities/"),
        ("reviewer", "/api/v1/requests/"),
    ],
)
def test_query_count_does_not_grow_with_rows(
    request, researcher, reviewer, facility, api, who, url
):
    user = request.getfixturevalue(who)
    if url.startswith("/api/"):
        client = api.as_user(user)
    else:
        client = Client()
        client.force_login(user)
    grow(researcher, facility, reviewer, 2)
    small = count(lambda: client.get(url))
    grow(researcher, facility, reviewer, 15)
    large = count(lambda: client.get(url))
    assert large == small, f"{url}: {small} queries with few rows, {large} with many"


def test_a_request_submitted_from_the_form_is_read_back_once_for_the_reviewers_email(
    researcher, reviewer, project, facility, dates, django_capture_on_commit_callbacks
):
    """Submitting from the form saves and submits the draft in one transaction without reading
    it again, and the reviewers' email reads it once, joined with its project, facility and
    requester (it used to take a read for each, and four more to submit)."""
    client = Client()
    client.force_login(researcher)
    body = {
        "project": project.pk,
        "facility": facility.slug,
        "kind": "full",
        "purpose": "new",
        "cpu_hours": 0,
        "gpu_hours": 100,
        **dates,
        "data_sensitivity": "public",
        "justification": "We train DenseNet and ResNet classifiers on chest CT and X-ray "
        "images to detect COVID-19, sweeping learning rates and folds, then "
        "compare sensitivity, specificity and calibration across three "
        "hospitals.",
    }
    with CaptureQueriesContext(connection) as ctx, django_capture_on_commit_callbacks(execute=True):
        response = client.post("/requests/new/", body)
    refusals = re.findall(r"errorlist[^<]*<li>([^<]*)", response.content.decode())
    assert response.status_code == 302, refusals
    reads = [
        sql
        for sql in (q["sql"] for q in ctx.captured_queries)
        if sql.startswith("SELECT") and 'FROM "allocations_allocationrequest"' in sql
    ]
    assert len(reads) == 1, reads
    assert all(
        f'JOIN "{table}"' in reads[0]
        for table in ("allocations_project", "allocations_facility", "auth_user")
    )
    (message,) = mail.outbox
    assert reviewer.email in message.to
    assert (
        f"on {facility.name} (full) was submitted by {researcher.username} "
        f"for project {project.code}" in message.body
    )
