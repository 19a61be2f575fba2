"""Beat tasks that must not overlap hold a PostgreSQL advisory lock (core/locks.py)."""

from __future__ import annotations

import logging

import psycopg
import pytest

from allocations.tasks import expire_allocations, reconcile_ledger
from core.locks import NAMESPACE, advisory_lock
from launcher.tasks import ingest_usage, poll_jobs
from tests.worker import database_url


@pytest.fixture
def other_process(postgres):
    """A second session on the test database, as another worker would hold one."""
    with psycopg.connect(database_url(), autocommit=True) as conn:
        yield conn


def _hold(conn, name: str) -> None:
    assert conn.execute(
        "SELECT pg_try_advisory_lock(%s, hashtext(%s))", [NAMESPACE, name]
    ).fetchone()[0]


@pytest.mark.parametrize(
    "task, name",
    [
        (poll_jobs, "launcher.poll_jobs"),
        (ingest_usage, "launcher.ingest_usage"),
        (reconcile_ledger, "allocations.reconcile_ledger"),
        (expire_allocations, "allocations.expire_allocations"),
    ],
)
def test_a_second_run_is_skipped_while_another_holds_the_lock(other_process, caplog, task, name):
    _hold(other_process, name)
    with caplog.at_level(logging.INFO, logger="core.locks"):
        assert task() is None
    assert f"{name} skipped: another run holds its lock" in caplog.text

    other_process.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [NAMESPACE, name])
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="core.locks"):
        assert task() is not None
    assert f"{name} holds its lock" in caplog.text
    assert f"{name} released its lock" in caplog.text


def test_the_lock_is_released_when_the_run_ends_even_by_an_error(other_process):
    name = "test.failing"
    with pytest.raises(ZeroDivisionError), advisory_lock(name) as held:
        assert held
        1 / 0  # noqa: B018
    # Another session can take it at once: the failed run let it go.
    _hold(other_process, name)


def test_one_lock_does_not_hold_another(other_process):
    _hold(other_process, "launcher.poll_jobs")
    with advisory_lock("launcher.ingest_usage") as held:
        assert held
