"""The centre world's rows: its sizes, one seed and "now", COPY with model defaults, and the
ids written so far (`World`). Used by bench/scale_world.py (people, projects, allocations) and
bench/scale_work.py (jobs, sweeps, usage, notebooks, events)."""

from __future__ import annotations

import datetime as dt
import random
import time
from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

SEED = 36
NOW = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
SIZES = {
    "users": 10_000,
    "projects": 3_000,
    "facilities": 20,
    "allocations": 12_000,
    "jobs": 1_000_000,
    "sweep_share": 5,  # one job in five is a sweep cell
    "sweep_size": 20,
    "notebooks": 50_000,
    "usage": 5_000_000,
    "pi_projects": 20,
    "researcher_jobs": 5_000,
}


def _defaults(model, given: Sequence[str]) -> tuple[list[str], list[Any]]:
    """The columns of `model` not in `given` (bar the id) and the value each takes."""
    from django.db.models import JSONField
    from psycopg.types.json import Jsonb

    columns, values = [], []
    for field in model._meta.concrete_fields:
        if field.attname in given or field.primary_key:
            continue
        if getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False):
            value: Any = NOW
        else:
            value = field.get_default()
        if isinstance(field, JSONField) and value is not None:
            value = Jsonb(value)
        columns.append(field.column)
        values.append(value)
    return columns, values


def copy_rows(model, given: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
    """COPY rows of (id, *given) into the model's table, the other columns at their default."""
    from django.db import connection
    from psycopg import sql

    columns, values = _defaults(model, given)
    names = ["id", *[model._meta.get_field(name).column for name in given], *columns]
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(model._meta.db_table), sql.SQL(", ").join(map(sql.Identifier, names))
    )
    tail = tuple(values)
    n = 0
    with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row((*row, *tail))
            n += 1
    return n


def _next_id(model) -> int:
    from django.db.models import Max

    return (model.objects.aggregate(m=Max("pk"))["m"] or 0) + 1


def _when(rng: random.Random, start: dt.datetime, end: dt.datetime) -> dt.datetime:
    span = max(1, int((end - start).total_seconds()))
    return start + dt.timedelta(seconds=rng.randrange(span))


class World:
    """The ids written, kept for the next table's foreign keys."""

    def __init__(self, seed: int = SEED, factor: float = 1.0) -> None:
        self.rng = random.Random(seed)
        # `factor` scales every count (0.01: the demo-scale world of bench_scale.py); the PI's
        # 20 projects stay 20.
        self.sizes = {
            k: v if k in ("sweep_share", "sweep_size", "pi_projects") else max(1, int(v * factor))
            for k, v in SIZES.items()
        }
        self.sizes["usage"] = self.sizes["jobs"] * (SIZES["usage"] // SIZES["jobs"])
        self.users: list[int] = []
        self.projects: list[tuple[int, int]] = []  # (project id, pi id)
        self.members: dict[int, list[int]] = {}
        self.facilities: list[tuple[int, int | None, Decimal]] = []  # (id, node type, rate)
        self.allocations: list[tuple[int, int, int, dt.datetime, dt.datetime]] = []
        self.timings: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    def timed(self, name: str, fn) -> None:
        started = time.perf_counter()
        self.counts[name] = fn()
        self.timings[name] = time.perf_counter() - started
