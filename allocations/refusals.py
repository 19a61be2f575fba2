"""Refusals on pages: the one mapping of the domain's errors (allocations.errors) for the HTML
views, as `portal.api.exception_handler` is for the API.

- A form page runs its service through `form_call`: an `Invalid` refusal goes onto the form, each
  message on its field (the last part of a dotted field: "params.dataset" -> `dataset`) or at the
  top, and `form_status` gives the page's status (400); a `Conflict` or `Forbidden` goes at the top
  of the form with its own status (409, 403).
- An action button (a POST-only URL) is wrapped in `@refused_to("url-name", "pk")`: any refusal
  becomes a message on the page the button was on (a redirect there).
- `NotFound` is never caught here: Django answers it with its 404 page.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect

from .errors import NON_FIELD, DomainError, error_messages

T = TypeVar("T")
#: What a page turns into a message or a form error: the domain's refusals, and Django's own
#: ValidationError and PermissionDenied where a service (or a model's `full_clean`) raises them.
REFUSALS: tuple[type[Exception], ...] = (DomainError, ValidationError, PermissionDenied)


def _status(error: Exception) -> int:
    if isinstance(error, DomainError):
        return error.status
    return 403 if isinstance(error, PermissionDenied) else 400


def _field_errors(error: Exception) -> dict[str, list[str]]:
    if isinstance(error, DomainError) and hasattr(error, "field_errors"):
        return error.field_errors
    if isinstance(error, ValidationError) and hasattr(error, "error_dict"):
        return error.message_dict
    return {NON_FIELD: error_messages(error)}


def form_call(form: forms.BaseForm, service: Callable[..., T], /, **kwargs: Any) -> T | None:
    """`service(**kwargs)`, or None with its refusal on `form` (see the module's docstring)."""
    try:
        return service(**kwargs)
    except Http404:
        raise
    except REFUSALS as error:
        for field, problems in _field_errors(error).items():
            name = field.rsplit(".", 1)[-1]
            form.add_error(name if name in form.fields else None, problems)
        form.refused_status = _status(error)  # type: ignore[attr-defined]
        return None


def form_status(form: forms.BaseForm) -> int:
    """The status of a form page: 200, or the status of what refused the form (400 for field
    errors)."""
    if not form.is_bound or not form.errors:
        return 200
    return getattr(form, "refused_status", 400)


def refused_to(url_name: str, *arg_names: str, prefix: str = "",
               also: tuple[type[Exception], ...] = ()) -> Callable:
    """Decorate an action view: a refusal it raises (or one of `also`) becomes an error message
    and a redirect to `url_name`, reversed with the view's keyword arguments `arg_names`."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @functools.wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            try:
                return view(request, *args, **kwargs)
            except Http404:
                raise
            except (*REFUSALS, *also) as error:
                for message in error_messages(error):
                    messages.error(request, f"{prefix}{message}")
                return redirect(url_name, *(kwargs[name] for name in arg_names))
        return wrapped
    return decorate
