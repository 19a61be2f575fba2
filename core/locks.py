"""One run at a time of a beat task, across every worker: PostgreSQL advisory locks.

With two or more workers (docs/operations.md, "More than one of everything"), the beat's next
tick can reach a second worker while the first still runs the task (a poll of 2,000 live jobs
that takes longer than its 10 s period; a reconcile held up by a slow disk). The tasks are
idempotent, but two passes at once do the work twice and race each other's reads. A task
wrapped in `@exclusive` takes a session advisory lock named after it
(`pg_try_advisory_lock(36, hashtext(name))`): a second run finds it held, logs "skipped" and
returns None at once; the lock goes when the run ends, or with its connection if the worker
dies. SQLite (the unit tier, `make run`'s one worker) has no advisory locks: the run always goes
ahead there.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from django.db import connection

log = logging.getLogger(__name__)
NAMESPACE = 36  # the first key of the two-key form: the portal's beat locks
F = TypeVar("F", bound=Callable[..., Any])


@contextlib.contextmanager
def advisory_lock(name: str) -> Iterator[bool]:
    """Try the lock `name` without waiting; yield whether this run holds it."""
    if connection.vendor != "postgresql":
        yield True
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))", [NAMESPACE, name])
        held = bool(cursor.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [NAMESPACE, name])


def exclusive(name: str) -> Callable[[F], F]:
    """Run the function only where no other run of `name` is under way (any process)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            with advisory_lock(name) as held:
                if not held:
                    log.info("%s skipped: another run holds its lock", name)
                    return None
                started = time.monotonic()
                log.info("%s holds its lock", name)
                try:
                    return fn(*args, **kwargs)
                finally:
                    log.info("%s released its lock after %.2f s", name, time.monotonic() - started)

        return run  # type: ignore[return-value]

    return wrap
