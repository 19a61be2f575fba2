"""Personal API tokens: made, listed and revoked on /account/tokens/; the API takes them beside
DRF's tokens and refuses expired and revoked ones with a 401 that says which; the token
endpoint takes a form body as curl's -d sends it."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import Event
from portal.tokens import services
from portal.tokens.models import PersonalToken

pytestmark = pytest.mark.django_db


def bearer(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_person_makes_a_token_on_the_page_and_it_is_shown_once(client, researcher):
    client.force_login(researcher)
    response = client.post("/account/tokens/", {"name": "laptop", "days": "30"})
    assert response.status_code == 200
    key = re.search(r'value="(pat_[A-Za-z0-9_-]+)"', response.content.decode()).group(1)
    token = PersonalToken.objects.get(user=researcher)
    assert token.name == "laptop" and token.key_hash == services.key_hash(key)
    assert key not in str(PersonalToken.objects.filter(pk=token.pk).values().get())  # only a hash
    assert dt.timedelta(days=30) - (token.expires_at - token.created_at) < dt.timedelta(seconds=1)
    assert "no-store" in response["Cache-Control"]
    listing = client.get("/account/tokens/").content.decode()
    assert "laptop" in listing and token.prefix in listing and key not in listing
    assert bearer(key).get("/api/v1/projects/").status_code == 200
    event = Event.objects.get(
        content_type=ContentType.objects.get_for_model(PersonalToken), object_id=token.pk
    )
    assert event.actor == researcher and event.to_state == "active"


def test_the_page_refuses_a_blank_name_and_an_unlisted_lifetime(client, researcher):
    client.force_login(researcher)
    response = client.post("/account/tokens/", {"name": " ", "days": "1000"})
    assert response.status_code == 400
    page = response.content.decode()
    assert "Give the token a name" in page and "Choose one of 7, 30, 90, 365 days" in page
    assert not PersonalToken.objects.exists()


@pytest.mark.parametrize("days", ["\u00b2", "x", "", "99999999999999999999"])
def test_a_lifetime_that_is_no_whole_number_is_a_400_not_a_500(client, researcher, days):
    client.force_login(researcher)
    response = client.post("/account/tokens/", {"name": "laptop", "days": days})
    assert response.status_code == 400
    assert "Choose one of 7, 30, 90, 365 days" in response.content.decode()
    assert not PersonalToken.objects.exists()


def test_the_settings_pages_link_to_each_other(client, researcher):
    """The name in the header opens the person's settings; the tokens page is one link on."""
    client.force_login(researcher)
    assert "Your settings: notifications, API tokens" in client.get("/").content.decode()
    assert 'href="/account/tokens/"' in client.get("/account/notifications/").content.decode()
    assert 'href="/account/notifications/"' in client.get("/account/tokens/").content.decode()


def test_a_revoked_token_is_a_401_that_says_so(client, researcher):
    token, key = services.token_create(user=researcher, name="ci", days=7)
    client.force_login(researcher)
    response = client.post(f"/account/tokens/{token.pk}/revoke/")
    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None and token.status == "revoked"
    assert "revoked" in client.get("/account/tokens/").content.decode()
    refused = bearer(key).get("/api/v1/allocations/")
    assert refused.status_code == 401
    assert "revoked" in refused.json()["detail"] and "“ci”" in refused.json()["detail"]
    assert refused["WWW-Authenticate"] == "Token"


def test_an_expired_token_is_a_401_that_says_so(researcher):
    token, key = services.token_create(user=researcher, name="old", days=7)
    PersonalToken.objects.filter(pk=token.pk).update(
        expires_at=timezone.now() - dt.timedelta(seconds=1)
    )
    refused = bearer(key).get("/api/v1/allocations/")
    assert refused.status_code == 401 and "expired on" in refused.json()["detail"]


def test_an_unknown_personal_token_is_a_401(researcher):
    services.token_create(user=researcher, name="real", days=7)
    assert bearer("pat_" + "x" * 43).get("/api/v1/allocations/").status_code == 401


def test_nobody_revokes_another_persons_token(client, researcher, outsider):
    token, key = services.token_create(user=researcher, name="mine", days=7)
    client.force_login(outsider)
    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 404
    assert bearer(key).get("/api/v1/projects/").status_code == 200


def test_last_use_is_written_at_most_once_a_minute(researcher, django_assert_num_queries):
    token, key = services.token_create(user=researcher, name="script", days=7)
    assert bearer(key).get("/api/v1/projects/").status_code == 200
    token.refresh_from_db()
    first = token.last_used_at
    assert first is not None
    assert services.token_touch(token=token, now=first + dt.timedelta(seconds=30)) is False
    with django_assert_num_queries(0):
        services.token_touch(token=token, now=first + dt.timedelta(seconds=59))
    assert services.token_touch(token=token, now=first + dt.timedelta(seconds=61)) is True
    token.refresh_from_db()
    assert token.last_used_at == first + dt.timedelta(seconds=61)


def test_drf_tokens_from_auth_token_keep_working(researcher):
    response = APIClient().post(
        "/api/v1/auth/token/", {"username": "rosalind", "password": "pw-for-tests"}, format="json"
    )
    assert response.status_code == 200
    assert bearer(response.json()["token"]).get("/api/v1/projects/").status_code == 200


def test_the_token_endpoint_takes_a_form_body_as_curl_sends_it(researcher):
    client = APIClient()
    response = client.post(
        "/api/v1/auth/token/",
        "username=rosalind&password=pw-for-tests",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 200
    assert bearer(response.json()["token"]).get("/api/v1/projects/").status_code == 200
    wrong = client.post(
        "/api/v1/auth/token/",
        "username=rosalind&password=nope",
        content_type="application/x-www-form-urlencoded",
    )
    assert wrong.status_code == 400 and wrong.json()["non_field_errors"]


def test_a_nul_in_a_form_body_is_a_400_not_a_500(researcher):
    response = APIClient().post(
        "/api/v1/auth/token/",
        "username=ros%00alind&password=x",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 400 and "NUL" in response.json()["detail"]


def test_other_bodies_are_still_a_415(researcher):
    response = APIClient().post("/api/v1/auth/token/", "<x/>", content_type="application/xml")
    assert response.status_code == 415
