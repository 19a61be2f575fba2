"""GET auth/me/: who the credentials belong to, and which token they are (`portal whoami`);
POST auth/logout/: revoke the token the request came with (`portal logout`)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from . import services
from .authentication import TokenAuthentication
from .models import PersonalToken


class MeOut(serializers.Serializer):
    username = serializers.CharField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    email = serializers.CharField()
    is_staff = serializers.BooleanField()
    auth = serializers.ChoiceField(
        choices=["personal-token", "token", "session"],
        help_text="How this request was authenticated: a personal token, the account token "
        "from auth/token/, or a browser session",
    )
    token_name = serializers.CharField(allow_null=True, help_text="The token's name")
    token_expires_at = serializers.DateTimeField(
        allow_null=True, help_text="When the token expires"
    )


class MeView(APIView):
    api_conflicts = False

    @extend_schema(responses=MeOut)
    def get(self, request):
        user, token = request.user, request.auth
        token = token if isinstance(token, PersonalToken) else None
        kind = "session" if token is None else "token" if token.is_account else "personal-token"
        return Response(
            MeOut(
                {
                    "username": user.get_username(),
                    "first_name": user.first_name,
                    "last_name": user.last_name,
                    "email": user.email,
                    "is_staff": user.is_staff,
                    "auth": kind,
                    "token_name": token.name if token else None,
                    "token_expires_at": token.expires_at if token else None,
                }
            ).data
        )


class LogoutView(APIView):
    """POST with `Authorization: Token <key>`: that token is revoked at once (either kind);
    later requests with it are a 401. Token authentication only: a browser session has no
    token to revoke (and signs out at /accounts/logout/)."""

    authentication_classes = [TokenAuthentication]
    api_conflicts = False  # a revoked token cannot reach it: nothing to conflict with

    @extend_schema(
        request=None, responses={204: OpenApiResponse(description="The token is revoked.")}
    )
    def post(self, request):
        services.token_revoke(token_id=request.auth.pk, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
