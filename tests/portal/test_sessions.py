"""Sessions and the per-request user read by compiled statements (portal/sessions.py) behave as
Django's own database session store and ModelBackend."""
from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from portal.sessions import SessionStore, UserBackend

pytestmark = pytest.mark.django_db


def _session(**data) -> str:
    store = SessionStore()
    store.update(data)
    store.create()
    return store.session_key


def test_a_session_loads_as_djangos_store_loads_it_until_it_expires():
    key = _session(colour="teal", count=3)
    assert SessionStore(key).load() == DjangoStore(key).load() == {"colour": "teal", "count": 3}
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - dt.timedelta(seconds=1))
    mine, theirs = SessionStore(key), DjangoStore(key)
    assert mine.load() == theirs.load() == {}
    assert mine.session_key is None and theirs.session_key is None  # a fresh key will be made
    assert SessionStore("no-such-session-key-0123456789ab").load() == {}


def test_the_user_is_read_as_model_backend_reads_it(researcher, outsider):
    outsider.is_active = False
    outsider.save()
    mine, theirs = UserBackend(), ModelBackend()
    assert mine.get_user(researcher.pk) == theirs.get_user(researcher.pk) == researcher
    assert mine.get_user(str(researcher.pk)) == researcher  # as the session stores it
    assert mine.get_user(outsider.pk) is theirs.get_user(outsider.pk) is None
    assert mine.get_user(10**9) is theirs.get_user(10**9) is None


def test_pages_follow_the_session_and_the_users_state(researcher):
    client = Client()
    login = client.post("/accounts/login/", {"username": researcher.username,
                                             "password": "pw-for-tests"})
    assert login.status_code == 302
    # A login through the form is kept by this store and its user read by this backend.
    assert isinstance(client.session, SessionStore)
    assert client.session[BACKEND_SESSION_KEY] == "portal.sessions.UserBackend"
    assert client.get("/").status_code == 200
    researcher.is_active = False
    researcher.save()
    assert client.get("/").status_code == 302  # to the login page
    researcher.is_active = True
    researcher.save()
    client.force_login(researcher)
    key = client.cookies["sessionid"].value
    Session.objects.filter(session_key=key).update(expire_date=timezone.now() - dt.timedelta(seconds=1))
    assert client.get("/")["Location"].startswith("/accounts/login/")
