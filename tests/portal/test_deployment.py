"""The production shape in docker-compose.yml, and the commands the README promises."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_compose_runs_the_production_shape_with_health_checks():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "web", "worker", "beat", "hub"} <= set(services)
    for name in ("postgres", "redis", "web", "worker", "hub"):
        assert "healthcheck" in services[name], name
    assert "gunicorn" in " ".join(services["web"]["command"])
    assert services["worker"]["command"][:3] == ["celery", "-A", "portal"]
    env = services["web"]["environment"]
    for key in (
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "SECRET_KEY",
        "ALLOWED_HOSTS",
        "EMAIL_URL",
        "PORTAL_BASE_URL",
    ):
        assert key in env, key
    hub = services["hub"]
    assert hub["command"][:2] == ["jupyterhub", "-f"]
    assert {
        "JUPYTERHUB_URL",
        "JUPYTERHUB_API_TOKEN",
        "JUPYTERHUB_CLIENT_SECRET",
        "PORTAL_BASE_URL",
        "PORTAL_INTERNAL_URL",
    } <= set(hub["environment"])


def test_compose_config_passes_where_a_compose_client_is_installed():
    """`docker compose config` is the check the design asks for; Debian's docker-compose
    (installed by `make services`) reads the same file."""
    client = shutil.which("docker-compose")
    assert client, "docker-compose is missing: run `make services`"
    secrets = {
        "POSTGRES_PASSWORD": "x",
        "JUPYTERHUB_API_TOKEN": "t",
        "JUPYTERHUB_CLIENT_SECRET": "s",
    }
    env = {**os.environ, **secrets, "SECRET_KEY": "y"}
    result = subprocess.run(
        [client, "config", "-q"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    # A production stack without a secret key must not even start.
    missing = subprocess.run(
        [client, "config", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if k != "SECRET_KEY"}, **secrets},
    )
    assert missing.returncode != 0 and "SECRET_KEY" in missing.stderr + missing.stdout


def test_readme_documents_the_public_commands():
    readme = (ROOT / "README.md").read_text()
    for command in ("make run", "make test", "make services", "make bench", "seed_demo"):
        assert command in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
