"""The ledger figures of a page's allocations, from SQL the ORM compiles once per process.

`selectors.with_usage` is the one definition of the ledger (charged seconds and spend, and the
reservations of unfinished work from every registered provider, as correlated subqueries).
Running the SQL takes a fraction of a millisecond; building and compiling that queryset took
most of a dashboard or allocation page's time (about 5 ms of ORM work per request, measured in
docs/performance.md). So the pages fetch their allocation rows plainly and ask here for the
figures of those ids: the same `with_usage` queryset as a prepared statement (`prepared.py`),
compiled once per set of registered reservation providers and run with the ids as one JSON
parameter. The columns go through the ORM's own converters (SQLite decimals), so the figures
are those of `with_usage`, exactly (tests/allocations/test_ledger_query.py compares them).
"""
from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from django.db import DEFAULT_DB_ALIAS

from . import ledger
from .models import Allocation
from .prepared import Statement
from .selectors import with_usage

COLUMNS = ("gpu_seconds_used", "spend", "gpu_seconds_reserved", "cost_reserved")

FIGURES = Statement(
    lambda p: with_usage(Allocation.objects.filter(pk__in=p.ids("ids"))).values_list(
        "pk", *COLUMNS),
    key=lambda: tuple(ledger._providers))  # the providers themselves: an id() can be reused


def ledger_figures(ids: Iterable[int], *, using: str = DEFAULT_DB_ALIAS) -> dict[int, dict]:
    """{allocation id: {gpu_seconds_used, spend, gpu_seconds_reserved, cost_reserved}} for the
    given ids, in one query; ids that do not exist are absent."""
    ids = list(ids)
    if not ids:
        return {}
    return {row[0]: dict(zip(COLUMNS, row[1:])) for row in FIGURES.run(ids=ids, using=using)}


def attach_ledger(allocations: Iterable[Allocation]) -> list[Allocation]:
    """The allocations (evaluated), each with the attributes `with_usage` annotates, so templates
    and `ledger.ledger_of` read them alike."""
    rows = list(allocations)
    figures = ledger_figures(a.pk for a in rows)
    for allocation in rows:
        for name, value in figures[allocation.pk].items():
            setattr(allocation, name, value)
        allocation.gpu_hours_used = Decimal(allocation.gpu_seconds_used) / 3600
    return rows
