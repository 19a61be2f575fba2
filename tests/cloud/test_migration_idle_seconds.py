"""Migration cloud.0005 (issue 21): clusters have no head node, so the head's instance type is
dropped and `head_idle_seconds` becomes `idle_seconds`, keeping every cluster's value."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.factories import AllocationFactory

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE, AFTER = ("cloud", "0004_installation"), ("cloud", "0005_cluster_idle_seconds_no_head")


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


def test_the_rename_keeps_each_clusters_idle_time_and_drops_the_head_type():
    allocation = AllocationFactory()
    try:
        old = _migrate(BEFORE).get_model("cloud", "Cluster")
        old.objects.create(
            allocation_id=allocation.pk,
            facility_id=allocation.facility_id,
            region="eu-west-2",
            bucket="b",
            prefix="p/",
            head_instance_type="m6i.large",
            head_idle_seconds=1234,
        )
    finally:
        new = _migrate(AFTER).get_model("cloud", "Cluster")
    cluster = new.objects.get(allocation_id=allocation.pk)
    assert cluster.idle_seconds == 1234
    columns = {
        c.name
        for c in connection.introspection.get_table_description(
            connection.cursor(), new._meta.db_table
        )
    }
    assert "idle_seconds" in columns
    assert not columns & {"head_idle_seconds", "head_instance_type"}
