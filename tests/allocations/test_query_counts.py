"""List pages and API lists run a bounded number of queries, whatever the number of rows."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import ProjectMembership
from tests.factories import AllocationFactory, ProjectFactory, RequestFactory
from tests.factories import charge

pytestmark = pytest.mark.django_db


def grow(researcher, facility, reviewer, n):
    """Give the researcher n more projects, each with requests, allocations and usage."""
    for _ in range(n):
        project = ProjectFactory()
        ProjectMembership.objects.create(project=project, user=researcher)
        RequestFactory(project=project, facility=facility, requested_by=researcher,
                       status="submitted", submitted_at=timezone.now())
        allocation = AllocationFactory(project=project, facility=facility)
        now = timezone.now()
        charge(allocation=allocation, source="local",
                                   external_id=f"u{allocation.pk}", period_start=now,
                                   period_end=now, gpu_seconds=3600)


def count(fn):
    with CaptureQueriesContext(connection) as ctx:
        response = fn()
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("who,url", [
    ("researcher", "/"), ("reviewer", "/review/"),
    ("researcher", "/api/v1/requests/"), ("researcher", "/api/v1/allocations/"),
    ("researcher", "/api/v1/projects/"), ("researcher", "/api/v1/facilities/"),
    ("reviewer", "/api/v1/requests/"),
])
def test_query_count_does_not_grow_with_rows(request, researcher, reviewer, facility, api,
                                             who, url):
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
