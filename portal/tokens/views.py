"""/account/tokens/: a person's API tokens, personal and account ones (make, list, revoke)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.cache import add_never_cache_headers
from django.views.decorators.http import require_POST

from core.refusals import form_call, form_status

from . import selectors, services


def _days(raw: str) -> int | None:
    """The lifetime as Django parses a whole number, or None: never `isdigit()` and `int()`
    ("\u00b2" is a digit to `isdigit()` and no number to `int()`, a 500)."""
    try:
        return forms.IntegerField(min_value=0, max_value=100_000).clean(raw)
    except ValidationError:
        return None


class TokenForm(forms.Form):
    """Where the service's refusals land (core.refusals `form_call`), on `name` or `days`: the
    fields take anything, the service (`token_create`) checks both."""

    name = forms.Field(required=False)
    days = forms.Field(required=False)


@login_required
def token_list(request: HttpRequest) -> HttpResponse:
    """The list and the form; a POST makes a token and shows its key on this one response."""
    context: dict[str, Any] = {"errors": {}, "name": "", "days": services.DEFAULT_EXPIRY_DAYS}
    status = 200
    if request.method == "POST":
        context["name"] = request.POST.get("name", "")
        days = _days(request.POST.get("days", ""))
        context["days"] = days
        form = TokenForm(request.POST)
        # The service refuses a lifetime outside its choices with a message on `days`.
        made = form_call(
            form,
            services.token_create,
            user=request.user,
            name=context["name"],
            days=-1 if days is None else days,
        )
        if made is None:
            context["errors"] = form.errors
            status = form_status(form)
        else:
            token, key = made
            context.update(new_token=token, new_key=key, name="")
    context.update(
        tokens=selectors.user_tokens(request.user),
        expiry_days=services.EXPIRY_DAYS,
        account_days=settings.PORTAL_ACCOUNT_TOKEN_DAYS,
        account_max=services.MAX_ACCOUNT_TOKENS,
    )
    response = render(request, "tokens/token_list.html", context, status=status)
    add_never_cache_headers(response)  # the page may carry a key: no cache keeps it
    return response


@login_required
@require_POST
def token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = services.token_revoke(token_id=pk, by=request.user)
    messages.success(request, f"Revoked \u201c{token.name}\u201d: it no longer works.")
    return redirect("account-tokens")
