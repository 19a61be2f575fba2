"""The ledger figures of a page's allocations, from SQL the ORM compiles once per process.

`selectors.with_usage` is the one definition of the ledger (charged seconds and spend, and the
reservations of unfinished work from every registered provider, as correlated subqueries).
Running the SQL takes a fraction of a millisecond; building and compiling that queryset took
most of a dashboard or allocation page's time (about 5 ms of ORM work per request, measured in
docs/performance.md). So the pages fetch their allocation rows plainly and ask here for the
figures of those ids: the same `with_usage` queryset, filtered by a list of ids passed as one
JSON parameter, compiled on first use and then executed with a new parameter each time. The
columns go through the ORM's own converters (SQLite decimals), so the figures are those of
`with_usage`, exactly (tests/allocations/test_ledger_query.py compares them).

The compiled statement is cached per database alias and per set of registered reservation
providers; a vendor without a JSON table function falls back to the ORM every time.
"""
from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, NamedTuple

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models.expressions import RawSQL

from . import ledger
from .models import Allocation
from .selectors import with_usage

COLUMNS = ("gpu_seconds_used", "spend", "gpu_seconds_reserved", "cost_reserved")
SENTINEL = "[-1]"  # stands for the ids while compiling; replaced at every execution
IDS_SQL = {
    "postgresql": "SELECT jsonb_array_elements_text(%s::jsonb)::bigint",
    "sqlite": "SELECT value FROM json_each(%s)",
}


class _Compiled(NamedTuple):
    sql: str
    params: tuple
    slot: int  # the index of SENTINEL in params
    converters: dict[int, tuple[list, Any]]


_compiled: dict[tuple, _Compiled] = {}
_lock = threading.Lock()


def _compile(alias: str) -> _Compiled | None:
    connection = connections[alias]
    ids_sql = IDS_SQL.get(connection.vendor)
    if ids_sql is None:
        return None
    ids = RawSQL(ids_sql, [SENTINEL])  # nosec B611 # constant SQL text, the ids are a parameter
    qs = with_usage(Allocation.objects.using(alias).filter(pk__in=ids)).values_list("pk", *COLUMNS)
    compiler = qs.query.get_compiler(using=alias)
    sql, params = compiler.as_sql()
    slots = [i for i, p in enumerate(params) if isinstance(p, str) and p == SENTINEL]
    if len(slots) != 1:
        return None
    converters = compiler.get_converters([col for col, _, _ in compiler.select[:compiler.col_count]])
    return _Compiled(sql, tuple(params), slots[0], converters)


def _statement(alias: str) -> _Compiled | None:
    key = (alias, tuple(id(p) for p in ledger._providers))
    compiled = _compiled.get(key)
    if compiled is None and key not in _compiled:
        with _lock:
            compiled = _compiled[key] = _compile(alias)
    return compiled


def ledger_figures(ids: Iterable[int], *, using: str = DEFAULT_DB_ALIAS) -> dict[int, dict]:
    """{allocation id: {gpu_seconds_used, spend, gpu_seconds_reserved, cost_reserved}} for the
    given ids, in one query; ids that do not exist are absent."""
    ids = sorted({int(i) for i in ids})
    if not ids:
        return {}
    compiled = _statement(using)
    if compiled is None:
        rows = with_usage(Allocation.objects.using(using).filter(pk__in=ids)).values_list(
            "pk", *COLUMNS)
    else:
        connection = connections[using]
        params = list(compiled.params)
        params[compiled.slot] = json.dumps(ids)
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
            rows = [list(row) for row in cursor.fetchall()]
        for row in rows:
            for pos, (convs, expression) in compiled.converters.items():
                for convert in convs:
                    row[pos] = convert(row[pos], expression, connection)
    return {row[0]: dict(zip(COLUMNS, row[1:])) for row in rows}


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
