"""Sign-in pages: the login page (with "Sign in with <institution>" when configured), the
start of the provider's code flow, its callback, and logout that ends the provider's session
too (RP-initiated logout). Every refusal is a page that says what happened, and is logged."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import requests
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from . import discovery
from .claims import SignInRefused

log = logging.getLogger(__name__)

# reason: (HTTP status, title, what to tell the person)
REFUSALS = {
    "unverified": (
        403,
        "Your email address is not verified",
        "{provider} did not confirm that your email address is verified, so the "
        "portal cannot create or open an account with it. Verify your address at "
        "{provider}, then sign in again.",
    ),
    "username": (
        403,
        "Your account name cannot be used here",
        "The account name {provider} gave ({name}) is not a valid login name on the "
        "compute clusters (lower-case letters, digits, _ and -, starting with a letter "
        "or _, at most 32). Ask the portal's staff to help.",
    ),
    "collision": (
        409,
        "An account with your {what} already exists",
        "The portal already has an account with the same {what}, and it is not "
        "linked to your sign-in at {provider}. It was not merged with yours: ask the "
        "portal's staff to link the accounts. This attempt has been recorded.",
    ),
    "inactive": (
        403,
        "Your account is disabled",
        "Your portal account is disabled. Ask the portal's staff.",
    ),
    "tampered": (
        400,
        "This sign-in could not be completed",
        "The answer from {provider} did not match a sign-in this browser started: it "
        "was already used, it expired, or it was changed on the way. Nothing was signed "
        "in. Start again from the login page.",
    ),
    "provider": (
        400,
        "{provider} refused the sign-in",
        "{provider} answered: {error}. Nothing was signed in.",
    ),
    "unavailable": (
        503,
        "{provider} cannot be reached",
        "The portal could not reach the sign-in service of {provider}. Try again in a few minutes.",
    ),
}


def refused(request: HttpRequest, reason: str, detail: object = "", **context: str) -> HttpResponse:
    status, title, message = REFUSALS[reason]
    values = {
        "provider": settings.OIDC_PROVIDER_NAME,
        "name": "",
        "what": "username",
        "error": "",
        **context,
    }
    log.warning(
        "OpenID Connect sign-in refused (%s) from %s: %s",
        reason,
        request.META.get("REMOTE_ADDR"),
        detail,
    )
    return render(
        request,
        "identity/refused.html",
        {"title": title.format(**values), "message": message.format(**values), "reason": reason},
        status=status,
    )


class LoginView(auth_views.LoginView):
    """Django's login page, plus the provider's button; with PORTAL_LOCAL_LOGIN=false the
    password form is gone and a password post is refused."""

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["passwords_off"] = not settings.PORTAL_LOCAL_LOGIN
        if settings.OIDC_ENABLED:
            query = urlencode({"next": context["next"]}) if context.get("next") else ""
            context["oidc_name"] = settings.OIDC_PROVIDER_NAME
            context["oidc_url"] = reverse("oidc_authentication_init") + (
                f"?{query}" if query else ""
            )
        return context

    def post(self, request, *args, **kwargs):
        if not settings.PORTAL_LOCAL_LOGIN:
            self.object = None
            context = self.get_context_data(form=self.get_form())
            context["password_refused"] = True
            return self.render_to_response(context, status=403)
        return super().post(request, *args, **kwargs)


class LogoutView(auth_views.LogoutView):
    """Django's logout; after a provider sign-in, on to the provider's end_session_endpoint
    with the ID token as hint, which comes back to the login page."""

    def post(self, request, *args, **kwargs):
        id_token = request.session.get("oidc_id_token")
        response = super().post(request, *args, **kwargs)
        if not (id_token and settings.OIDC_ENABLED):
            return response
        try:
            endpoint = discovery.metadata().get("end_session_endpoint")
        except discovery.ProviderUnavailable:
            endpoint = None  # signed out here; the provider's session outlives it
        if not endpoint:
            return response
        query = urlencode(
            {
                "id_token_hint": id_token,
                "client_id": settings.OIDC_RP_CLIENT_ID,
                "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
            }
        )
        return HttpResponseRedirect(f"{endpoint}?{query}")


class AuthenticateView(OIDCAuthenticationRequestView):
    """Start the code flow: state, nonce and a PKCE verifier kept in the session."""

    @staticmethod
    def get_settings(attr, *args):
        if attr == "OIDC_OP_AUTHORIZATION_ENDPOINT":
            return ""  # from discovery, in get()
        return import_from_settings(attr, *args)

    def get(self, request):
        if not settings.OIDC_ENABLED:
            raise Http404("OpenID Connect sign-in is not configured")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = discovery.metadata()["authorization_endpoint"]
        except discovery.ProviderUnavailable as exc:
            return refused(request, "unavailable", exc)
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """The provider's answer. The library matches `state` to one this session started (and
    forgets it, so a replay fails), sends the PKCE verifier, checks the nonce; every way that
    fails ends on a page that says so, never a bare 400 or a 500."""

    def get(self, request):
        if not settings.OIDC_ENABLED:
            raise Http404("OpenID Connect sign-in is not configured")
        try:
            return super().get(request)
        except SignInRefused as exc:
            return refused(request, exc.reason, exc, **{k: str(v) for k, v in exc.context.items()})
        except SuspiciousOperation as exc:
            return refused(request, "tampered", exc)
        except discovery.ProviderUnavailable as exc:
            return refused(request, "unavailable", exc)
        except requests.HTTPError as exc:  # the token endpoint refused the code (replayed?)
            return refused(request, "tampered", exc)
        except requests.RequestException as exc:
            return refused(request, "unavailable", exc)

    def login_failure(self):
        error = self.request.GET.get("error")
        if error:
            description = self.request.GET.get("error_description", "")
            return refused(
                self.request,
                "provider",
                error,
                error=f"{error} ({description})" if description else error,
            )
        return refused(self.request, "tampered", "no matching sign-in in this session")
