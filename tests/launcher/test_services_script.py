"""`make services` (scripts/services.sh) is idempotent: re-running it restarts nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .conftest import SERVICES_ENV, read_services_env

REPO = Path(__file__).resolve().parents[2]
STATE = SERVICES_ENV.parent


def pids() -> dict[str, str]:
    files = {
        "slurmctld": STATE / "slurm/slurmctld.pid",
        "slurmd": STATE / "slurm/slurmd.pid",
        "slurmdbd": STATE / "slurm/slurmdbd.pid",
        "sshd": STATE / "ssh/sshd.pid",
        "hub": STATE / "hub/jupyterhub.pid",
    }
    return {name: path.read_text().strip() for name, path in files.items()}


def test_rerunning_services_keeps_every_daemon_and_writes_the_facts(services_env):
    before = pids()
    config = Path("/etc/slurm/slurm.conf").stat().st_mtime_ns

    run = subprocess.run(
        ["bash", str(REPO / "scripts/services.sh")], capture_output=True, text=True
    )

    assert run.returncode == 0, run.stderr
    status = {line.split()[0]: line.split()[1] for line in run.stdout.splitlines()}
    assert {
        status[c]
        for c in ("postgres", "redis", "mariadb", "munge", "slurm", "sshd", "moto", "oidc", "hub")
    } == {"running"}
    assert pids() == before
    assert Path("/etc/slurm/slurm.conf").stat().st_mtime_ns == config
    facts = read_services_env()
    assert facts["SSH_PORT"] == "2222" and facts["SLURM_CLUSTER"] == "portal"
    assert Path(facts["SSH_KEY_PATH"]).is_file() and Path(facts["SSH_KNOWN_HOSTS"]).is_file()
    assert facts["JUPYTERHUB_URL"] == "http://127.0.0.1:8091" and facts["JUPYTERHUB_API_TOKEN"]
    assert Path(facts["PORTAL_PROVIDER_KEY_FILE"]).is_file()


def test_status_reports_every_component(services_env):
    run = subprocess.run(
        ["bash", str(REPO / "scripts/services.sh"), "status"], capture_output=True, text=True
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert [line.split()[0] for line in run.stdout.splitlines()] == [
        "postgres",
        "redis",
        "mariadb",
        "munge",
        "slurm",
        "sshd",
        "moto",
        "emulator",
        "oidc",
        "hub",
    ]
