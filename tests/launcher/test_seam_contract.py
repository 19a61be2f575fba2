"""One contract for the seam: a backend's `provision` returns what it made (`Provisioned`: the
account name) or raises one
BackendError(permanent=...), and launcher/provisioning.py alone decides what happens to the
allocation (activate, fail with the reason, or retry); a backend's `usage` offers records and
launcher/services/accounting.py alone stores them, once each. Shown with a registry entry that
does only what the contract asks (no state moves of its own), in place of `local`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from django.utils import timezone

from allocations.models import UsageRecord
from launcher.backends.contract import BackendError, BaseBackend, Capability, Provisioned
from launcher.backends.registry import register, registered
from launcher.provisioning import allocation_provision
from launcher.services import usage_ingest
from tests.factories import AllocationFactory, FacilityFactory

pytestmark = pytest.mark.django_db


class ScriptedBackend(BaseBackend):
    """Answers `provision` with what the test scripted: a name, or an error to raise."""

    name = "local"
    capabilities = frozenset({Capability.PROVISION, Capability.USAGE})

    def __init__(self) -> None:
        self.answer: Provisioned | BackendError = Provisioned(account="acct-1")
        self.records: list[UsageRecord] = []

    def provision(self, *, allocation):
        if isinstance(self.answer, BackendError):
            raise self.answer
        return self.answer

    def usage(self, *, allocation):
        return list(self.records)


@pytest.fixture
def scripted() -> Iterator[ScriptedBackend]:
    real = registered()["local"]
    backend = ScriptedBackend()
    register(backend)
    try:
        yield backend
    finally:
        register(real)


@pytest.fixture
def provisioning():
    return AllocationFactory(
        status="provisioning", account_name="", facility=FacilityFactory(backend="local")
    )


def test_a_returned_name_activates_the_allocation_with_it(scripted, provisioning):
    allocation = allocation_provision(allocation_id=provisioning.pk)

    assert allocation.status == "active" and allocation.account_name == "acct-1"


def test_a_permanent_error_fails_the_allocation_with_the_reason(scripted, provisioning):
    scripted.answer = BackendError("host key CHANGED", permanent=True)

    allocation = allocation_provision(allocation_id=provisioning.pk)

    assert allocation.status == "failed"
    assert "could not be set up" in allocation.status_reason
    assert "host key CHANGED" in allocation.status_reason


def test_a_transient_error_propagates_for_a_retry_and_fails_on_the_last(scripted, provisioning):
    scripted.answer = BackendError("connection refused", permanent=False)

    with pytest.raises(BackendError) as raised:
        allocation_provision(allocation_id=provisioning.pk)
    assert raised.value.permanent is False
    provisioning.refresh_from_db()
    assert provisioning.status == "provisioning"

    allocation = allocation_provision(allocation_id=provisioning.pk, last_try=True)
    assert allocation.status == "failed" and "unreachable" in allocation.status_reason


def test_offered_usage_is_recorded_once_and_charged_to_its_job(scripted, provisioning):
    allocation = allocation_provision(allocation_id=provisioning.pk)
    end = timezone.now()
    scripted.records = [
        UsageRecord(
            allocation_id=allocation.pk,
            source="local",
            external_id="x:1",
            period_start=end - dt.timedelta(hours=1),
            period_end=end,
            gpu_seconds=3600,
            cost=1,
            detail={},
        )
    ]

    assert usage_ingest(allocation=allocation) == 1
    assert usage_ingest(allocation=allocation) == 1  # offered again, stored once

    assert list(
        UsageRecord.objects.filter(allocation=allocation).values_list("external_id", "gpu_seconds")
    ) == [("x:1", 3600)]
