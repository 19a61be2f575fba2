"""An audited write: compare-and-swap state moves with an audit event.

A move is allowed only if (from, to) is in the model's table. The row is updated with
`filter(pk=.., <field>=old).update(..)`: if another worker moved it first, 0 rows change and
`TransitionConflict` is raised, so two workers can never both win.

Every audited write (`record_event`) bumps the versions of the projects it touches
(core.versions `projects_bump`), after the commit, so a page's cached fragment of them renders
afresh. What else follows a write (an email, a task) is the calling service's to enqueue
(core.tasks `enqueue`, allocations.notifications `notify_after_commit`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models

from core.errors import Conflict
from core.versions import projects_bump

from .models import Event, Project


class InvalidTransition(Conflict):
    """A state move the table does not allow (HTTP 409, with `from` and `to`)."""

    def __init__(
        self, obj: models.Model, from_state: str, to_state: str, message: str | None = None
    ) -> None:
        self.from_state = from_state
        self.to_state = to_state
        label = obj._meta.verbose_name
        super().__init__(
            message
            or f"This {label} is {from_state.replace('_', ' ')}; it cannot "
            f"move to {to_state.replace('_', ' ')}.",
            **{"from": from_state, "to": to_state},
        )


class TransitionConflict(InvalidTransition):
    """Someone else moved the object between our read and our write (HTTP 409)."""

    def __init__(self, obj: models.Model, from_state: str, to_state: str) -> None:
        super().__init__(
            obj,
            from_state,
            to_state,
            f"This {obj._meta.verbose_name} was changed by someone else; reload it.",
        )


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
    changed = (
        type(obj)
        ._default_manager.filter(pk=obj.pk, **{field: old})
        .update(**{field: to}, **updates)
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
