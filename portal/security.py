"""Security plumbing (docs/security.md): the Content-Security-Policy header and what a locked-out
login sees. Login throttling itself is django-axes, configured in settings."""

from __future__ import annotations

import math
from collections.abc import Callable

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_cool_off
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


class LoginThrottleBackend(AxesStandaloneBackend):
    """django-axes' check before any password is compared, for logins that come over the
    network (the login pages and the token endpoint, which always pass the request). A call
    without a request (a management command, a shell, a test checking a password) is not a
    network login: axes would refuse it outright, so it is left to the next backend."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def _policy() -> str:
    return "; ".join(f"{name} {value}" for name, value in settings.PORTAL_CSP.items())


class ContentSecurityPolicyMiddleware:
    """Send `Content-Security-Policy` on every response that has none: scripts, styles, fonts
    and images from the portal's own origin only (its static assets are all local), no
    framing, no plugins. Django 5.2 has no CSP of its own."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.source, self.header = settings.PORTAL_CSP, _policy()

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if settings.PORTAL_CSP is not self.source:  # settings replaced (tests): build it again
            self.source, self.header = settings.PORTAL_CSP, _policy()
        response.headers.setdefault("Content-Security-Policy", self.header)
        return response


def lockout_message() -> str:
    cool_off = get_cool_off()
    if cool_off is None:
        wait = "Ask an administrator to unlock the account."
    else:
        minutes = max(1, math.ceil(cool_off.total_seconds() / 60))
        wait = f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."
    return (
        f"Too many failed logins for this account from your address ({settings.AXES_FAILURE_LIMIT}"
        f" in a row): logins are refused for now, even with the right password. {wait}"
    )


def lockout_response(
    request: HttpRequest, original_response=None, credentials=None
) -> HttpResponse:
    """django-axes' answer to a locked-out login (AXES_LOCKOUT_CALLABLE): a 429 with a clear
    message, as JSON for the API and as the login page for a browser."""
    status = settings.AXES_HTTP_RESPONSE_CODE
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": lockout_message()}, status=status)
    from django.contrib.auth.forms import AuthenticationForm

    return render(
        request,
        "registration/login.html",
        {"form": AuthenticationForm(request), "locked_out": lockout_message()},
        status=status,
    )
