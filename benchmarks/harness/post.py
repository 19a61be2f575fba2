"""POST a measured result to the portal with the standard library only (no requests, no Django)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

API_PATH = "/api/v1/benchmarks/"


class PostError(RuntimeError):
    """The portal refused or could not be reached; `status` is None when nothing answered."""

    def __init__(self, message: str, status: int | None = None, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


def post_result(
    base_url: str, token: str, result: dict[str, Any], timeout: float = 30.0
) -> dict[str, Any]:
    """Send `result` to `{base_url}/api/v1/benchmarks/` with `Authorization: Token <token>`.

    Returns the decoded JSON the portal answered with (the stored result). Raises PostError with
    the HTTP status and the response body (the API's per-field messages) on any non-2xx answer,
    and with status None when the server cannot be reached.
    """
    url = base_url.rstrip("/") + API_PATH
    if not url.startswith(("http://", "https://")):
        raise PostError(f"{base_url!r} is not an http(s) URL of the portal")
    req = urllib.request.Request(
        url,
        data=json.dumps(result).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json",
            "Authorization": f"Token {token}",
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # nosec B310 # http(s) only, checked above
            raw = resp.read().decode() or "{}"
    except urllib.error.HTTPError as exc:
        body = exc.read().decode(errors="replace")
        raise PostError(f"{url} answered {exc.code}: {body[:500]}", exc.code, body) from exc
    except urllib.error.URLError as exc:
        raise PostError(f"cannot reach {url}: {exc.reason}") from exc
    return json.loads(raw)
