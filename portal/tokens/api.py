"""GET auth/me/: who the credentials belong to, and which token they are (`portal whoami`)."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from .models import PersonalToken


class MeOut(serializers.Serializer):
    username = serializers.CharField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    email = serializers.CharField()
    is_staff = serializers.BooleanField()
    auth = serializers.ChoiceField(choices=["personal-token", "token", "session"],
                                   help_text="How this request was authenticated")
    token_name = serializers.CharField(allow_null=True, help_text="A personal token's name")
    token_expires_at = serializers.DateTimeField(allow_null=True,
                                                 help_text="When a personal token expires")


class MeView(APIView):
    api_conflicts = False

    @extend_schema(responses=MeOut)
    def get(self, request):
        user, token = request.user, request.auth
        personal = token if isinstance(token, PersonalToken) else None
        kind = "personal-token" if personal else ("token" if token is not None else "session")
        return Response(MeOut({
            "username": user.get_username(), "first_name": user.first_name,
            "last_name": user.last_name, "email": user.email, "is_staff": user.is_staff,
            "auth": kind, "token_name": personal.name if personal else None,
            "token_expires_at": personal.expires_at if personal else None}).data)
