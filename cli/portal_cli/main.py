"""`portal`: log in, see allocations and usage; `portal jobs ...`, `portal sweeps ...`,
`portal notebooks ...`."""
from __future__ import annotations

import sys
from typing import Annotated

import typer

from . import config, jobs, notebooks, sweeps
from .client import Client, PortalError
from .common import JsonOpt, client
from .output import err, hours, print_json, table

app = typer.Typer(
    help="The research compute portal from a terminal: allocations, jobs, sweeps, notebooks.\n\n"
         "Exit codes: 0 ok, 1 the job failed or was cancelled, 2 usage error, 3 refused by the "
         "portal (409), 4 authentication. PORTAL_URL and PORTAL_TOKEN override `portal login`.",
    no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
app.add_typer(jobs.app, name="jobs")
app.add_typer(sweeps.app, name="sweeps")
app.add_typer(notebooks.app, name="notebooks")


@app.command()
def login(
    url: Annotated[str | None, typer.Option(help="The portal's address (default: PORTAL_URL, the "
                                                    "stored one, or http://127.0.0.1:8000).")] = None,
    username: Annotated[str | None, typer.Option("--username", "-u", help="Log in with a password.")] = None,
    password: Annotated[str | None, typer.Option(help="Prompted for if not given.")] = None,
    token: Annotated[str | None, typer.Option(help="Paste a token (e.g. a personal token from "
                                                      "/account/tokens/) instead of a password.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Store the portal's URL and a token in your config dir (mode 600)."""
    settings = config.load()
    base = (url or settings.url).rstrip("/")
    if token is None and username is None:
        choice = typer.prompt("Token (empty to log in with a username and password)", default="",
                              hide_input=True, show_default=False)
        token = choice or None
    if token is None:
        username = username or typer.prompt("Username")
        password = password or typer.prompt("Password", hide_input=True)
        token = Client(config.Settings(url=base, token=None, source="")).token(
            username=username, password=password)
    me = Client(config.Settings(url=base, token=token, source="")).get("auth/me/")
    path = config.save(url=base, token=token, username=me["username"])
    if as_json:
        print_json({**me, "url": base, "config": str(path)})
    else:
        err.print(f"Logged in to {base} as [bold]{me['username']}[/]; token stored in {path}.")


@app.command()
def logout() -> None:
    """Forget the stored token (a personal token stays valid until revoked on /account/tokens/)."""
    err.print("Forgot the stored token." if config.forget() else "Nothing stored.")


@app.command()
def whoami(as_json: JsonOpt = False) -> None:
    """Who the token belongs to, and which token it is."""
    api = client()
    me = api.get("auth/me/")
    if as_json:
        print_json(me)
        return
    token = {"personal-token": f"personal token “{me['token_name']}”, expires {me['token_expires_at']}",
             "token": "API token", "session": "session"}[me["auth"]]
    source = api.settings.source
    typer.echo(f"{me['username']} on {api.settings.url} ({token}; from {source})")


@app.command()
def allocations(as_json: JsonOpt = False) -> None:
    """Your allocations: GPU-hours granted, used, reserved by unfinished work, and left."""
    rows = client().all_pages("allocations/")
    if as_json:
        print_json(rows)
        return
    table("Allocations", ["id", "project", "facility", "status", "granted", "used", "reserved",
                          "left", "ends"],
          [(a["id"], a["project_code"], a["facility"], a["status"], hours(a["gpu_hours"], 1),
            hours(a["gpu_hours_used"]), hours(a["gpu_hours_reserved"]),
            hours(a["gpu_hours_remaining"]), a["end_date"]) for a in rows])


@app.command()
def usage(allocation: Annotated[int, typer.Argument(help="The allocation's id.")],
          as_json: JsonOpt = False) -> None:
    """An allocation's ledger and its GPU-hours charged per day."""
    api = client()
    detail = api.get(f"allocations/{allocation}/")
    daily = api.get(f"allocations/{allocation}/usage/")
    if as_json:
        print_json({"allocation": detail, "usage": daily})
        return
    typer.echo(f"Allocation {detail['id']} ({detail['project_code']} on {detail['facility']}, "
               f"{detail['status']}): granted {hours(detail['gpu_hours'], 1)}, used "
               f"{hours(detail['gpu_hours_used'])}, reserved {hours(detail['gpu_hours_reserved'])}, "
               f"left {hours(detail['gpu_hours_remaining'])} GPU-hours")
    table("Usage per day", ["date", "GPU-h", "cost"],
          [(d["date"], hours(d["gpu_hours"]), f"{d['cost']:.2f}") for d in daily["daily"]])


def main() -> None:
    """The console script: run the app; the portal's refusals become exit codes."""
    try:
        app()
    except PortalError as error:
        if error.body is not None and "--json" in sys.argv:
            print_json({"status": error.status, "error": error.body})
        err.print(error.message, style="red", markup=False, highlight=False, soft_wrap=True)
        sys.exit(error.code)
