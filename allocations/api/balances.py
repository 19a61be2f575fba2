"""`GET balances/ood.json`: the balance file Open OnDemand's dashboard reads (allocations/ondemand.py
says what is in it; docs/ondemand.md how a site points its dashboard at it).

Who sees which rows:

- the site's key (settings.PORTAL_OOD_BALANCE_KEY, as `Authorization: Bearer <key>` or
  `?key=<key>`): every member of every project, which is what a site's dashboard needs (it keeps
  the rows of the user it runs as). The key opens this endpoint only and is no user;
- staff (`allocations.roles.is_staff`) with a token or a session: every member, as the key;
- anyone else signed in: their own rows only (their logins in their projects);
- no credentials, a wrong key, or a key when the site has none: 401.
"""

from __future__ import annotations

import hmac
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from core.errors import NotFound

from ..ondemand import facility_id, ood_balances, ood_document
from ..roles import is_staff


class SiteKey:
    """`request.auth` when the site's key was given (`request.user` is then anonymous)."""


class SiteKeyAuthentication(BaseAuthentication):
    """The site's key, compared in constant time. Given (as a Bearer header or `?key=`), it
    decides: right, the site; wrong, or no key configured, a 401 (never a fall back to other
    credentials). Not given: the API's usual token and session authentication follow."""

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[AnonymousUser, SiteKey] | None:
        given = self._given(request)
        if given is None:
            return None
        expected: str = settings.PORTAL_OOD_BALANCE_KEY
        if not expected:
            raise AuthenticationFailed(
                "This portal has no site key for OnDemand balances (PORTAL_OOD_BALANCE_KEY)."
            )
        if not hmac.compare_digest(given.encode(errors="replace"), expected.encode()):
            raise AuthenticationFailed("Wrong site key.")
        return AnonymousUser(), SiteKey()

    def _given(self, request: Request) -> str | None:
        header = get_authorization_header(request).split()
        if header and header[0].lower() == self.keyword.lower().encode():
            if len(header) != 2:
                raise AuthenticationFailed("Give the key as `Authorization: Bearer <key>`.")
            try:
                return header[1].decode()
            except UnicodeDecodeError:
                raise AuthenticationFailed("Wrong site key.") from None
        return request.query_params.get("key")

    def authenticate_header(self, request: Request) -> str:
        return f'{self.keyword} realm="api"'


class SiteKeyScheme(OpenApiAuthenticationExtension):
    """The key in the OpenAPI document, beside the token and the session."""

    target_class = "allocations.api.balances.SiteKeyAuthentication"
    name = "siteKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "The site's key for OnDemand balances (PORTAL_OOD_BALANCE_KEY).",
        }


class SiteKeyOrSignedIn(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, SiteKey) or bool(request.user.is_authenticated)


class OodBalanceOut(serializers.Serializer):
    user = serializers.CharField(help_text="The member's cluster login (as OnDemand knows them).")
    project = serializers.CharField(help_text="The project's code.")
    value = serializers.IntegerField(
        help_text="Whole GPU-hours left on the project's active allocations, rounded down."
    )


class OodBalanceConfigOut(serializers.Serializer):
    unit = serializers.CharField(help_text='"GPU-hour": OnDemand writes "<unit> balance is N".')
    project_type = serializers.CharField(help_text='"project": shown before the project code.')


class OodBalancesOut(serializers.Serializer):
    version = serializers.IntegerField(help_text="1, the format's only version.")
    timestamp = serializers.IntegerField(help_text="When it was made, in Unix seconds.")
    config = OodBalanceConfigOut()
    balances = OodBalanceOut(many=True)


class OodBalancesView(APIView):
    """Each member's whole GPU-hours left per project, in Open OnDemand's balance format."""

    # The key first: given, it decides (a wrong one is a 401, and so is the 401 of no
    # credentials: `WWW-Authenticate: Bearer`); then the API's token and session.
    authentication_classes = [
        SiteKeyAuthentication,
        *cast("list[type[BaseAuthentication]]", api_settings.DEFAULT_AUTHENTICATION_CLASSES),
    ]
    permission_classes = [SiteKeyOrSignedIn]
    renderer_classes = [JSONRenderer]

    @extend_schema(
        operation_id="ood_balances",
        summary="Balances for Open OnDemand's dashboard (OOD_BALANCE_PATH)",
        parameters=[
            OpenApiParameter(
                "facility",
                str,
                description="A facility's slug: only its allocations (a site's cluster). "
                "Unknown: 404.",
            ),
            OpenApiParameter(
                "key",
                str,
                description="The site's key, where a header cannot be sent; "
                "`Authorization: Bearer <key>` keeps it out of access logs.",
            ),
        ],
        responses={
            200: OodBalancesOut,
            401: OpenApiResponse(description="No credentials, bad ones, or a wrong site key."),
            # The API's shared error shape (portal/schema.py), which this app cannot import.
            404: OpenApiResponse(
                response={"$ref": "#/components/schemas/Error"},
                description="No facility with that slug.",
            ),
        },
    )
    def get(self, request: Request) -> Response:
        facility = request.query_params.get("facility")
        wanted = None
        if facility is not None:
            wanted = facility_id(facility)
            if wanted is None:
                raise NotFound(f"No facility {facility[:80]!r}.")
        everyone = isinstance(request.auth, SiteKey) or is_staff(request.user)
        rows = ood_balances(user_id=None if everyone else request.user.pk, facility_id=wanted)
        document = ood_document(rows, now=timezone.now())
        return Response(OodBalancesOut(document).data)
