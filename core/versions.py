"""Versions of what the pages show, for template fragment caching with explicit invalidation.

Each project has a version in the cache (a random token); the services that change what a page
shows of a project bump it after their transaction commits (`projects_bump`, below): every
audited write (`record_event` in allocations/transitions.py, on a project, request or
allocation: state moves, edits, members, top-ups) and every move of an allocation's ledger
columns (allocations/ledger.py). A page caches a fragment under
`fragment_key(...)` of the projects it shows, so a bump makes the next request render afresh;
nothing is invalidated by guessing at timeouts. The key also holds a token drawn once per
process, so a fragment is never read back by a process that did not see the database it was
rendered from (a test database recreated with the same ids).

One more version covers the catalogue every project shares (facilities, node types, and in the
benchmarks app workloads and benchmark results): the launch forms' predicted wall time is read
from it. It is bumped on every save or delete of those models (`catalogue_changed`, connected by
each app's `AppConfig.ready()` with a lazy sender), since they are also written by the admin,
the demo loader and the job monitor, not only by services.

A third version covers the people an audit trail names: events show their actor's username,
so a user's save that may change it (any save but one naming only other fields, as a login's
`last_login`) bumps it (`people_changed`, connected by the allocations app's `ready()`).

A fourth covers what the usage report reads of settled months (portal/reports/settled.py): the
ledger's monthly rollups of months already ended and the names a report groups by. It is bumped
by a ledger write into an ended month (a late record, `rollup_add`), by every rewrite of the
rollups (`rollup_rebuild`: the reconcile's corrections, bulk loads), and by every save or delete
of a project (its code, its PI: `settled_changed`, connected by the allocations app's `ready()`);
usernames and facility names are the people and catalogue versions'; the job rollups carry their
own stamp (`RolledMonth.rolled_at`).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.core.cache import cache
from django.db import transaction

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractUser

PROCESS = secrets.token_hex(8)
CATALOGUE = "version:catalogue"
PEOPLE = "version:people"
PROJECT = "version:project:{}"  # .format(project id); bumped by projects_bump
SETTLED = "version:settled"


def catalogue_changed(**_: object) -> None:
    """A `post_save`/`post_delete` receiver: a new catalogue version after the commit."""
    transaction.on_commit(lambda: cache.set(CATALOGUE, secrets.token_hex(8), timeout=None))


def people_changed(
    sender: type[AbstractUser], update_fields: Iterable[str] | None = None, **_: object
) -> None:
    """A `post_save`/`post_delete` receiver on the user model: a new people version after the
    commit, unless the save named its fields and the username was not one of them."""
    if update_fields is not None and sender.USERNAME_FIELD not in update_fields:
        return
    transaction.on_commit(lambda: cache.set(PEOPLE, secrets.token_hex(8), timeout=None))


def settled_bump() -> None:
    """A new version of the settled months' report figures once the current transaction
    commits (at once outside one)."""
    transaction.on_commit(lambda: cache.set(SETTLED, secrets.token_hex(8), timeout=None))


def settled_changed(**_: object) -> None:
    """A `post_save`/`post_delete` receiver: see settled_bump."""
    settled_bump()


def projects_bump(project_ids: Iterable[int | None]) -> None:
    """New versions for these projects once the current transaction commits (at once outside
    one), so no reader can cache the old rows under the new version."""
    ids = {pk for pk in project_ids if pk is not None}
    if ids:
        transaction.on_commit(
            lambda: cache.set_many(
                {PROJECT.format(pk): secrets.token_hex(8) for pk in ids}, timeout=None
            )
        )


def _versions(keys: list[str]) -> dict[str, str]:
    """The current value of each version key (one cache round trip; a key never bumped, or
    evicted, gets a fresh value, never one an old fragment was keyed on)."""
    found = cache.get_many(keys)
    missing = [key for key in keys if key not in found]
    for key in missing:
        cache.add(key, secrets.token_hex(8), timeout=None)
    if missing:
        found.update(cache.get_many(missing))
    return {key: found.get(key, "") for key in keys}


def fragment_key(
    *parts: object,
    project_ids: Iterable[int],
    catalogue: bool = False,
    people: bool = False,
    settled: bool = False,
) -> str:
    """A key for a fragment that shows these projects' rows (and, with `catalogue`, reads the
    shared catalogue; with `people`, shows usernames; with `settled`, reads the settled months'
    rollups): changes when any of them is bumped."""
    keys = (
        [PROJECT.format(pk) for pk in sorted(set(project_ids))]
        + ([CATALOGUE] if catalogue else [])
        + ([PEOPLE] if people else [])
        + ([SETTLED] if settled else [])
    )
    versions = _versions(keys)
    text = "|".join([PROCESS, *map(str, parts), *(f"{k}:{v}" for k, v in versions.items())])
    return hashlib.sha256(text.encode()).hexdigest()
