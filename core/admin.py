"""What every app's admin shares: read-only model admins (the services own every write) and the
one loop of an admin action that calls a service for each selected object."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.contrib import admin, messages
from django.db.models import Model
from django.http import HttpRequest

from .errors import DomainError

M = TypeVar("M", bound=Model)


class ReadOnlyMixin:
    """Nothing added, changed or deleted by hand in the admin: the services own every write
    (admin actions call them). Used by every read-only admin and inline of the portal."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def run_action(
    modeladmin: admin.ModelAdmin[Any],
    request: HttpRequest,
    objects: Iterable[M],
    action: Callable[[M], object],
    *,
    verb: str,
    noun: str = "item(s)",
) -> int:
    """Call `action` (a service) on each object. A refusal (core.errors) is a warning naming the
    object and the others go on; then one success line ("Approved 3 item(s)."), if any was
    done. Returns how many were done."""
    done = 0
    for obj in objects:
        try:
            action(obj)
        except DomainError as error:
            modeladmin.message_user(request, f"#{obj.pk}: {error}", messages.WARNING)
        else:
            done += 1
    if done:
        modeladmin.message_user(request, f"{verb} {done} {noun}.", messages.SUCCESS)
    return done
