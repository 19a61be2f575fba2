"""Fixtures for the Slurm-over-SSH backend tests: the real Slurm and sshd of `make services`.

No Django and no database: these tests drive `launcher.backends` directly. When the services
are not running the fixtures fail (never skip) and say how to start them.
"""

from __future__ import annotations

import os
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from launcher.backends.contract import BackendError
from launcher.local.contain import descendants
from launcher.slurm.client import SlurmClient
from launcher.slurm.ssh import SSHConnection, SSHTarget
from tests.waiting import wait_for

SERVICES_ENV = (
    Path(os.environ.get("PORTAL_SERVICES_DIR", "/var/lib/portal-services")) / "services.env"
)
START_HINT = "run `make services` (bash scripts/services.sh) as root first"


def read_services_env(path: Path = SERVICES_ENV) -> dict[str, str]:
    """The facts scripts/services.sh wrote (KEY=value lines)."""
    if not path.is_file():
        pytest.fail(f"{path} is missing: the real Slurm/sshd services are not set up; {START_HINT}")
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


@pytest.fixture(scope="session")
def services_env() -> dict[str, str]:
    env = read_services_env()
    try:
        socket.create_connection((env["SSH_HOST"], int(env["SSH_PORT"])), timeout=3).close()
    except OSError as exc:
        pytest.fail(
            f"sshd on {env['SSH_HOST']}:{env['SSH_PORT']} is not answering ({exc}); {START_HINT}"
        )
    return env


def make_target(env: dict[str, str], **overrides: object) -> SSHTarget:
    """An SSHTarget for the services' sshd; tests override port, retries, host key..."""
    fields: dict[str, object] = dict(
        host=env["SSH_HOST"],
        port=int(env["SSH_PORT"]),
        user=env["SSH_USER"],
        key_path=Path(env["SSH_KEY_PATH"]),
        host_key=env["SSH_KNOWN_HOSTS"],
        connect_timeout=5.0,
        command_timeout=60.0,
        retries=2,
        backoff_seconds=0.2,
    )
    fields.update(overrides)
    return SSHTarget(**fields)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def slurm(services_env: dict[str, str]) -> Iterator[SlurmClient]:
    backend = SlurmClient(
        SSHConnection(make_target(services_env)),
        cluster=services_env["SLURM_CLUSTER"],
        partition=services_env["SLURM_PARTITION"],
    )
    try:
        backend.ssh.run(["sinfo", "-h"])
    except BackendError as exc:
        pytest.fail(f"cannot reach Slurm over SSH: {exc}; {START_HINT}")
    yield backend
    backend.ssh.close()


def unique_name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:10]}"


@pytest.fixture(name="unique")
def unique_fixture() -> Callable[[str], str]:
    return unique_name


@pytest.fixture
def account(slurm: SlurmClient) -> Iterator[str]:
    """A fresh Slurm account with a generous cap; its jobs are cancelled and it is deleted after."""
    name = unique_name("t")
    slurm.ensure_account(name=name, users=[], gpu_minutes=600)
    yield name
    slurm.ssh.run(["scancel", f"--account={name}"])
    slurm.ssh.run(["sacctmgr", "-i", "delete", "account", f"name={name}"])


@pytest.fixture
def make_bundle(tmp_path: Path) -> Callable[[str], Path]:
    """Writes a job bundle whose job.sh has the given bash body."""

    def make(body: str) -> Path:
        folder = tmp_path / unique_name("bundle")
        folder.mkdir()
        script = folder / "job.sh"
        script.write_text("#!/bin/bash\n" + body + "\n")
        script.chmod(0o755)
        return folder

    return make


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawaySshd:
    """A second sshd (same keys and user as the services' one) on its own port, which a test
    may stop and restart without disturbing anyone else."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.port = free_port()
        self.config = workdir / "sshd_config"
        base = Path(env["SSHD_CONFIG"]).read_text().splitlines()
        kept = [line for line in base if not line.startswith(("Port ", "PidFile "))]
        self.config.write_text(
            "\n".join([f"Port {self.port}", f"PidFile {workdir}/sshd.pid", *kept]) + "\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-f", str(self.config)])
        wait_for(self._listening, timeout=10, every=0.05, what="throwaway sshd")

    def _listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def stop(self) -> None:
        """Kill this sshd and every connection it forked (they outlive the listener otherwise)."""
        if self.proc is None:
            return
        victims = descendants(self.proc.pid) + [self.proc.pid]  # only ones our sshd forked
        for pid in victims:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        self.proc = None


@pytest.fixture
def throwaway_sshd(services_env: dict[str, str], tmp_path: Path) -> Iterator[ThrowawaySshd]:
    sshd = ThrowawaySshd(services_env, tmp_path)
    sshd.start()
    yield sshd
    sshd.stop()
