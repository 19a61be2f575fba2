"""Sessions are Django's `cached_db` store and the user is read by Django's ModelBackend (after
django-axes' check): a login survives losing the cache, a logout holds, an inactive user is
refused."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.backends.cached_db import KEY_PREFIX, SessionStore
from django.contrib.sessions.models import Session
from django.core.cache import caches
from django.test import Client

pytestmark = pytest.mark.django_db


def _login(researcher) -> Client:
    client = Client()
    login = client.post(
        "/accounts/login/", {"username": researcher.username, "password": "pw-for-tests"}
    )
    assert login.status_code == 302
    return client


def test_a_login_is_a_cached_db_session_read_by_the_stock_backend(researcher):
    client = _login(researcher)
    assert isinstance(client.session, SessionStore)
    assert client.session[BACKEND_SESSION_KEY] == "django.contrib.auth.backends.ModelBackend"
    key = client.cookies["sessionid"].value
    assert caches[settings.SESSION_CACHE_ALIAS].get(KEY_PREFIX + key) is not None
    assert Session.objects.filter(session_key=key).exists()  # written through


def test_a_login_survives_losing_the_cache_and_a_logout_holds(researcher):
    client = _login(researcher)
    key = client.cookies["sessionid"].value
    caches[settings.SESSION_CACHE_ALIAS].delete(KEY_PREFIX + key)  # a Redis flush
    assert client.get("/").status_code == 200  # read back from the database
    client.post("/accounts/logout/")
    assert not Session.objects.filter(session_key=key).exists()
    assert caches[settings.SESSION_CACHE_ALIAS].get(KEY_PREFIX + key) is None
    stolen = Client()
    stolen.cookies["sessionid"] = key
    assert stolen.get("/")["Location"].startswith("/accounts/login/")


def test_an_inactive_user_is_logged_out(researcher):
    client = _login(researcher)
    assert client.get("/").status_code == 200
    researcher.is_active = False
    researcher.save()
    assert client.get("/")["Location"].startswith("/accounts/login/")
