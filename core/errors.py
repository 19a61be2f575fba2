"""One vocabulary for what the domain refuses, so the API and the pages map refusals in one place
each (`core.api.exception_handler`; `core.refusals` for pages). Services raise these and nothing
else: never Django's `ValidationError` or `PermissionDenied` (tests/portal/test_architecture.py
checks it); a model's `full_clean` is run through `clean_or_invalid`, which says the same in
this vocabulary.

Every refusal a service raises is a `DomainError` of one of four kinds:

- `Invalid` (400): the input cannot be used; per-field messages (`errors`), nested by dotted
  field names ("params.dataset" -> `{"params": {"dataset": [...]}}`). It is also Django's
  `ValidationError`, so forms and `full_clean` callers treat it as one.
- `Forbidden` (403): the user sees the object but may not do this (also Django's
  `PermissionDenied`).
- `NotFound` (404): not there for this user, never saying whether it exists (also `Http404`).
- `Conflict` (409): not allowed in the object's current state; `data` carries the numbers
  (`from`/`to` of a state move, the estimate and what is left of a launch).

This module is on the ground floor (it imports only Django), so every app can raise these.
`BackendError` (a compute backend failing) is no domain error: it is not the user's
input or the object's state, and the seam decides what to do with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Model
from django.http import Http404

from .figures import MONEY_KEYS, money_text

NON_FIELD = "non_field_errors"
#: The key of a refusal that names no field (`{"detail": message}`).
DETAIL = "detail"


class DomainError(Exception):
    """A refusal the user can act on. `status` is its HTTP status; `body()` its JSON body."""

    status = 400

    def body(self) -> dict[str, Any]:
        return {DETAIL: str(self)}

    def messages_list(self) -> list[str]:
        """Every message, for a page that shows refusals as messages."""
        return [str(self)]


def _nest(errors: Mapping[str, list[str]]) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for field, messages in errors.items():
        if field == DETAIL:
            body[DETAIL] = " ".join(messages)
            continue
        *outer, last = field.split(".")
        node = body
        for part in outer:
            node = node.setdefault(part, {})
        node.setdefault(last, []).extend(messages)
    return body


class Invalid(DomainError, ValidationError):
    """Input that cannot be used (HTTP 400), with per-field messages and nothing saved.

    `Invalid("message")` names no field (`{"detail": message}`); `Invalid("message",
    field="gpu_hours")` one field; `Invalid({"a": ["..."], "params.b": ["..."]})` several."""

    status = 400

    def __init__(
        self, errors: Mapping[str, list[str] | str] | str, field: str | None = None
    ) -> None:
        if isinstance(errors, str):
            errors = {field or DETAIL: [errors]}
        self.field_errors: dict[str, list[str]] = {
            key: [value] if isinstance(value, str) else [str(m) for m in value]
            for key, value in errors.items()
        }
        ValidationError.__init__(self, {k: list(v) for k, v in self.field_errors.items()})

    def __str__(self) -> str:
        return " ".join(m for ms in self.field_errors.values() for m in ms)

    def body(self) -> dict[str, Any]:
        return _nest(self.field_errors)

    def messages_list(self) -> list[str]:
        return [m for ms in self.field_errors.values() for m in ms]


class Forbidden(DomainError, PermissionDenied):
    """The user may see the object but not do this (HTTP 403)."""

    status = 403


class NotFound(DomainError, Http404):
    """Not there for this user (HTTP 404; never says whether it exists)."""

    status = 404

    def __init__(self, message: str = "Not found.") -> None:
        super().__init__(message)


class Conflict(DomainError):
    """Not allowed in the object's current state (HTTP 409); `data` carries the numbers:
    money (figures.MONEY_KEYS) as decimal strings, other decimals (GPU-hours) as numbers."""

    status = 409

    def __init__(self, message: str, **data: object) -> None:
        super().__init__(message)
        self.message = message
        self.data = {
            k: (
                money_text(v)
                if k in MONEY_KEYS and isinstance(v, Decimal)
                else float(v)
                if isinstance(v, Decimal)
                else v
            )
            for k, v in data.items()
        }

    def __str__(self) -> str:
        return self.message

    def body(self) -> dict[str, Any]:
        return {DETAIL: self.message, **self.data}


def error_messages(error: Exception) -> list[str]:
    """The messages of a refusal (each of an `Invalid`'s), or of any other error as one."""
    if isinstance(error, DomainError):
        return error.messages_list()
    return [str(error)]


def invalid_from(error: ValidationError) -> Invalid:
    """Django's `ValidationError` (a model's `full_clean`, a form field's `clean`) as `Invalid`
    with the same messages: per field where it names fields (a model's non-field errors under
    "__all__", as Django keys them), else under "non_field_errors"."""
    if hasattr(error, "error_dict"):
        return Invalid(error.message_dict)
    return Invalid({NON_FIELD: list(error.messages)})


def clean_or_invalid(obj: Model, **kwargs: Any) -> None:
    """`obj.full_clean(**kwargs)`, refusing in the vocabulary (`Invalid`, same messages)."""
    try:
        obj.full_clean(**kwargs)
    except ValidationError as error:
        raise invalid_from(error) from None
