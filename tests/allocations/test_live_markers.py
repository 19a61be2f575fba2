"""Which pages follow their own state (static/js/live.js): a page carries the live marker and
the script only while its state can still move by itself, and names what is swapped. The
browser side (the swap, the stop) is tests/launcher/test_browser_live_pages.py."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.utils import timezone

from launcher.notebooks.models import NotebookSession
from tests.factories import AllocationFactory, RequestFactory

pytestmark = pytest.mark.django_db
SCRIPT = "js/live.js"


def test_a_request_page_follows_its_allocation_until_it_is_provisioned(client, project, pi):
    allocation = AllocationFactory(project=project, status="provisioning")
    req = RequestFactory(project=project, status="approved", allocation=allocation)
    client.force_login(pi)

    page = client.get(f"/requests/{req.pk}/").content.decode()
    assert 'data-live="main"' in page and SCRIPT in page

    allocation.status = "active"
    allocation.save(update_fields=["status"])
    page = client.get(f"/requests/{req.pk}/").content.decode()
    assert "data-live" not in page and SCRIPT not in page


def test_an_allocation_page_follows_only_while_it_provisions(client, project, pi):
    allocation = AllocationFactory(project=project, status="provisioning")
    client.force_login(pi)
    assert 'data-live="main"' in client.get(f"/allocations/{allocation.pk}/").content.decode()
    allocation.status = "active"
    allocation.save(update_fields=["status"])
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    assert "data-live" not in page and SCRIPT not in page


@pytest.mark.parametrize(
    ("state", "charged", "every"),
    [("starting", False, "2000"), ("running", False, "5000"), ("stopping", False, "2000"),
     ("stopped", False, "2000"), ("stopped", True, None), ("failed", False, None)],
)  # fmt: skip
def test_a_notebook_page_follows_until_it_is_charged_or_failed(
    client, project, researcher, state, charged, every
):
    allocation = AllocationFactory(project=project)
    session = NotebookSession.objects.create(
        allocation=allocation, user=researcher, gpus=1, hours=Decimal("1.00"), state=state,
        charged_at=timezone.now() if charged else None,
    )  # fmt: skip
    client.force_login(researcher)

    page = client.get(f"/notebooks/{session.pk}/").content.decode()

    if every is None:
        assert "data-live" not in page and SCRIPT not in page
    else:
        assert f'data-live="notebook-facts notebook-history" data-poll-ms="{every}"' in page
        assert SCRIPT in page and 'id="notebook-facts"' in page and 'id="notebook-history"' in page
