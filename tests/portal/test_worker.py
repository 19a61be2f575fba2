"""The approval side effects run in a real Celery worker on Redis."""

from __future__ import annotations

import pytest

from allocations import services
from allocations.models import Allocation
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def test_an_approved_request_is_provisioned_by_the_worker(real_worker, full_request, reviewer):
    with real_worker():
        allocation = services.request_approve(request=full_request, by=reviewer)
        status = wait_for(
            lambda: Allocation.objects.get(pk=allocation.pk).status == "active",
            timeout=30,
            every=0.2,
            what="the allocation active",
        )
    assert status
    allocation.refresh_from_db()
    assert allocation.account_name == allocation.default_account_name()
