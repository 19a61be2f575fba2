"""The pages' compiled-once ledger statement (allocations/ledger_query.py) gives exactly the
figures of `with_usage`, the ledger's one definition: charges, spend, and the reservations of
unfinished jobs less what was charged to them."""
from __future__ import annotations

import secrets
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from allocations.ledger_query import COLUMNS, attach_ledger, ledger_figures
from allocations.models import Allocation, UsageRecord
from allocations.selectors import with_usage
from launcher.models import Job
from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db


def _usage(allocation, seconds, cost, job=None):
    UsageRecord.objects.create(allocation=allocation, source="cloud", job_id=getattr(job, "pk", None),
                               external_id=secrets.token_hex(6),
                               period_start="2026-11-23T10:00:00Z",
                               period_end="2026-11-23T11:00:00Z", gpu_seconds=seconds,
                               cost=Decimal(cost))


def _job(allocation, by, state, hours, cost, seconds=0):
    return Job.objects.create(allocation=allocation, created_by=by, gpus=1, state=state,
                              wall_time_minutes=60, estimate_gpu_hours=Decimal(hours),
                              estimate_cost=Decimal(cost), gpu_seconds=seconds,
                              token=secrets.token_hex(8))


@pytest.fixture
def ledgers(researcher):
    """Four allocations: untouched; charged only; charged with open and finished jobs, one of
    them partly charged through usage records; and one whose job has overrun its estimate."""
    empty = AllocationFactory(gpu_hours=Decimal("10"))
    charged = AllocationFactory(gpu_hours=Decimal("100"), budget=Decimal("50"))
    _usage(charged, 9, "0.0025")
    _usage(charged, 7191, "3.1234")
    busy = AllocationFactory(gpu_hours=Decimal("100"), budget=Decimal("80"))
    running = _job(busy, researcher, "running", "2.5", "4.1000")
    _usage(busy, 1800, "0.9000", job=running)  # half an hour of it charged: 2 h still reserved
    _job(busy, researcher, "pending", "0.125", "0.2500")
    done = _job(busy, researcher, "succeeded", "9", "9.0000", seconds=4000)
    _usage(busy, 4000, "2.0000", job=done)
    overrun = AllocationFactory(gpu_hours=Decimal("5"))
    _job(overrun, researcher, "running", "1", "0", seconds=5400)  # past its estimate: 0 left
    return [empty, charged, busy, overrun]


def test_the_compiled_statement_gives_the_ledgers_own_figures(ledgers):
    ids = [a.pk for a in ledgers]
    orm = {row[0]: dict(zip(COLUMNS, row[1:])) for row in with_usage(
        Allocation.objects.filter(pk__in=ids)).values_list("pk", *COLUMNS)}
    assert ledger_figures(ids) == orm
    assert ledger_figures(ids) == orm  # and again, from the cached statement
    busy = ledger_figures([ledgers[2].pk])[ledgers[2].pk]
    assert busy == {"gpu_seconds_used": 5800, "spend": Decimal("2.9000"),
                    "gpu_seconds_reserved": Decimal(2 * 3600 + 450), "cost_reserved":
                    Decimal("3.2000") + Decimal("0.2500")}
    assert ledger_figures([ledgers[3].pk])[ledgers[3].pk]["gpu_seconds_reserved"] == 0


def test_one_query_for_any_number_of_allocations_and_none_for_none(ledgers):
    with CaptureQueriesContext(connection) as ctx:
        assert ledger_figures([]) == {}
    assert len(ctx) == 0
    with CaptureQueriesContext(connection) as ctx:
        figures = ledger_figures([a.pk for a in ledgers] + [10**9])
    assert len(ctx) == 1 and set(figures) == {a.pk for a in ledgers}


def test_attached_figures_read_like_the_annotations(ledgers):
    charged = attach_ledger(Allocation.objects.filter(pk=ledgers[1].pk))[0]
    assert charged.gpu_seconds_used == 7200 and charged.gpu_hours_used == 2
    assert charged.spend == Decimal("3.1259")
