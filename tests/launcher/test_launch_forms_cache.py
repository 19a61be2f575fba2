"""The allocation page's launch and sweep forms are rendered once and then read from the cache
(`{% cache %}` under launcher.pages.forms_key), until the project or the shared catalogue they
show changes; the CSRF token and the live capacity note are never part of the cached fragment."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from allocations.models import Allocation
from allocations.services import dataset_create
from launcher.models import Job
from tests.factories import FacilityFactory, NodeTypeFactory
from tests.pages import allocation_page

pytestmark = pytest.mark.django_db(transaction=True)  # versions move when writes commit
FORMS = re.compile(
    r'<form method="post" action="/allocations/\d+/(?:launch|sweep)/".*?</form>', re.DOTALL
)
TOKEN = re.compile(r'id="launch-form".*?name="csrfmiddlewaretoken" value="([^"]+)"', re.DOTALL)


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(slug="local-cache", backend="local", gpu_hour_rate=Decimal("0.50"))
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="cache-a1",
    )


def _forms(page: str) -> str:
    """Both forms without their CSRF tokens (masked afresh on every request)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", "".join(FORMS.findall(page)))


def test_forms_come_from_the_cache_until_the_project_or_catalogue_changes(
    researcher, pi, allocation
):
    client = Client()
    client.force_login(researcher)
    first, cold = allocation_page(client, allocation)
    again, warm = allocation_page(client, allocation)
    assert 'id="launch-form"' in first and 'id="sweep-form"' in first
    assert _forms(again) == _forms(first) and warm < cold  # no dataset or prediction queries

    dataset_create(
        by=pi,
        project=allocation.project,
        name="chest-ct",
        location="ct/chest",
        modality="ct",
        sensitivity="public",
    )  # an event: the project's version moves
    page, queries = allocation_page(client, allocation)
    assert queries > warm and 'value="chest-ct"' in page and 'value="chest-ct"' not in first
    assert allocation_page(client, allocation)[1] == warm

    NodeTypeFactory(facility=allocation.facility, name="L-CPU")  # the catalogue's version moves
    assert allocation_page(client, allocation)[1] > warm  # rendered afresh, now with a prediction
    assert allocation_page(client, allocation)[1] == warm


def test_a_cached_form_carries_this_sessions_csrf_token(researcher, pi, allocation):
    warmer = Client()
    warmer.force_login(pi)
    allocation_page(warmer, allocation)  # the fragment is now cached, rendered for another session
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    page, _ = allocation_page(client, allocation)
    token = TOKEN.search(page).group(1)

    refused = client.post(f"/allocations/{allocation.pk}/launch/", {"epochs": "2"})
    assert refused.status_code == 403  # the check is on: no token, no launch
    response = client.post(
        f"/allocations/{allocation.pk}/launch/",
        {
            "csrfmiddlewaretoken": token,
            "model": "resnet18",
            "dataset": "synthetic-ct",
            "epochs": "2",
            "gpus": "1",
            "wall_time_minutes": "30",
            "lr": "0.001",
        },
    )
    assert response.status_code == 302 and Job.objects.filter(created_by=researcher).count() == 1
