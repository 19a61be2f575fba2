"""The account token (what POST auth/token/ and `portal login` with a password get) is as safe
as a personal token: stored as a hash, expiring, listed and revocable on /account/tokens/,
revoked by POST auth/logout/; every token of a person ends when their password changes or the
account is deactivated; a token name with a control character is refused."""

from __future__ import annotations

import datetime as dt
import importlib
import re
import types

import pytest
from django.apps import apps
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from portal.tokens import services
from portal.tokens.models import PersonalToken

pytestmark = pytest.mark.django_db


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def sign_in(username: str = "rosalind", password: str = "pw-for-tests") -> str:
    response = APIClient().post(
        "/api/v1/auth/token/", {"username": username, "password": password}, format="json"
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


def works(key: str) -> bool:
    status = bearer(key).get("/api/v1/projects/").status_code
    assert status in (200, 401), status
    return status == 200


def test_sign_in_makes_an_account_token_stored_only_as_a_hash(researcher, settings):
    settings.PORTAL_ACCOUNT_TOKEN_DAYS = 12
    key = sign_in()
    token = PersonalToken.objects.get(user=researcher)
    assert token.kind == "account" and token.name == services.ACCOUNT_TOKEN_NAME
    assert token.key_hash == services.key_hash(key)
    assert key not in str(PersonalToken.objects.filter(pk=token.pk).values().get())
    assert "authtoken_token" not in connection.introspection.table_names()  # no clear copy
    assert abs(token.expires_at - token.created_at - dt.timedelta(days=12)) < dt.timedelta(
        seconds=1
    )
    me = bearer(key).get("/api/v1/auth/me/").json()
    assert me["auth"] == "token" and me["token_expires_at"]


def test_each_sign_in_makes_a_new_token_and_the_oldest_beyond_ten_are_revoked(researcher):
    first = sign_in()
    assert sign_in() != first  # never handed out twice: only the hash is kept
    keys = [
        services.account_token_create(user=researcher)[1]
        for _ in range(services.MAX_ACCOUNT_TOKENS - 1)
    ]
    assert not works(first)
    assert "revoked" in bearer(first).get("/api/v1/projects/").json()["detail"]
    assert all(works(k) for k in keys)
    live = PersonalToken.objects.filter(user=researcher, kind="account", revoked_at=None)
    assert live.count() == services.MAX_ACCOUNT_TOKENS


def test_account_tokens_do_not_crowd_out_personal_ones(researcher):
    _, personal = services.token_create(user=researcher, name="ci", days=7)
    for _ in range(services.MAX_ACCOUNT_TOKENS + 1):
        services.account_token_create(user=researcher)
    assert works(personal)


def test_an_expired_account_token_is_a_401(researcher):
    key = sign_in()
    PersonalToken.objects.filter(user=researcher).update(
        expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    refused = bearer(key).get("/api/v1/projects/")
    assert refused.status_code == 401
    assert "account token expired on" in refused.json()["detail"]


def test_the_account_token_is_listed_and_revoked_on_the_tokens_page(client, researcher):
    key = sign_in()
    token = PersonalToken.objects.get(user=researcher)
    client.force_login(researcher)
    page = client.get("/account/tokens/").content.decode()
    assert "Account token (from sign-in / portal login)" in page and token.prefix in page
    assert f'action="/account/tokens/{token.pk}/revoke/"' in page
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 302
    refused = bearer(key).get("/api/v1/projects/")
    assert refused.status_code == 401 and "revoked on" in refused.json()["detail"]


def test_logout_revokes_the_token_of_the_request_and_no_other(researcher):
    key, other = sign_in(), sign_in()
    _, personal = services.token_create(user=researcher, name="laptop", days=7)
    assert bearer(key).post("/api/v1/auth/logout/").status_code == 204
    assert not works(key)
    assert works(other) and works(personal)
    assert bearer(personal).post("/api/v1/auth/logout/").status_code == 204  # either kind
    assert not works(personal)
    assert bearer(key).post("/api/v1/auth/logout/").status_code == 401  # once


def test_logout_needs_a_token_not_a_session(client, researcher):
    key = sign_in()
    client.force_login(researcher)
    assert client.post("/api/v1/auth/logout/").status_code in (401, 403)
    assert works(key)


def test_a_password_change_ends_every_token_made_before_it(researcher):
    account = sign_in()
    _, personal = services.token_create(user=researcher, name="ci", days=30)
    researcher.set_password("a-new-password")
    researcher.save()
    assert not works(account) and not works(personal)
    assert PersonalToken.objects.filter(user=researcher, revoked_at=None).count() == 0
    assert works(sign_in(password="a-new-password"))  # a token made after it works


def test_a_password_written_around_save_still_ends_the_tokens(researcher):
    """No signal runs for a queryset update: the fingerprint on the token is checked."""
    account = sign_in()
    _, personal = services.token_create(user=researcher, name="ci", days=30)
    User.objects.filter(pk=researcher.pk).update(password=make_password("changed"))
    for key in (account, personal):
        refused = bearer(key).get("/api/v1/projects/")
        assert refused.status_code == 401
        assert "before the account's password changed" in refused.json()["detail"]


def test_saving_a_user_without_a_new_password_keeps_the_tokens(researcher):
    key = sign_in()
    researcher.first_name = "Ros"
    researcher.save()
    assert works(key)


def test_a_deactivated_persons_tokens_are_401_and_stay_dead(researcher):
    account = sign_in()
    _, personal = services.token_create(user=researcher, name="ci", days=30)
    researcher.is_active = False
    researcher.save()
    assert not works(account) and not works(personal)
    researcher.is_active = True
    researcher.save()
    assert not works(account) and not works(personal)  # reactivation revives nothing


def test_an_inactive_persons_token_is_refused_even_when_deactivated_around_save(researcher):
    key = sign_in()
    User.objects.filter(pk=researcher.pk).update(is_active=False)
    refused = bearer(key).get("/api/v1/projects/")
    assert refused.status_code == 401 and "inactive" in refused.json()["detail"]


@pytest.mark.parametrize(
    "name", ["lap\x00top", "lap\ntop", "tab\there", "bell\x07", "rtl\u202eabc"]
)
def test_a_control_character_in_a_name_is_a_form_error_and_makes_nothing(client, researcher, name):
    client.force_login(researcher)
    response = client.post("/account/tokens/", {"name": name, "days": "30"})
    assert response.status_code == 400
    assert "No control characters" in response.content.decode()
    assert not PersonalToken.objects.exists()


def test_the_service_refuses_a_nul_on_the_name_field(researcher):
    with pytest.raises(ValidationError) as refused:
        services.token_create(user=researcher, name="a\x00b", days=30)
    assert list(refused.value.message_dict) == ["name"]
    assert not PersonalToken.objects.exists()


def test_old_drf_tokens_become_hashed_account_tokens(researcher):
    """The migration moves DRF's clear-text rows (a database from before) to hashes and deletes
    them; the key keeps working until the account token lifetime runs out."""
    legacy = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            'CREATE TABLE authtoken_token ("key" varchar(40) PRIMARY KEY, '
            "created timestamp with time zone NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)",
            [legacy, timezone.now(), researcher.pk],
        )
    migration = importlib.import_module("portal.tokens.migrations.0002_account_tokens")
    migration.hash_drf_tokens(apps, types.SimpleNamespace(connection=connection))

    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM authtoken_token")
        assert cursor.fetchone()[0] == 0
    token = PersonalToken.objects.get(user=researcher)
    assert token.kind == "account" and token.key_hash == services.key_hash(legacy)
    assert works(legacy)
    assert re.fullmatch(r"[0-9a-f]{64}", token.key_hash)
