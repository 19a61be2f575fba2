"""A real JupyterHub (with its configurable-http-proxy) signed on to the test's live portal.

Use it from any test module under tests/notebooks/ (conftest.py exports the fixtures):

    def test_x(live_server, hub, researcher):
        hub.url                 # http://127.0.0.1:<free port>, the hub's public URL
        hub.api_token           # the `portal` service's token (JUPYTERHUB_API_TOKEN)
        hub.env                 # the environment the hub runs with (JUPYTERHUB_*, PORTAL_BASE_URL)
        hub.api("GET", "/users/rosalind")      # requests.Response, as the portal service
        hub.start_server("rosalind", "nb-1", {...user_options...})
        hub.wait_ready("rosalind", "nb-1"); hub.stop_server("rosalind", "nb-1")

`hub_process` (module scope: one hub per test module, started in a few seconds; more
environment for it from the module-scoped fixture `hub_extra_env`, {} unless overridden) runs
`jupyterhub -f launcher/notebooks/hub/jupyterhub_config.py` with its own state folder, free
ports and a PORTAL_BASE_URL of pytest-django's live server. `hub` (per test, needs
transactional_db) registers the hub's OAuth client in the test's database and the provider's
signing key in the settings (the database and settings are reset between tests), and stops
every server the test left. The key is made once per session (never in the repository)."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests

from portal.provider.keys import ensure_key
from portal.provider.services import hub_client_register
from tests.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "launcher" / "notebooks" / "hub" / "jupyterhub_config.py"
JUPYTERHUB = Path(sys.executable).with_name("jupyterhub")
PROXY = REPO / ".hub" / "bin" / "configurable-http-proxy"
WAIT = 90.0  # generous: the 2-core test machine is shared


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port_triple() -> int:
    """A port p with p, p+1 and p+2 free: the proxy, the hub's API, the proxy's API."""
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port < 65000 and _free(port + 1) and _free(port + 2):
            return port
    raise RuntimeError("no three free ports in a row")


@dataclass
class Hub:
    url: str
    api_token: str
    env: dict[str, str]
    state_dir: Path
    log: Path
    client_id: str = field(repr=False, default="")
    client_secret: str = field(repr=False, default="")

    def api(self, method: str, path: str, *, token: str | None = None, **kwargs):
        headers = {"Authorization": f"token {token or self.api_token}"}
        return requests.request(
            method, f"{self.url}/hub/api{path}", headers=headers, timeout=60, **kwargs
        )

    def start_server(self, user: str, server: str, options: dict):
        """POST the server (creating the hub user first), as the portal does."""
        if self.api("GET", f"/users/{user}").status_code == 404:
            self.api("POST", f"/users/{user}").raise_for_status()
        return self.api("POST", f"/users/{user}/servers/{server}", json=options)

    def server(self, user: str, server: str) -> dict | None:
        response = self.api("GET", f"/users/{user}")
        return response.json()["servers"].get(server) if response.ok else None

    def wait_ready(self, user: str, server: str) -> dict:
        return wait_for(
            lambda: (s := self.server(user, server)) and s["ready"] and s,
            timeout=WAIT,
            every=0.2,
            what=f"{user}/{server} ready (log: {self.log})",
        )

    def stop_server(self, user: str, server: str, *, remove: bool = True) -> None:
        response = self.api("DELETE", f"/users/{user}/servers/{server}", json={"remove": remove})
        assert response.status_code in (202, 204), response.text
        wait_for(
            lambda: (
                self.server(user, server) is None
                or not (self.server(user, server) or {}).get("pending")
            ),
            timeout=WAIT,
            every=0.2,
            what=f"{user}/{server} stopped",
        )

    def stop_all(self) -> None:
        for user in self.api("GET", "/users").json():
            for name in user.get("servers", {}):
                self.stop_server(user["name"], name)


def _stop(process: subprocess.Popen, state_dir: Path) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    # The proxy outlives a hub that did not stop it: end it by its pid file, only ours.
    pid_file = state_dir / "proxy.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
        except (ValueError, ProcessLookupError):
            pass


@pytest.fixture(scope="session")
def provider_key(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("provider") / "provider-key.pem"
    ensure_key(path)
    return path.read_text()


@pytest.fixture(scope="module")
def hub_extra_env() -> dict[str, str]:
    """More environment for the module's hub (override it in a test module, e.g.
    `{"JUPYTERHUB_START_TIMEOUT": "300"}` for a backend that queues)."""
    return {}


@pytest.fixture(scope="module")
def hub_process(live_server, tmp_path_factory, hub_extra_env):
    assert PROXY.exists(), "configurable-http-proxy is missing: run `make install`"
    # A folder members' uids can pass through, as var/ is under `make run` (0711); the hub
    # writes its state there privately (umask 077, as `make run` starts it): the notebook
    # tests check that members' code cannot read it (docs/security.md).
    state_dir = Path(tempfile.mkdtemp(prefix="portal-hub-"))
    state_dir.chmod(0o711)
    port = free_port_triple()
    hub = Hub(
        url=f"http://127.0.0.1:{port}",
        api_token=secrets.token_hex(32),
        env={},
        state_dir=state_dir,
        log=state_dir / "hub.log",
        client_id="jupyterhub-tests",
        client_secret=secrets.token_hex(24),
    )
    hub.env = {
        "JUPYTERHUB_URL": hub.url,
        "JUPYTERHUB_STATE_DIR": str(state_dir),
        "JUPYTERHUB_API_TOKEN": hub.api_token,
        "JUPYTERHUB_CLIENT_ID": hub.client_id,
        "JUPYTERHUB_CLIENT_SECRET": hub.client_secret,
        "JUPYTERHUB_PROXY_CMD": str(PROXY),
        "JUPYTERHUB_IDLE_TIMEOUT": "3600",
        "PORTAL_BASE_URL": live_server.url,
        **hub_extra_env,
    }
    with open(hub.log, "wb") as log:
        process = subprocess.Popen(
            [str(JUPYTERHUB), "-f", str(CONFIG)],
            cwd=state_dir,
            env={**os.environ, **hub.env},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            umask=0o077,
        )
    try:

        def healthy():
            if process.poll() is not None:
                raise AssertionError(f"the hub exited: {hub.log.read_text()[-3000:]}")
            try:
                return requests.get(f"{hub.url}/hub/health", timeout=5).ok
            except requests.ConnectionError:
                return False

        wait_for(healthy, timeout=WAIT, every=0.2, what="the hub's /hub/health")
        yield hub
    finally:
        _stop(process, state_dir)
        shutil.rmtree(state_dir, ignore_errors=True)


@pytest.fixture
def hub(hub_process, transactional_db, settings, provider_key):
    """The module's hub, with its OAuth client registered in this test's database."""
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "OIDC_RSA_PRIVATE_KEY": provider_key}
    # As JUPYTERHUB_URL does in the settings: the login form's redirect may go on to the hub.
    csp = settings.PORTAL_CSP
    settings.PORTAL_CSP = {**csp, "form-action": f"{csp['form-action']} {hub_process.url}"}
    hub_client_register(
        client_id=hub_process.client_id,
        client_secret=hub_process.client_secret,
        hub_url=hub_process.url,
    )
    yield hub_process
    hub_process.stop_all()
