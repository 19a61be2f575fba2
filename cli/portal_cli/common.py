"""What every command shares: the `--json` option, the client, and running a command body
with the portal's refusals turned into exit codes."""

from __future__ import annotations

from typing import Annotated

import typer

from . import config
from .client import AUTH, Client, PortalError

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the API's objects as JSON (for scripts).")
]


def client(*, need_token: bool = True) -> Client:
    settings = config.load()
    if need_token and not settings.token:
        raise PortalError("Not logged in: run `portal login` (or set PORTAL_TOKEN).", code=AUTH)
    return Client(settings)
