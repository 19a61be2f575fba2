"""The portal's REST API over httpx, with its errors turned into the command line's exit
codes (docs/cli.md): 2 bad input (400, 404), 3 refused by the portal (409), 4 auth (401, 403),
1 anything else that went wrong (the portal unreachable, a 5xx)."""

from __future__ import annotations

from typing import Any

import httpx

from . import __version__
from .config import Settings

OK, FAILED, USAGE, REFUSED, AUTH = 0, 1, 2, 3, 4


class PortalError(Exception):
    """A request the portal did not do; `code` is the exit code, `body` the API's JSON."""

    def __init__(self, message: str, *, code: int, status: int | None = None, body: Any = None):
        super().__init__(message)
        self.message, self.code, self.status, self.body = message, code, status, body


def field_messages(body: Any, prefix: str = "") -> list[str]:
    """A 400's nested per-field messages as `field.sub: message` lines."""
    if isinstance(body, dict):
        lines = []
        for key, value in body.items():
            name = "" if key in ("detail", "non_field_errors") else f"{prefix}{key}"
            lines += field_messages(value, f"{name}." if name else "")
        return lines
    if isinstance(body, list):
        return [line for item in body for line in field_messages(item, prefix)]
    label = prefix.rstrip(".")
    return [f"{label}: {body}" if label else str(body)]


def _error(response: httpx.Response, url: str) -> PortalError:
    try:
        body = response.json()
    except ValueError:
        body = {"detail": response.text[:500]}
    detail = body.get("detail") if isinstance(body, dict) else None
    status = response.status_code
    if status == 401:
        hint = (
            ""
            if detail and "/account/tokens/" in str(detail)
            else (f" Log in again with `portal login`, or make a token on {url}/account/tokens/.")
        )
        return PortalError(
            f"Not authenticated: {detail or 'the portal refused the token'}.{hint}".replace(
                "..", "."
            ),
            code=AUTH,
            status=status,
            body=body,
        )
    if status == 403:
        return PortalError(f"Not allowed: {detail}", code=AUTH, status=status, body=body)
    if status == 409:
        return PortalError(
            f"Refused by the portal: {detail or body}", code=REFUSED, status=status, body=body
        )
    if status == 404:
        return PortalError(
            f"Not found: {detail or 'no such object, or not yours to see'}",
            code=USAGE,
            status=status,
            body=body,
        )
    if status in (400, 415):
        lines = field_messages(body)
        return PortalError(
            "The portal refused the input:\n  " + "\n  ".join(lines),
            code=USAGE,
            status=status,
            body=body,
        )
    if status == 429:
        return PortalError(f"Too many attempts: {detail}", code=AUTH, status=status, body=body)
    return PortalError(
        f"The portal answered {status}: {detail or response.reason_phrase}",
        code=FAILED,
        status=status,
        body=body,
    )


class Client:
    def __init__(self, settings: Settings, *, timeout: float = 30.0) -> None:
        self.settings = settings
        headers = {"User-Agent": f"portal-cli/{__version__}", "Accept": "application/json"}
        if settings.token:
            headers["Authorization"] = f"Token {settings.token}"
        self._http = httpx.Client(
            base_url=f"{settings.url}/api/v1/", headers=headers, timeout=timeout
        )

    def request(
        self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None
    ) -> Any:
        try:
            response = self._http.request(method, path, json=json, params=params)
        except httpx.HTTPError as error:
            raise PortalError(
                f"Cannot reach the portal at {self.settings.url}: {error}", code=FAILED
            ) from None
        if response.status_code >= 400:
            raise _error(response, self.settings.url)
        return response.json() if response.content else None

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, json=body)

    def all_pages(self, path: str, **params: Any) -> list[dict]:
        """Every row of a paginated list (the API pages by 50)."""
        rows, page = [], 1
        while True:
            data = self.get(path, page=page, **params)
            rows += data["results"]
            if not data.get("next"):
                return rows
            page += 1

    def token(self, *, username: str, password: str) -> str:
        """POST auth/token/ (no Authorization header: the credentials are the body)."""
        try:
            response = httpx.post(
                f"{self.settings.url}/api/v1/auth/token/",
                json={"username": username, "password": password},
                timeout=self._http.timeout,
            )
        except httpx.HTTPError as error:
            raise PortalError(
                f"Cannot reach the portal at {self.settings.url}: {error}", code=FAILED
            ) from None
        if response.status_code == 400:
            raise PortalError(
                "Wrong username or password.", code=AUTH, status=400, body=response.json()
            )
        if response.status_code >= 400:
            raise _error(response, self.settings.url)
        return response.json()["token"]
