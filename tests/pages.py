"""Helpers for tests that read a page as its user would and count what it costs."""

from __future__ import annotations

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from allocations.models import Allocation


def allocation_page(client: Client, allocation: Allocation) -> tuple[str, int]:
    """The allocation page's HTML (it must answer 200) and the number of queries it ran."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(f"/allocations/{allocation.pk}/")
    assert response.status_code == 200
    return response.content.decode(), len(queries)
