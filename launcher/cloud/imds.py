"""An IMDSv2 client for the worker agent (standard library only; part of the worker bundle).

The instance metadata service answers only with a session token: PUT /latest/api/token with
`X-aws-ec2-metadata-token-ttl-seconds`, then every GET carries `X-aws-ec2-metadata-token`
(instances are launched with HttpTokens=required, so IMDSv1 reads are refused). The endpoint is
http://169.254.169.254 on EC2; `AWS_EC2_METADATA_SERVICE_ENDPOINT` (the variable botocore reads
too) points it at the local emulator's.
"""

from __future__ import annotations

import os
import time
import urllib.error
import urllib.request

DEFAULT_ENDPOINT = "http://169.254.169.254"
TOKEN_TTL = 21600  # seconds, the most IMDS grants


class Imds:
    def __init__(self, endpoint: str | None = None, *, timeout: float = 2.0) -> None:
        endpoint = (
            endpoint or os.environ.get("AWS_EC2_METADATA_SERVICE_ENDPOINT") or DEFAULT_ENDPOINT
        )
        if not endpoint.startswith(("http://", "https://")):
            raise ValueError(f"the metadata endpoint must be an http(s) URL, not {endpoint!r}")
        self.endpoint = endpoint.rstrip("/")
        self.timeout = timeout
        self._token = ""
        self._expires = 0.0

    def token(self) -> str:
        if not self._token or time.monotonic() > self._expires:
            request = urllib.request.Request(
                f"{self.endpoint}/latest/api/token",
                method="PUT",
                headers={"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_TTL)},
            )
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:  # nosec B310 # http(s) checked in __init__
                self._token = reply.read().decode()
            self._expires = time.monotonic() + TOKEN_TTL - 60
        return self._token

    def get(self, path: str) -> str | None:
        """The text at /latest/<path>, or None when the service has nothing there (404: e.g. no
        spot notice yet). A refused token (expired) is renewed once."""
        for attempt in (1, 2):
            request = urllib.request.Request(
                f"{self.endpoint}/latest/{path.lstrip('/')}",
                headers={"X-aws-ec2-metadata-token": self.token()},
            )
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as reply:  # nosec B310 # http(s) checked in __init__
                    return reply.read().decode()
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    return None
                if exc.code == 401 and attempt == 1:
                    self._token = ""
                    continue
                raise
        return None

    def instance_id(self) -> str:
        value = self.get("meta-data/instance-id")
        if not value:
            raise RuntimeError("the metadata service has no instance-id")
        return value
