"""An audited write and what follows it: compare-and-swap state moves with an audit event, the
pages' project versions the write bumps, and the tasks it enqueues once the transaction commits.

A move is allowed only if (from, to) is in the model's table. The row is updated with
`filter(pk=.., <field>=old).update(..)`: if another worker moved it first, 0 rows change and
`TransitionConflict` is raised, so two workers can never both win.

Every audited write (`record_event`) and every move of an allocation's ledger columns bumps the
versions of the projects it touches (`projects_bump`), after the commit, so a page's cached
fragment of them renders afresh (the read side, `fragment_key`, is allocations/versions.py).

Services enqueue work by task name (`enqueue`), so that they never import a tasks module (the
tasks import the services they call, and the reverse import was an import cycle). The task is
looked up by name in the registry of the current Celery app (portal/celery.py) and sent with its
`.delay()` after the commit, as if the service had imported it (`CELERY_TASK_ALWAYS_EAGER` runs
it in-process).
"""
from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from celery import Task, current_app
from django.contrib.contenttypes.models import ContentType
from django.core.cache import cache
from django.db import models, transaction

from .errors import Conflict
from .models import Event, Project
from .versions import PROJECT


class InvalidTransition(Conflict):
    """A state move the table does not allow (HTTP 409, with `from` and `to`)."""

    def __init__(self, obj: models.Model, from_state: str, to_state: str,
                 message: str | None = None) -> None:
        self.from_state = from_state
        self.to_state = to_state
        label = obj._meta.verbose_name
        super().__init__(message or f"This {label} is {from_state.replace('_', ' ')}; it cannot "
                                    f"move to {to_state.replace('_', ' ')}.",
                         **{"from": from_state, "to": to_state})


class TransitionConflict(InvalidTransition):
    """Someone else moved the object between our read and our write (HTTP 409)."""

    def __init__(self, obj: models.Model, from_state: str, to_state: str) -> None:
        super().__init__(obj, from_state, to_state,
                         f"This {obj._meta.verbose_name} was changed by someone else; reload it.")


Table = Mapping[str, Iterable[str]]


def transition(
    obj: models.Model,
    *,
    to: str,
    table: Table,
    actor: Any = None,
    comment: str = "",
    field: str = "status",
    **updates: Any,
) -> Event:
    """Move `obj` to `to` if the table allows it, atomically, and record who did it.

    Must run inside a transaction (the caller's service is `@transaction.atomic`). `updates` are
    other columns set in the same UPDATE. The in-memory object is updated to match.
    """
    old = getattr(obj, field)
    if to not in table.get(old, ()):
        raise InvalidTransition(obj, old, to)
    changed = type(obj)._default_manager.filter(pk=obj.pk, **{field: old}).update(
        **{field: to}, **updates
    )
    if changed != 1:
        raise TransitionConflict(obj, old, to)
    setattr(obj, field, to)
    for key, value in updates.items():
        setattr(obj, key, value)
    return record_event(obj, actor=actor, from_state=old, to_state=to, comment=comment)


def record_event(
    obj: models.Model, *, actor: Any, from_state: str, to_state: str, comment: str = ""
) -> Event:
    """Write an audit row for `obj` (also for non-state facts such as a top-up)."""
    actor_id = getattr(actor, "pk", None)
    project_id = obj.pk if isinstance(obj, Project) else getattr(obj, "project_id", None)
    projects_bump([project_id])  # the pages' cached fragments of this project
    return Event.objects.create(
        content_type=ContentType.objects.get_for_model(type(obj)),
        object_id=obj.pk,
        actor_id=actor_id,
        from_state=from_state,
        to_state=to_state,
        comment=comment,
    )


def projects_bump(project_ids: Iterable[int | None]) -> None:
    """New versions for these projects once the current transaction commits (at once outside
    one), so no reader can cache the old rows under the new version."""
    ids = {pk for pk in project_ids if pk is not None}
    if ids:
        transaction.on_commit(lambda: cache.set_many(
            {PROJECT.format(pk): secrets.token_hex(8) for pk in ids}, timeout=None))


def task_named(name: str) -> Task:
    """The registered task `name` (the apps' tasks modules are imported on first use)."""
    if name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.tasks[name]


def enqueue(name: str, *args: Any) -> None:
    """Run task `name` with `args` after the current transaction commits (at once when no
    transaction is open). Arguments are ids and plain values, never model instances."""
    transaction.on_commit(lambda: task_named(name).delay(*args))


def notify_after_commit(kind: str, event_id: int) -> None:
    """Enqueue the email about an audit event once the transaction has committed (sending is
    network I/O; allocations/tasks.py `send_notification`)."""
    enqueue("allocations.send_notification", kind, event_id)
