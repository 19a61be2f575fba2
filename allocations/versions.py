"""Versions of what the pages show, for template fragment caching with explicit invalidation.

Each project has a version in the cache (a random token); the services that change what a page
shows of a project bump it after their transaction commits: every audited write (`record_event`
on a project, request or allocation: state moves, edits, members, top-ups) and every move of an
allocation's ledger columns (allocations/services/ledger.py). A page caches a fragment under
`fragment_key(...)` of the projects it shows, so a bump makes the next request render afresh;
nothing is invalidated by guessing at timeouts. The key also holds a token drawn once per
process, so a fragment is never read back by a process that did not see the database it was
rendered from (a test database recreated with the same ids).
"""
from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable

from django.core.cache import cache
from django.db import transaction

PROCESS = secrets.token_hex(8)


def _key(project_id: int) -> str:
    return f"version:project:{project_id}"


def projects_bump(project_ids: Iterable[int]) -> None:
    """New versions for these projects once the current transaction commits (at once outside
    one), so no reader can cache the old rows under the new version."""
    ids = {pk for pk in project_ids if pk is not None}
    if ids:
        transaction.on_commit(lambda: cache.set_many(
            {_key(pk): secrets.token_hex(8) for pk in ids}, timeout=None))


def project_versions(project_ids: Iterable[int]) -> dict[int, str]:
    """The current version of each project (one cache round trip; a project never bumped, or
    whose version was evicted, gets a fresh one, never one an old fragment was keyed on)."""
    ids = sorted(set(project_ids))
    found = cache.get_many([_key(pk) for pk in ids])
    missing = [pk for pk in ids if _key(pk) not in found]
    for pk in missing:
        cache.add(_key(pk), secrets.token_hex(8), timeout=None)
    if missing:
        found.update(cache.get_many([_key(pk) for pk in missing]))
    return {pk: found.get(_key(pk), "") for pk in ids}


def fragment_key(*parts: object, project_ids: Iterable[int]) -> str:
    """A key for a fragment that shows these projects' rows: changes when any is bumped."""
    versions = project_versions(project_ids)
    text = "|".join([PROCESS, *map(str, parts), *(f"{k}:{v}" for k, v in versions.items())])
    return hashlib.sha256(text.encode()).hexdigest()
