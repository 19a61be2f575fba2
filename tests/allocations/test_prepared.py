"""Prepared statements (allocations/prepared.py) give what the ORM gives for the same queryset,
in one query, compiled once."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal
from unittest import mock

import pytest
from django.db import connection
from django.db.models import CharField, DateTimeField, F
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import Allocation, ProjectMembership
from allocations.prepared import Statement
from tests.factories import AllocationFactory, ProjectFactory

pytestmark = pytest.mark.django_db

ROWS = Statement(lambda p: Allocation.objects.filter(project_id__in=p.ids("projects"))
                 .select_related("project", "facility").annotate(doubled=F("gpu_hours") * 2)
                 .order_by("-gpu_hours", "-id")[:3])
TUPLES = Statement(lambda p: Allocation.objects.filter(project_id__in=p.ids("projects"))
                   .order_by("id").values_list("id", "project__code", "gpu_hours", "end_date"))
FLAT = Statement(lambda p: ProjectMembership.objects.filter(user_id=p.value("user"))
                 .order_by("project_id").values_list("project_id", flat=True))
DICTS = Statement(lambda p: Allocation.objects.filter(
    created_at__gte=p.value("since", DateTimeField()),
    facility__name=p.value("facility", CharField())).order_by("id").values("id", "status"))


@pytest.fixture
def allocations(pi):
    first, second = ProjectFactory(pi=pi), ProjectFactory(pi=pi)
    rows = [AllocationFactory(project=first, gpu_hours=Decimal(h)) for h in ("10", "12.5", "3")]
    rows.append(AllocationFactory(project=second, gpu_hours=Decimal("7.25")))
    AllocationFactory(gpu_hours=Decimal("99"))  # another PI's
    return rows


def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


def test_model_rows_equal_the_orms_with_related_objects_and_annotations(allocations):
    projects = {a.project_id for a in allocations}
    compiled, orm = ROWS.run(projects=projects), ROWS.run(projects=projects, orm=True)
    assert [a.pk for a in compiled] == [a.pk for a in orm] == [
        allocations[1].pk, allocations[0].pk, allocations[3].pk]
    for mine, theirs in zip(compiled, orm):
        assert type(mine) is Allocation and _fields(mine) == _fields(theirs)
        assert _fields(mine.project) == _fields(theirs.project)
        assert _fields(mine.facility) == _fields(theirs.facility)
        assert mine.doubled == theirs.doubled == 2 * mine.gpu_hours
        assert mine._state.adding is False and mine._state.db == "default"
    with CaptureQueriesContext(connection) as ctx:  # the related objects came with the row
        assert compiled[0].project.code and compiled[0].facility.name
    assert len(ctx) == 0


def test_tuples_flat_values_and_dicts_equal_the_orms(allocations, pi):
    projects = [allocations[0].project_id]
    assert TUPLES.run(projects=projects) == TUPLES.run(projects=projects, orm=True)
    assert [row[2] for row in TUPLES.run(projects=projects)] == [
        Decimal("10"), Decimal("12.5"), Decimal("3")]
    assert isinstance(TUPLES.run(projects=projects)[0][3], dt.date)
    assert FLAT.run(user=pi.pk) == sorted({a.project_id for a in allocations})
    since = timezone.now() - dt.timedelta(minutes=5)
    name = allocations[3].facility.name
    assert DICTS.run(since=since, facility=name) == DICTS.run(since=since, facility=name,
                                                              orm=True)
    assert DICTS.run(since=since, facility=name) == [{"id": allocations[3].pk,
                                                      "status": "active"}]
    assert DICTS.run(since=timezone.now() + dt.timedelta(minutes=5), facility=name) == []


def test_the_ids_list_is_one_parameter_so_any_length_runs_one_query(allocations):
    with CaptureQueriesContext(connection) as ctx:
        assert TUPLES.run(projects=[]) == []
        assert len(TUPLES.run(projects=[a.project_id for a in allocations] + [10**9])) == 4
    assert len(ctx) == 2
    assert "'[]'" in ctx[0]["sql"] and "'[7, 8, 1000000000]'" not in ctx[0]["sql"]
    shown = [str(pk) for pk in sorted({a.project_id for a in allocations})] + ["1000000000"]
    assert f"'[{', '.join(shown)}]'" in ctx[1]["sql"]


def test_compiled_once_and_again_when_the_key_changes(allocations):
    key = ["a"]
    statement = Statement(lambda p: Allocation.objects.filter(pk=p.value("pk"))
                          .values_list("gpu_hours", flat=True), key=lambda: key[0])
    compile_sql = SQLCompiler.as_sql
    with mock.patch.object(SQLCompiler, "as_sql", autospec=True,
                           side_effect=compile_sql) as compiled:
        assert statement.run(pk=allocations[0].pk) == [Decimal("10")]
        assert statement.run(pk=allocations[1].pk) == [Decimal("12.5")]
        assert compiled.call_count == 1
        key[0] = "b"
        assert statement.first(pk=allocations[3].pk) == Decimal("7.25")
        assert compiled.call_count == 2
    assert statement.first(pk=10**9) is None


def test_a_missing_value_is_refused_and_other_row_kinds_are_not_prepared(allocations):
    with pytest.raises(TypeError, match="'projects'"):
        TUPLES.run()
    named = Statement(lambda p: Allocation.objects.values_list("id", named=True))
    with pytest.raises(TypeError, match="NamedValuesListIterable"):
        named.run()
