"""Security tooling in the suite (docs/security.md): Django's deployment checks under production
settings, bandit over the project's code, login throttling on the login page and the token
endpoint, and the security headers every response carries."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PROJECT_CODE = ["allocations", "benchmarks", "launcher", "portal", "scripts", "bench", "manage.py"]

PRODUCTION_ENV = {
    "DEBUG": "false",
    "SECRET_KEY": "k7#Qv2!pZr9@Lm4$Xw8^Tn3&Hy6*Bc1%Dj5(Gf0)Ps-Ue+Ia=Ok_Wl~Mz",
    "ALLOWED_HOSTS": "portal.example.org",
    "PORTAL_BASE_URL": "https://portal.example.org",
    "SECURE_HSTS_PRELOAD": "true",
}


def check_deploy(extra_env: dict[str, str]) -> subprocess.CompletedProcess:
    # The test runner's own relaxations (DJANGO_ALLOW_ASYNC_UNSAFE for Playwright) are not
    # production's.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SECURE_", "SESSION_COOKIE", "CSRF_COOKIE", "DJANGO_ALLOW_ASYNC"))
    }
    env.update(extra_env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_production_settings():
    result = check_deploy(PRODUCTION_ENV)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_check_deploy_would_catch_a_plain_http_production_site():
    """The same check fails when the settings are not production's: it is not vacuous."""
    result = check_deploy({**PRODUCTION_ENV, "PORTAL_BASE_URL": "http://portal.example.org"})
    assert result.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in result.stderr + result.stdout, warning


def test_bandit_leaves_no_medium_or_high_finding_unexplained():
    result = subprocess.run(
        [
            str(BIN / "bandit"),
            "-r",
            *PROJECT_CODE,
            "-x",
            "*/migrations/*",
            "-ll",
            "-f",
            "json",
            "-q",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(result.stdout)
    findings = [
        f"{r['filename']}:{r['line_number']} {r['test_id']} {r['issue_text']}"
        for r in report["results"]
    ]
    assert findings == [], "\n".join(findings)
    assert report["errors"] == []


def test_every_bandit_exception_names_its_test_and_says_why():
    """`# nosec` must name the check(s) and give a reason after a second `#`."""
    form = re.compile(r"#\s*nosec(\s+B\d{3})+\s+#\s*\S.{5,}")
    bare = []
    for top in PROJECT_CODE:
        paths = [ROOT / top] if top.endswith(".py") else (ROOT / top).rglob("*.py")
        for path in paths:
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if "nosec" in line and not form.search(line):
                    bare.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bare == [], "\n".join(bare)


# Login throttling -------------------------------------------------------------------------


@pytest.fixture
def limit(settings):
    settings.AXES_FAILURE_LIMIT = 3
    return 3


def _token(client, password: str):
    return client.post(
        "/api/v1/auth/token/",
        {"username": "rosalind", "password": password},
        content_type="application/json",
    )


@pytest.mark.django_db
def test_the_token_endpoint_locks_out_after_repeated_failures(client, researcher, limit):
    for _ in range(limit - 1):
        assert _token(client, "wrong").status_code == 400
    locking = _token(client, "wrong")
    assert locking.status_code == 429

    refused = _token(client, "pw-for-tests")  # the right password, too late

    assert refused.status_code == 429
    assert "token" not in refused.json()
    message = refused.json()["detail"]
    assert "Too many failed logins" in message and "minutes" in message


@pytest.mark.django_db
def test_a_success_before_the_limit_starts_the_count_again(client, researcher, limit):
    for _ in range(limit - 1):
        assert _token(client, "wrong").status_code == 400
    assert _token(client, "pw-for-tests").status_code == 200
    for _ in range(limit - 1):
        assert _token(client, "wrong").status_code == 400
    assert _token(client, "pw-for-tests").status_code == 200


@pytest.mark.django_db
def test_a_lockout_is_per_account_not_for_everyone(client, researcher, pi, limit):
    for _ in range(limit):
        _token(client, "wrong")
    other = client.post(
        "/api/v1/auth/token/",
        {"username": "paula", "password": "pw-for-tests"},
        content_type="application/json",
    )
    assert other.status_code == 200 and other.json()["token"]


@pytest.mark.django_db
def test_the_login_page_locks_out_with_a_clear_message(client, researcher, limit):
    for _ in range(limit):
        client.post("/accounts/login/", {"username": "rosalind", "password": "wrong"})

    response = client.post("/accounts/login/", {"username": "rosalind", "password": "pw-for-tests"})

    assert response.status_code == 429
    assert "Too many failed logins" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302  # still not logged in


# Headers ----------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/accounts/login/", "/api/v1/onboarding/flow/", "/api/v1/docs/"])
def test_every_response_carries_the_security_headers(client, path):
    response = client.get(path)
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    policy = dict(
        part.strip().split(" ", 1) for part in response["Content-Security-Policy"].split(";")
    )
    assert policy["script-src"] == "'self'" and policy["default-src"] == "'self'"
    styles = policy["style-src"].split()
    assert styles[0] == "'self'" and all(s.startswith("'sha256-") for s in styles[1:])
    assert policy["frame-ancestors"] == "'none'" and policy["object-src"] == "'none'"


@pytest.mark.django_db
def test_api_errors_are_json_even_where_no_route_matches(client, researcher, api):
    response = api.as_user(researcher).get("/api/v1/allocations/0.5/usage/")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json" and response.json() == {
        "detail": "Not found."
    }
    repeated = api.get("/api/v1/jobs/?allocation=1&allocation=2")
    assert repeated.status_code == 400 and "allocation" in repeated.json()
    empty = api.get("/api/v1/requests/?status=draft&kind=")
    assert empty.status_code == 400 and set(empty.json()) == {"kind"}
