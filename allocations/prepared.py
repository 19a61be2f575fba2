"""Querysets the ORM compiles once per process and then runs with new parameters.

A page's SQL takes a fraction of a millisecond on our data; building and compiling the
querysets that produce it took most of a page's time (about 0.3 ms of ORM work per query, a
dozen queries per page: docs/performance.md). A `Statement` keeps the ORM as the definition of
a query: its builder writes an ordinary queryset, with placeholders where the values of a
request go, and the compiled SQL, its converters and the way rows become model instances are
kept per database alias. Each run substitutes the values and executes the SQL through a
cursor of the current connection (so query-count tests still see it), applies the ORM's own
converters and builds rows as the queryset would have: model instances (with their
`select_related` objects and annotations), tuples, flat values or dicts.

    MEMBER_PROJECTS = Statement(lambda p: ProjectMembership.objects.filter(
        user_id=p.value("user")).values_list("project_id", flat=True))
    MEMBER_PROJECTS.run(user=request.user.pk)

`p.value(name)` stands for one value, `p.ids(name)` for a list of integer ids (passed as one
JSON parameter, so the SQL does not change with the list's length). A builder must depend on
nothing but its placeholders (and on `key`, when given: a callable whose value is part of the
cache key, e.g. a registry that the builder reads). On a database vendor without a JSON table
function, or with `orm=True`, the builder gets the values themselves and the queryset is
evaluated by the ORM as usual: the tests compare both paths
(tests/allocations/test_prepared.py).
"""
from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Expression, Field, IntegerField, QuerySet
from django.db.models.query import (
    FlatValuesListIterable,
    ModelIterable,
    ValuesIterable,
    ValuesListIterable,
    get_related_populators,
)

# Rows of a JSON array of integers as a one-column table, per vendor.
IDS_SQL = {
    "postgresql": "SELECT jsonb_array_elements_text(%s::jsonb)::bigint",
    "sqlite": "SELECT value FROM json_each(%s)",
}


def _id_list(values: Iterable[Any]) -> list[int]:
    """A `p.ids` value: distinct integer ids, sorted (the same list whatever the order)."""
    return sorted({int(i) for i in values})


class _Marker:
    """Stands in the compiled parameters for the value called `name`."""
    __slots__ = ("name", "field", "is_list")

    def __init__(self, name: str, field: Field, is_list: bool):
        self.name, self.field, self.is_list = name, field, is_list

    def value(self, values: dict[str, Any], connection) -> Any:
        try:
            value = values[self.name]
        except KeyError:
            raise TypeError(f"the statement needs a value for {self.name!r}") from None
        if self.is_list:
            return json.dumps(_id_list(value))
        return self.field.get_db_prep_value(value, connection)


class Param(Expression):
    """A placeholder in a queryset: compiles to one SQL parameter filled in at each run."""

    def __init__(self, name: str, output_field: Field | None = None, *, is_list: bool = False):
        super().__init__(output_field=output_field or IntegerField())
        self.marker = _Marker(name, self.output_field, is_list)

    def as_sql(self, compiler, connection):
        if self.marker.is_list:
            return IDS_SQL[connection.vendor], [self.marker]
        return "%s", [self.marker]

    def __repr__(self) -> str:
        return f"Param({self.marker.name!r})"


class _Placeholders:
    """What a builder gets when its statement is compiled."""

    def value(self, name: str, output_field: Field | None = None) -> Param:
        return Param(name, output_field)

    def ids(self, name: str) -> Param:
        return Param(name, is_list=True)


class _Values:
    """What a builder gets when the ORM runs it with the values themselves."""

    def __init__(self, values: dict[str, Any]):
        self._values = values

    def value(self, name: str, output_field: Field | None = None) -> Any:
        return self._values[name]

    def ids(self, name: str) -> list[int]:
        return _id_list(self._values[name])


class _Compiled:
    """The SQL of one statement for one alias, and how its rows become results."""

    def __init__(self, qs: QuerySet, alias: str):
        self.kind = qs._iterable_class
        if self.kind not in (ModelIterable, ValuesListIterable, FlatValuesListIterable,
                             ValuesIterable):
            raise TypeError(f"a prepared statement cannot give {self.kind.__name__} rows")
        compiler = qs.query.get_compiler(using=alias)
        self.sql, params = compiler.as_sql()
        self.params = tuple(params)
        self.slots = [(i, p) for i, p in enumerate(self.params) if isinstance(p, _Marker)]
        fields = [col for col, _, _ in compiler.select[:compiler.col_count]]
        self.converters = compiler.get_converters(fields)
        if self.kind is ModelIterable:
            info = compiler.klass_info
            self.model = info["model"]
            start, end = info["select_fields"][0], info["select_fields"][-1] + 1
            self.model_slice = slice(start, end)
            self.init_list = [f[0].target.attname for f in compiler.select[start:end]]
            self.populators = get_related_populators(info, compiler.select, alias)
            self.annotations = list(compiler.annotation_col_map.items())
        elif self.kind is ValuesIterable:
            query = qs.query
            self.names = [*query.extra_select, *query.values_select, *query.annotation_select]

    def execute(self, values: dict[str, Any], alias: str) -> list:
        connection = connections[alias]
        params = list(self.params)
        for slot, marker in self.slots:
            params[slot] = marker.value(values, connection)
        with connection.cursor() as cursor:
            cursor.execute(self.sql, params)
            rows = cursor.fetchall()
        if self.converters:
            rows = [list(row) for row in rows]
            for row in rows:
                for pos, (convs, expression) in self.converters.items():
                    for convert in convs:
                        row[pos] = convert(row[pos], expression, connection)
        return self._shape(rows, alias)

    def _shape(self, rows: list, alias: str) -> list:
        if self.kind is ValuesListIterable:
            return [tuple(row) for row in rows]
        if self.kind is FlatValuesListIterable:
            return [row[0] for row in rows]
        if self.kind is ValuesIterable:
            return [dict(zip(self.names, row)) for row in rows]
        objects = []
        for row in rows:
            obj = self.model.from_db(alias, self.init_list, row[self.model_slice])
            for populator in self.populators:
                populator.populate(row, obj)
            for name, pos in self.annotations:
                setattr(obj, name, row[pos])
            objects.append(obj)
        return objects


class Statement:
    """A queryset built once by `build(placeholders)` and compiled once per alias (and per
    value of `key()`, when given); `run(**values)` gives its rows."""

    def __init__(self, build: Callable[[Any], QuerySet], *, key: Callable[[], Any] | None = None):
        self.build = build
        self.key = key
        self._compiled: dict[tuple, _Compiled | None] = {}
        self._lock = threading.Lock()

    def _statement(self, alias: str) -> _Compiled | None:
        key = (alias, self.key() if self.key else None)
        try:
            return self._compiled[key]
        except KeyError:
            pass
        with self._lock:
            if key not in self._compiled:
                vendor = connections[alias].vendor
                self._compiled[key] = (_Compiled(self.build(_Placeholders()).using(alias), alias)
                                       if vendor in IDS_SQL else None)
            return self._compiled[key]

    def run(self, *, using: str = DEFAULT_DB_ALIAS, orm: bool = False, **values: Any) -> list:
        """The rows, as the queryset would give them, for these values. `orm=True` (or a
        vendor without a compiled form) lets the ORM build and run the queryset instead."""
        compiled = None if orm else self._statement(using)
        if compiled is None:
            return list(self.build(_Values(values)).using(using))
        return compiled.execute(values, using)

    def first(self, **values: Any) -> Any:
        rows = self.run(**values)
        return rows[0] if rows else None
