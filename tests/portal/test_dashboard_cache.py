"""The dashboard's allocation, request and project cards are cached under the versions of the user's
projects, and every service that changes what they show bumps them (core/versions.py)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.services import allocation_suspend, project_update, request_update
from tests.factories import AllocationFactory, RequestFactory, charge

pytestmark = pytest.mark.django_db(transaction=True)  # versions move when writes commit


def _get(client: Client) -> tuple[str, int]:
    """The page's two cached cards, and the queries the request ran."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get("/")
    assert response.status_code == 200
    page = response.content.decode()
    cards = [
        page[page.index(f'aria-labelledby="h-{card}"') :]
        for card in ("allocations", "requests", "projects")
    ]
    return "".join(card[: card.index("</section>")] for card in cards), len(queries)


def test_cards_come_from_the_cache_until_a_service_changes_them(researcher, pi, project, facility):
    allocation = AllocationFactory(project=project, facility=facility, status="active")
    client = Client()
    client.force_login(researcher)
    first, cold = _get(client)
    again, warm = _get(client)
    assert again == first and warm == cold - 3  # no projects, requests or allocations read

    now = timezone.now()
    charge(
        allocation=allocation,
        source="local",
        external_id="c1",
        period_start=now,
        period_end=now,
        gpu_seconds=7200,
    )  # the ledger's columns move: 2 GPU-hours
    charged, queries = _get(client)
    assert queries == cold and ">2.00</span> used" in charged and ">2.00</span> used" not in first

    allocation.refresh_from_db()
    allocation_suspend(allocation=allocation, by=pi)
    assert "status-suspended" in _get(client)[0]

    project_update(project=project, by=pi, title="Renamed by its PI")
    assert "Renamed by its PI" in _get(client)[0]

    draft = RequestFactory(
        project=project, facility=facility, requested_by=researcher, status="draft", gpu_hours=123
    )
    link = f'href="/requests/{draft.pk}/"'
    assert link not in _get(client)[0]  # written around the services: cached
    request_update(request=draft, by=researcher, gpu_hours=321)
    assert link in _get(client)[0]
