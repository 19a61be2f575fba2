"""People and places every test can use: Alice-style fixtures named for their roles.

- `pi` leads `project`; `researcher` is a member of it.
- `outsider` is a member of another project and must see nothing of `project`.
- `reviewer` is in the reviewers group; `admin` is a superuser.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import ProjectMembership
from tests.factories import (
    FacilityFactory,
    NodeTypeFactory,
    ProjectFactory,
    RequestFactory,
    UserFactory,
)

# The tiers (README, "Developing and testing"): a test needs what its fixtures start or reach, so its
# markers come from its fixtures (transitively), never by hand. `make unit` runs every test
# none of these markers names, on SQLite with Celery eager, without root and with no service.
NEEDS = {
    "chromium": "browser",  # Debian's chromium through Playwright
    "services_env": "slurm",  # the Slurm cluster and sshd of `make services`
    "moto_endpoint": "aws",  # the moto server
    "real_worker": "worker",  # a real Celery worker on Redis
    "hub_process": "hub",  # JupyterHub with its proxy
    "hub": "hub",
    "provider": "oidc",  # the OpenID Connect provider
    "postgres": "postgres",  # PostgreSQL itself: row locks under concurrent writers
    "member_tmp": "members",  # members' own uids: root switches to them
    "isolated_network": "root",  # a network namespace of its own
}


def pytest_collection_modifyitems(items):
    for item in items:
        for marker in sorted({NEEDS[name] for name in item.fixturenames if name in NEEDS}):
            item.add_marker(marker)


@pytest.fixture
def postgres(transactional_db):
    """PostgreSQL's row locks, for tests of concurrent writers (SQLite has one writer)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.fail("this test needs PostgreSQL (DATABASE_URL): run it in `make test`")


@pytest.fixture
def isolated_network():
    """Run a command in a network namespace where only an empty loopback answers (root)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.fail("a network namespace needs root: run this test in `make test`")

    def run(command: list[str]) -> subprocess.CompletedProcess[str]:
        script = 'ip link set lo up && exec "$@"'
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
        return subprocess.run(
            ["unshare", "--net", "--", "bash", "-c", script, "isolated", *command],
            cwd=Path(__file__).resolve().parents[1],
            capture_output=True,
            text=True,
            timeout=900,
            env=env,
        )

    return run


@pytest.fixture
def real_worker():
    """A real Celery worker on Redis: `with real_worker(...) as w:` (tests/worker.py)."""
    from tests.worker import running_worker

    return running_worker


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: a fragment cached by an earlier test under the same
    ids (a rolled-back database reuses them, and its version keys outlive it in the cache)
    would otherwise be served to this one."""
    from django.core.cache import cache

    from portal.reports.settled import forget

    cache.clear()
    forget()  # the reports' settled parts a process keeps, keyed the same way


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    # PBKDF2's deliberate slowness is for production; tests only need working logins.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def member_tmp():
    """A fresh folder members' uids can pass through (0711), removed afterwards. Not pytest's
    tmp_path: pytest keeps its base folder 0700 (and closes it again at every session start),
    while the portal runs members' work under their own accounts (docs/security.md)."""
    folder = Path(tempfile.mkdtemp(prefix="portal-members-"))
    folder.chmod(0o711)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


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
    return FacilityFactory(
        slug="stanage",
        name="Stanage",
        trial_auto_approve=False,
        allowed_sensitivity=["public", "internal", "personal", "special"],
    )


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
    return RequestFactory(
        project=project,
        facility=facility,
        requested_by=researcher,
        status="submitted",
        submitted_at=timezone.now(),
    )


@pytest.fixture
def draft_request(project, facility, researcher):
    return RequestFactory(project=project, facility=facility, requested_by=researcher)


@pytest.fixture
def api():
    """An API client; `api.as_user(u)` authenticates with a real account token (one per user
    per test, as POST auth/token/ makes it)."""
    from portal.tokens.services import account_token_create, token_touch

    client = APIClient()
    keys: dict[int, str] = {}

    def as_user(user):
        if user is None:
            client.credentials()
        else:
            if user.pk not in keys:
                token, keys[user.pk] = account_token_create(user=user)
                # Its last use is written at most once a minute: written now, so that the first
                # request does not count one more query than the next (query-count tests).
                token_touch(token=token)
            client.credentials(HTTP_AUTHORIZATION=f"Token {keys[user.pk]}")
        return client

    client.as_user = as_user
    return client


@pytest.fixture
def dates():
    today = timezone.localdate()
    return {
        "start_date": today.isoformat(),
        "end_date": (today + dt.timedelta(days=60)).isoformat(),
    }


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
    context = chromium.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
