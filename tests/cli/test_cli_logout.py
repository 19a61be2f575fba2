"""`portal logout` revokes the token at the portal (POST auth/logout/), then forgets it: the
key it held is a 401 afterwards, from anywhere."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from portal.tokens.models import PersonalToken

pytestmark = pytest.mark.django_db(transaction=True)


def status_with(key: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client.get("/api/v1/projects/").status_code


def test_logout_revokes_the_account_token_and_forgets_it(cli, researcher):
    login = cli("login", "--url", cli.url, "--username", "rosalind", "--password", "pw-for-tests")
    assert login.code == 0, login.err
    key = json.loads(cli.config.read_text())["token"]
    assert status_with(key) == 200

    out = cli("logout")
    assert out.code == 0, out.err
    assert "Revoked" in out.err
    assert not cli.config.exists()
    assert status_with(key) == 401
    assert PersonalToken.objects.get(user=researcher, kind="account").revoked_at is not None

    again = cli("logout")  # nothing stored any more
    assert again.code == 0 and "Nothing stored" in again.err


def test_logout_with_a_dead_token_still_forgets_it(cli, researcher):
    assert (
        cli("login", "--url", cli.url, "--username", "rosalind", "--password", "pw-for-tests").code
        == 0
    )
    PersonalToken.objects.filter(user=researcher).update(revoked_at="2020-01-01T00:00Z")
    out = cli("logout", "--json")
    assert out.code == 0, out.err
    assert out.json() == {"revoked": False, "forgotten": True}
    assert not cli.config.exists()
