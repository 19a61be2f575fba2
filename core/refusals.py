"""Refusals on pages: the one mapping of the domain's errors (core.errors) for the HTML views,
as `core.api.exception_handler` is for the API.

- A form page runs its service through `form_call`: an `Invalid` refusal goes onto the form, each
  message on its field (the last part of a dotted field: "params.dataset" -> `dataset`) or at the
  top, and `form_status` gives the page's status (400); a `Conflict` or `Forbidden` goes at the top
  of the form with its own status (409, 403).
- An action button (a POST-only URL) is wrapped in `@refused_to("url-name", "pk")`: any refusal
  becomes a message on the page the button was on (a redirect there).
- `NotFound` is never caught here: Django answers it with its 404 page.

Only the vocabulary is mapped: the services raise nothing else (Django's own `ValidationError`
and `PermissionDenied` are not theirs to raise; tests/portal/test_architecture.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from .errors import NON_FIELD, DomainError, Invalid, error_messages

T = TypeVar("T")
View = Callable[..., HttpResponse]


def field_errors(error: DomainError) -> dict[str, list[str]]:
    """A refusal's messages by the field they belong to (NON_FIELD for the rest)."""
    if isinstance(error, Invalid):
        return error.field_errors
    return {NON_FIELD: error_messages(error)}


def form_call(form: forms.BaseForm, service: Callable[..., T], /, **kwargs: Any) -> T | None:
    """`service(**kwargs)`, or None with its refusal on `form` (see the module's docstring)."""
    try:
        return service(**kwargs)
    except Http404:
        raise
    except DomainError as error:
        for field, problems in field_errors(error).items():
            name = field.rsplit(".", 1)[-1]
            form.add_error(name if name in form.fields else None, problems)
        form.refused_status = error.status  # type: ignore[attr-defined]
        return None


def form_status(form: forms.BaseForm) -> int:
    """The status of a form page: 200, or the status of what refused the form (400 for field
    errors)."""
    if not form.is_bound or not form.errors:
        return 200
    status: int = getattr(form, "refused_status", 400)
    return status


def refused_to(
    url_name: str, *arg_names: str, prefix: str = "", also: tuple[type[Exception], ...] = ()
) -> Callable[[View], View]:
    """Decorate an action view: a refusal it raises (or one of `also`) becomes an error message
    and a redirect to `url_name`, reversed with the view's keyword arguments `arg_names`."""

    caught: tuple[type[Exception], ...] = (DomainError, *also)

    def decorate(view: View) -> View:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                return view(request, *args, **kwargs)
            except Http404:
                raise
            except caught as error:
                for message in error_messages(error):
                    messages.error(request, f"{prefix}{message}")
                return redirect(url_name, *(kwargs[name] for name in arg_names))

        return wrapped

    return decorate
