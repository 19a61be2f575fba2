"""The two reads every logged-in request makes, the session and its user, from statements
compiled once (allocations/prepared.py).

Django's database session store and `ModelBackend` build and compile a queryset for each of
them on every request; the SQL is an indexed lookup. These subclasses change only how the row
is fetched: the session row is still looked up by key among unexpired sessions, and the user by
primary key, refused when inactive (`user_can_authenticate`), exactly as Django does
(tests/portal/test_sessions.py runs both paths).
"""
from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.contrib.sessions.models import Session
from django.db.models import CharField, DateTimeField
from django.utils import timezone

from allocations.prepared import Statement

SESSION = Statement(lambda p: Session.objects.filter(
    session_key=p.value("key", CharField()),
    expire_date__gt=p.value("now", DateTimeField()))[:1])
USER = Statement(lambda p: get_user_model()._default_manager.filter(pk=p.value("pk"))[:1])


class SessionStore(DatabaseSessionStore):
    """`SESSION_ENGINE = "portal.sessions"`: Django's database sessions."""

    def _get_session_from_db(self) -> Session | None:
        session = SESSION.first(key=self.session_key, now=timezone.now())
        if session is None:
            self._session_key = None
        return session


class UserBackend(ModelBackend):
    """Django's `ModelBackend` (passwords, permissions) with the per-request user read from a
    compiled statement."""

    def get_user(self, user_id):
        user = USER.first(pk=user_id)
        return user if user is not None and self.user_can_authenticate(user) else None
