"""A client for JupyterHub's REST API (`${JUPYTERHUB_URL}/hub/api`), as the hub service
`portal` (token in JUPYTERHUB_API_TOKEN; its scopes are in NOTEBOOKS.md / docs/notebooks.md).

The portal is the hub's control plane: it creates users, starts and stops one named server per
notebook session, and reads the servers' state. Plain arguments and dataclasses, no Django
state, so it is tested against a real hub. Every method either returns or raises `HubError`
(a BackendError): connection failures, timeouts and 5xx are transient (retry), other refusals
permanent. A hub still starting (`HubStarting`, transient) is told apart from the hub's own
answers: nothing listens yet (connection refused), or its proxy answers for it (404, 502 or
503 that is not the hub's JSON: configurable-http-proxy before the hub registered its routes).
Never call it inside a database transaction.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests

from ..backends.contract import BackendError

# The hub answers a start within its slow_spawn_timeout (10 s by default) with 201 or 202.
TIMEOUT = 30.0


class HubError(BackendError):
    """The hub refused or could not be reached (`status`: its HTTP status, 0 when none)."""

    def __init__(self, message: str, *, permanent: bool, status: int = 0) -> None:
        super().__init__(message, permanent=permanent)
        self.status = status


class HubStarting(HubError):
    """The hub is not answering its API yet: still starting (or down). Always transient, and
    `status` 0 (the hub itself said nothing: a proxy's 404 is no "no such user"); the caller
    waits it out for a bounded time (settings.NOTEBOOK_HUB_START_WAIT_SECONDS)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=False, status=0)


# What a proxy (or nothing at all) answers in the hub's place while the hub starts.
_STARTING_STATUSES = (404, 502, 503)


def _hub_json(response: requests.Response) -> dict[str, Any] | None:
    """The body when it is JSON (the hub's API always answers JSON, errors included)."""
    if "json" not in response.headers.get("Content-Type", ""):
        return None
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else {}


@dataclass(frozen=True)
class ServerView:
    """One named server as the hub reports it (`pending`: "spawn", "stop" or "")."""

    name: str
    ready: bool
    pending: str
    url: str
    started: dt.datetime | None
    last_activity: dt.datetime | None
    state: dict[str, Any]

    @property
    def phase(self) -> str:
        """The session state this view means (NOTEBOOKS.md's mapping)."""
        if self.pending == "spawn":
            return "starting"
        if self.pending == "stop":
            return "stopping"
        if self.ready:
            return "running"
        return "stopped"


@dataclass(frozen=True)
class StartResult:
    """`ready` when the hub answered 201 (spawned at once); else it is still spawning (202)."""

    ready: bool
    url: str


def parse_time(value: str | None) -> dt.datetime | None:
    """The hub's ISO 8601 timestamps ("2026-11-26T12:00:00.123456Z")."""
    if not value:
        return None
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))


class HubClient:
    """JupyterHub's REST API for one hub (base URL, e.g. http://127.0.0.1:8081)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = TIMEOUT,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api = f"{self.base_url}/hub/api"
        self.timeout = timeout
        self.http = session or requests.Session()
        self.http.headers["Authorization"] = f"token {token}"

    def _call(
        self, method: str, path: str, *, json: Any = None, ok: tuple[int, ...] = (200,)
    ) -> requests.Response:
        try:
            response = self.http.request(
                method, f"{self.api}{path}", json=json, timeout=self.timeout
            )
        except requests.ConnectionError as error:
            why = "connection refused" if "refused" in str(error) else "no connection"
            raise HubStarting(
                f"the notebook hub is not answering at {self.base_url} yet ({why})"
            ) from error
        except requests.RequestException as error:
            raise HubError(
                f"the notebook hub cannot be reached: {error}", permanent=False
            ) from error
        if response.status_code in ok:
            return response
        body = _hub_json(response)
        if body is None and response.status_code in _STARTING_STATUSES:
            raise HubStarting(
                f"the notebook hub is still starting: its proxy answered "
                f"{response.status_code} to {method} {path}"
            )
        message = (body or {}).get("message") or response.text
        raise HubError(
            f"the notebook hub answered {response.status_code} to {method} {path}: "
            f"{str(message)[:200]}",
            permanent=response.status_code < 500,
            status=response.status_code,
        )

    @staticmethod
    def _user(name: str) -> str:
        return "/users/" + quote(name, safe="")

    def server_url(self, user: str, server: str) -> str:
        """The JupyterLab URL of a named server (through the hub's proxy)."""
        return f"{self.base_url}/user/{quote(user, safe='')}/{quote(server, safe='')}/lab"

    def ensure_user(self, user: str) -> None:
        """Create the hub user if it does not exist yet (idempotent)."""
        try:
            self._call("GET", self._user(user))
        except HubError as error:
            if error.status != 404:
                raise
            self._call("POST", self._user(user), ok=(201, 409))

    def start_server(self, user: str, server: str, options: dict[str, Any]) -> StartResult:
        """Start the named server with `options` as its user_options. The user is created if
        the hub does not know it. A server that is already running or spawning is no error
        (a retried task finds the first start)."""
        path = f"{self._user(user)}/servers/{quote(server, safe='')}"
        try:
            response = self._call("POST", path, json=options, ok=(201, 202))
        except HubError as error:
            if error.status == 404:
                self.ensure_user(user)
                response = self._call("POST", path, json=options, ok=(201, 202))
            elif error.status == 400 and "already" in error.message:
                view = self.server(user, server)
                return StartResult(
                    ready=bool(view and view.ready), url=self.server_url(user, server)
                )
            else:
                raise
        return StartResult(ready=response.status_code == 201, url=self.server_url(user, server))

    def stop_server(self, user: str, server: str, *, remove: bool = False) -> bool:
        """Stop the named server (and forget it when `remove`). True when it has stopped
        (204), False while the stop is pending (202). A server or user the hub does not know
        has stopped."""
        path = f"{self._user(user)}/servers/{quote(server, safe='')}"
        try:
            response = self._call(
                "DELETE", path, json={"remove": remove} if remove else None, ok=(202, 204)
            )
        except HubError as error:
            if error.status in (400, 404):  # not running / no such server or user
                return True
            raise
        return response.status_code == 204

    def servers(self, user: str) -> dict[str, ServerView] | None:
        """The user's named servers (None when the hub does not know the user)."""
        try:
            data = self._call("GET", self._user(user)).json()
        except HubError as error:
            if error.status == 404:
                return None
            raise
        return {
            name: ServerView(
                name=name,
                ready=bool(s.get("ready")),
                pending=s.get("pending") or "",
                url=s.get("url") or "",
                started=parse_time(s.get("started")),
                last_activity=parse_time(s.get("last_activity")),
                state=s.get("state") or {},
            )
            for name, s in (data.get("servers") or {}).items()
        }

    def active_servers(self) -> dict[str, list[str]]:
        """{user: [server names]} of every user with a server running or pending (one call)."""
        users = self._call("GET", "/users?state=active").json()
        return {u["name"]: list((u.get("servers") or {}).keys()) for u in users}

    def server(self, user: str, server: str) -> ServerView | None:
        """One named server (None when it is not there: never started, or stopped and removed)."""
        return (self.servers(user) or {}).get(server)
