"""People and places every test can use: Alice-style fixtures named for their roles.

- `pi` leads `project`; `researcher` is a member of it.
- `outsider` is a member of another project and must see nothing of `project`.
- `reviewer` is in the reviewers group; `admin` is a superuser.
"""
from __future__ import annotations

import datetime as dt

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import ProjectMembership
from tests.factories import (
    FacilityFactory, NodeTypeFactory, ProjectFactory, RequestFactory, UserFactory,
)


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    # PBKDF2's deliberate slowness is for production; tests only need working logins.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def pi(db):
    return UserFactory(username="paula", first_name="Paula")


@pytest.fixture
def researcher(db):
    return UserFactory(username="rosalind", first_name="Rosalind")


@pytest.fixture
def outsider(db):
    return UserFactory(username="charlie", first_name="Charlie")


@pytest.fixture
def reviewer(db):
    user = UserFactory(username="grace", first_name="Grace")
    group, _ = Group.objects.get_or_create(name=settings.PORTAL_REVIEWERS_GROUP)
    user.groups.add(group)
    return user


@pytest.fixture
def admin(db):
    return UserFactory(username="ada", is_staff=True, is_superuser=True)


@pytest.fixture
def facility(db):
    """An HPC facility that auto-approves trials up to 400 GPU-hours."""
    return FacilityFactory(slug="baskerville", name="Baskerville")


@pytest.fixture
def node_type(facility):
    return NodeTypeFactory(facility=facility, name="B-A100-40")


@pytest.fixture
def strict_facility(db):
    """A facility where every request, trials included, goes to reviewers."""
    return FacilityFactory(slug="stanage", name="Stanage", trial_auto_approve=False,
                           allowed_sensitivity=["public", "internal", "personal", "special"])


@pytest.fixture
def project(pi, researcher):
    project = ProjectFactory(code="ABC-DEF-001", pi=pi)
    ProjectMembership.objects.create(project=project, user=researcher, role="member")
    return project


@pytest.fixture
def other_project(outsider):
    return ProjectFactory(code="XYZ-OTH-002", pi=outsider)


@pytest.fixture
def full_request(project, facility, researcher):
    """A submitted full request by the researcher, waiting for review."""
    return RequestFactory(project=project, facility=facility, requested_by=researcher,
                          status="submitted", submitted_at=timezone.now())


@pytest.fixture
def draft_request(project, facility, researcher):
    return RequestFactory(project=project, facility=facility, requested_by=researcher)


@pytest.fixture
def api():
    """An API client; `api.as_user(u)` authenticates with a real token."""
    from rest_framework.authtoken.models import Token

    client = APIClient()

    def as_user(user):
        if user is None:
            client.credentials()
        else:
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    client.as_user = as_user
    return client


@pytest.fixture
def dates():
    today = timezone.localdate()
    return {"start_date": today.isoformat(),
            "end_date": (today + dt.timedelta(days=60)).isoformat()}


@pytest.fixture(scope="session")
def chromium():
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM, CHROMIUM_ARGS

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    """A fresh browser context (cookies, storage) per test; JavaScript on."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def page_no_js(chromium):
    context = chromium.new_context(java_script_enabled=False, viewport={"width": 1280,
                                                                       "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
