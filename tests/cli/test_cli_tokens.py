"""The command line with personal tokens: a pasted token logs in; an expired or revoked one
exits 4 with the portal's reason, in words a person can act on."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from portal.tokens import services
from portal.tokens.models import PersonalToken

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_pasted_personal_token_logs_in_and_whoami_names_it(cli, researcher):
    _, key = services.token_create(user=researcher, name="laptop", days=30)
    login = cli("login", "--url", cli.url, "--token", key)
    assert login.code == 0, login.err
    assert key in cli.config.read_text()
    me = cli("whoami")
    assert me.code == 0 and "rosalind" in me.out and "“laptop”" in me.out
    assert cli("whoami", "--json").json()["token_name"] == "laptop"


def test_a_revoked_token_exits_4_and_says_it_was_revoked(cli, researcher):
    token, key = services.token_create(user=researcher, name="ci", days=7)
    assert cli("login", "--url", cli.url, "--token", key).code == 0
    services.token_revoke(token_id=token.pk, by=researcher)
    refused = cli("allocations")
    assert refused.code == 4
    assert "revoked" in refused.err and "/account/tokens/" in refused.err


def test_an_expired_token_exits_4_and_says_it_expired(cli, researcher):
    token, key = services.token_create(user=researcher, name="old", days=7)
    PersonalToken.objects.filter(pk=token.pk).update(
        expires_at=timezone.now() - dt.timedelta(minutes=1)
    )
    refused = cli("jobs", "list", PORTAL_URL=cli.url, PORTAL_TOKEN=key)
    assert refused.code == 4 and "expired on" in refused.err


def test_a_wrong_password_or_no_token_exits_4(cli, researcher):
    wrong = cli("login", "--url", cli.url, "--username", "rosalind", "--password", "nope")
    assert wrong.code == 4 and "Wrong username or password" in wrong.err
    assert not cli.config.exists()
    missing = cli("allocations", PORTAL_URL=cli.url)
    assert missing.code == 4 and "portal login" in missing.err
