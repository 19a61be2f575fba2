"""A real, minimal JupyterHub for the Slurm spawner's tests and bench/notebooks.py: the pinned
JupyterHub with configurable-http-proxy on free ports, SlurmNotebookSpawner (or any spawner
class) as its spawner, one `portal` service token, optionally jupyterhub-idle-culler with a
short timeout. It stands in for the portal's hub (launcher/notebooks/hub/jupyterhub_config.py)
where a test needs no sign-on: users reach their servers with a hub token of their own.
No Django."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PROXY_HINT = (
    "configurable-http-proxy is missing: `make install` puts it in .hub/bin "
    "(scripts/install-hub-proxy.sh), or set JUPYTERHUB_PROXY_CMD"
)


def proxy_command() -> str | None:
    """configurable-http-proxy: JUPYTERHUB_PROXY_CMD, this checkout's .hub/bin, the main
    checkout's, then PATH."""
    candidates = [
        os.environ.get("JUPYTERHUB_PROXY_CMD", ""),
        str(REPO / ".hub" / "bin" / "configurable-http-proxy"),
        str(Path(sys.prefix).resolve().parent / ".hub" / "bin" / "configurable-http-proxy"),
        shutil.which("configurable-http-proxy") or "",
    ]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def cluster_notebook_env() -> dict[str, str]:
    """A facility's `notebook_env` for the test cluster: its jobs run the system python with
    this virtualenv's site-packages (the venv's own python lives under /root, which the
    cluster user cannot read), so Jupyter is told where the venv keeps its data and config."""
    venv = Path(sys.prefix)
    return {
        "JUPYTER_PATH": str(venv / "share" / "jupyter"),
        "JUPYTER_CONFIG_PATH": str(venv / "etc" / "jupyter"),
        "JUPYTERLAB_DIR": str(venv / "share" / "jupyter" / "lab"),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


CONFIG = """
import json, sys
sys.path.insert(0, {repo!r})
from launcher.notebooks.hub.spawner import hear_sigint
hear_sigint()  # as the product's config: closing the idle hub under `&` waited 30 s for its culler
c = get_config()
facts = json.loads({facts!r})
c.JupyterHub.bind_url = facts["url"]
c.JupyterHub.hub_bind_url = facts["hub_url"]
c.ConfigurableHTTPProxy.api_url = facts["proxy_api_url"]
c.ConfigurableHTTPProxy.command = [facts["proxy"]]
c.ConfigurableHTTPProxy.pid_file = facts["dir"] + "/proxy.pid"
c.JupyterHub.db_url = "sqlite:///" + facts["dir"] + "/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = facts["dir"] + "/cookie_secret"
c.JupyterHub.pid_file = facts["dir"] + "/jupyterhub.pid"
c.JupyterHub.cleanup_servers = True
c.JupyterHub.authenticator_class = "null"
c.JupyterHub.allow_named_servers = True
c.JupyterHub.named_server_limit_per_user = 0
c.JupyterHub.spawner_class = facts["spawner"]
c.JupyterHub.last_activity_interval = 5
c.Spawner.default_url = "/lab"
c.Spawner.poll_interval = 2
c.Spawner.start_timeout = 300
c.Spawner.http_timeout = 120
c.JupyterHub.load_roles = [
    {{"name": "portal", "scopes": ["admin:users", "admin:servers", "admin:server_state",
      "list:users", "read:users", "servers", "users:activity", "tokens", "read:metrics"],
      "services": ["portal"]}},
]
c.JupyterHub.services = [{{"name": "portal", "api_token": facts["token"]}}]
if facts["idle_timeout"]:
    c.JupyterHub.load_roles.append({{"name": "idle-culler", "scopes": [
        "list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"]}})
    c.JupyterHub.services.append({{"name": "idle-culler", "command": [
        sys.executable, "-m", "jupyterhub_idle_culler", "--timeout=%d" % facts["idle_timeout"],
        "--cull-every=%d" % max(1, facts["idle_timeout"] // 3)]}})
"""


class Hub:
    """A running JupyterHub; `api(method, path, body)` calls its REST API as the portal."""

    def __init__(
        self, folder: Path, *, spawner: str, idle_timeout: int = 0, extra: str = ""
    ) -> None:
        proxy = proxy_command()
        if proxy is None:
            raise RuntimeError(PROXY_HINT)
        folder.mkdir(parents=True, exist_ok=True)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.token = secrets.token_hex(16)
        facts = {
            "url": self.url,
            "hub_url": f"http://127.0.0.1:{free_port()}",
            "proxy_api_url": f"http://127.0.0.1:{free_port()}",
            "proxy": proxy,
            "dir": str(folder),
            "spawner": spawner,
            "token": self.token,
            "idle_timeout": idle_timeout,
        }
        config = folder / "jupyterhub_config.py"
        config.write_text(CONFIG.format(repo=str(REPO), facts=json.dumps(facts)) + extra)
        self.log_path = folder / "hub.log"
        self._log = self.log_path.open("wb")
        hub = Path(sys.executable).with_name("jupyterhub")
        self.proc = subprocess.Popen(
            [str(hub), "-f", str(config)], cwd=folder, stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if self.api("GET", "/")[0] == 200:
                    break
            except (OSError, urllib.error.URLError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"JupyterHub did not start; its log:\n{self.log()}")
            time.sleep(0.2)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-6000:]

    def request(
        self, method: str, url: str, *, token: str, body: Any = None, timeout: float = 30
    ) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            url,
            data=data,
            method=method,
            headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                text = response.read().decode()
                status = response.status
        except urllib.error.HTTPError as error:
            text, status = error.read().decode(errors="replace"), error.code
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, text

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return self.request(method, f"{self.url}/hub/api{path}", token=self.token, body=body)

    def user_token(self, name: str) -> str:
        """A hub token of the user `name` (created first), for opening their servers."""
        self.api("POST", f"/users/{name}")
        status, body = self.api("POST", f"/users/{name}/tokens", {"note": "test"})
        if status != 201:
            raise RuntimeError(f"token for {name}: {status} {body}")
        return str(body["token"])

    def server(self, name: str, server: str) -> dict[str, Any] | None:
        """The user's named server as the hub's API shows it (with its state), or None."""
        status, body = self.api("GET", f"/users/{name}")
        if status != 200:
            return None
        return (body.get("servers") or {}).get(server)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
