"""The allocation page's cached parts: the usage charts (under the project's version and the
figures they draw) and the "Open a notebook" form's fields and default estimate (under the
shared catalogue's version) come from the cache on a warm page, and a charge, a reservation or
a new node type shows on the very next view. The ledger figures (used, reserved, remaining, the
notebook form's GPU-hours left) are never cached: they are read from the allocation's row."""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from allocations.models import Allocation
from tests.factories import FacilityFactory, NodeTypeFactory, charge, open_job
from tests.pages import allocation_page

pytestmark = pytest.mark.django_db(transaction=True)  # versions move when writes commit
BURN_DOWN = re.compile(r'<script id="burn-down-data" type="application/json">(.*?)</script>')


@pytest.fixture
def allocation(project):
    facility = FacilityFactory(slug="local-page-cache", backend="local")
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(10),
        start_date=today - dt.timedelta(days=5),
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="page-cache",
    )


def _used_drawn(page: str) -> list[float]:
    """The usage chart's line of GPU-hours used (against the grant) as the page embeds it."""
    return json.loads(BURN_DOWN.search(page).group(1))["data"][0]["y"]


def _text(page: str, element_id: str, tag: str = "dd") -> str:
    """The text of the element (its first `</tag>` closes it: the figures nest spans)."""
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</{tag}>', page, re.DOTALL)
    return re.sub(r"<[^>]+>", "", found.group(1))


def _use(allocation: Allocation, gpu_seconds: int, cost: Decimal = Decimal(0)) -> None:
    charge(
        allocation=allocation,
        source="local",
        external_id=secrets.token_hex(6),
        gpu_seconds=gpu_seconds,
        cost=cost,
    )


@pytest.fixture
def client(researcher) -> Client:
    browser = Client()
    browser.force_login(researcher)
    return browser


def test_the_charts_come_from_the_cache_and_a_charge_shows_at_once(client, allocation):
    _use(allocation, 3600)
    first, cold = allocation_page(client, allocation)
    again, warm = allocation_page(client, allocation)
    assert warm < cold and _same(again) == _same(first)  # without the charts' query
    assert _used_drawn(first)[-1] == 1

    _use(allocation, 2 * 3600)  # the ledger moves: the charts are drawn afresh
    page, queries = allocation_page(client, allocation)
    assert queries > warm and _used_drawn(page)[-1] == 3  # drawn afresh
    assert _text(page, "used").startswith("3.00 GPU-hours (10,800 GPU-seconds")
    assert _text(page, "remaining").startswith("7.00 GPU-hours")
    assert allocation_page(client, allocation)[1] == warm


def test_a_charge_that_moves_no_figure_is_still_drawn(client, allocation):
    page, _ = allocation_page(client, allocation)
    assert "No usage recorded yet." in page and "burn-down-data" not in page
    _use(allocation, 0)  # a day of use of zero seconds and zero cost: no ledger column moves
    page, _ = allocation_page(client, allocation)
    assert "No usage recorded yet." not in page and _used_drawn(page) == [0, 0]


def test_a_reservation_shows_in_the_figures_and_the_notebook_form_at_once(
    client, allocation, researcher
):
    allocation_page(client, allocation)
    page, _ = allocation_page(client, allocation)  # the notebook form's fields from the cache
    assert _text(page, "notebook-left", "p").startswith("10.00 GPU-hours are left")
    open_job(
        allocation=allocation,
        created_by=researcher,
        state="running",
        token=f"portal-job-{secrets.token_hex(6)}",
        params={"model": "resnet18"},
        estimate_gpu_hours=Decimal(4),
    )
    page, _ = allocation_page(client, allocation)
    assert _text(page, "reserved").startswith("4.00 GPU-hours")
    assert _text(page, "remaining").startswith("6.00 GPU-hours")
    assert _text(page, "notebook-left", "p").startswith("6.00 GPU-hours are left")
    assert 'data-remaining="6' in page


def test_the_notebook_form_is_cached_until_the_catalogue_changes(client, allocation):
    allocation_page(client, allocation)
    page, warm = allocation_page(client, allocation)
    assert 'id="notebook-form"' in page and 'max="2"' not in page  # the settings' default slots
    NodeTypeFactory(facility=allocation.facility, name="L-2GPU", accelerators_per_node=2)
    page, queries = allocation_page(
        client, allocation
    )  # the catalogue's version moved: built afresh
    assert queries > warm and 'name="gpus"' in page
    assert re.search(r'name="gpus"[^>]*max="2"', page) or re.search(
        r'max="2"[^>]*name="gpus"', page
    )
    assert "Up to 2 (one node)." in page
    assert allocation_page(client, allocation)[1] == warm


def _same(page: str) -> str:
    """The page without its CSRF tokens and script nonces (afresh on every request)."""
    page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', "", page)
    return re.sub(r'nonce="[^"]+"', "", page)


def _history(page: str) -> str:
    return re.search(r'<ol class="timeline">(.*?)</ol>', page, re.DOTALL).group(1)


def test_the_history_is_cached_until_an_event_or_a_username_changes(client, allocation, admin):
    from allocations.services import allocation_suspend

    cold = allocation_page(client, allocation)[1]
    page, warm = allocation_page(client, allocation)
    assert warm < cold and "No events yet." in _history(page)
    allocation_suspend(allocation=allocation, by=admin, comment="Paused for maintenance")
    page, queries = allocation_page(client, allocation)  # an event bumps the project's version
    assert "Paused for maintenance" in _history(page) and "<strong>ada</strong>" in _history(page)
    # Counted against the same (suspended) page warm: the event's view built the history afresh.
    assert allocation_page(client, allocation)[1] < queries

    admin.username = "ada-lovelace"  # the people version: a username the history shows
    admin.save()
    page, _ = allocation_page(client, allocation)
    assert "<strong>ada-lovelace</strong>" in _history(page)
    warm = allocation_page(client, allocation)[1]
    admin.save(update_fields=["last_login"])  # a login's save: nothing the history shows
    assert allocation_page(client, allocation)[1] == warm
