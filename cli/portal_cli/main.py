"""`portal`: log in, see allocations and usage; `portal jobs ...`, `portal sweeps ...`,
`portal notebooks ...`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from . import config, jobs, notebooks, sweeps
from .client import AUTH, Client, PortalError
from .common import GPU_UNIT, JsonOpt, client
from .output import err, grant, hours, money, print_json, say, table

app = typer.Typer(
    rich_markup_mode="markdown",
    help="The research compute portal from a terminal: allocations, jobs, sweeps, notebooks.\n\n"
    "Exit codes: 0 ok, 1 the job failed or was cancelled, 2 usage error, 3 refused by the "
    "portal (409), 4 authentication. PORTAL_URL and PORTAL_TOKEN override `portal login`.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(jobs.app, name="jobs")
app.add_typer(sweeps.app, name="sweeps")
app.add_typer(notebooks.app, name="notebooks")


@app.command()
def login(
    url: Annotated[
        str | None,
        typer.Option(
            help="The portal's address (default: PORTAL_URL, the "
            "stored one, or http://127.0.0.1:8000)."
        ),
    ] = None,
    username: Annotated[
        str | None, typer.Option("--username", "-u", help="Log in with a password.")
    ] = None,
    password: Annotated[str | None, typer.Option(help="Prompted for if not given.")] = None,
    token: Annotated[
        str | None,
        typer.Option(
            help="Paste a token (e.g. a personal token from "
            "/account/tokens/) instead of a password."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Store the portal's URL and a token in your config dir (mode 600)."""
    settings = config.load()
    base = (url or settings.url).rstrip("/")
    if token is None and username is None:
        choice = typer.prompt(
            "Token (empty to log in with a username and password)",
            default="",
            hide_input=True,
            show_default=False,
        )
        token = choice or None
    if token is None:
        username = username or typer.prompt("Username")
        password = password or typer.prompt("Password", hide_input=True)
        token = Client(config.Settings(url=base, token=None, source="")).token(
            username=username, password=password
        )
    me = Client(config.Settings(url=base, token=token, source="")).get("auth/me/")
    path = config.save(url=base, token=token, username=me["username"])
    if as_json:
        print_json({**me, "url": base, "config": str(path)})
    else:
        err.print(f"Logged in to {base} as [bold]{me['username']}[/]; token stored in {path}.")


@app.command()
def logout(
    local: Annotated[
        bool,
        typer.Option(
            "--local", help="Only forget the stored token; do not ask the portal to revoke it."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Revoke the token at the portal (POST auth/logout/), then forget the stored one. With
    PORTAL_TOKEN set, that token is the one revoked, and a stored login is kept."""
    settings = config.load()
    from_env = settings.source == "PORTAL_TOKEN"
    revoked, note = False, ""
    if settings.token and not local:
        try:
            Client(settings).post("auth/logout/")
            revoked = True
        except PortalError as error:
            if error.code != AUTH:  # unreachable, or a server error: keep it, say so
                error.message += (
                    "\nThe token is still valid and still stored: try again, "
                    "or `portal logout --local` and revoke it on /account/tokens/."
                )
                raise
            note = " The portal no longer took it (expired or revoked already)."
    forgotten = config.forget() if local or not from_env else False
    if as_json:
        print_json({"revoked": revoked, "forgotten": forgotten})
        return
    what = (
        "Revoked the token in PORTAL_TOKEN (unset it); a stored login is kept."
        if from_env and revoked
        else "Revoked the token and forgot it."
        if revoked
        else "Forgot the stored token."
        if forgotten
        else "Nothing stored."
    )
    err.print(what + note, markup=False)


@app.command()
def whoami(as_json: JsonOpt = False) -> None:
    """Who the token belongs to, and which token it is."""
    api = client()
    me = api.get("auth/me/")
    if as_json:
        print_json(me)
        return
    token = {
        "personal-token": f"personal token “{me['token_name']}”, expires {me['token_expires_at']}",
        "token": f"account token, expires {me['token_expires_at']}",
        "session": "session",
    }[me["auth"]]
    source = api.settings.source
    typer.echo(f"{me['username']} on {api.settings.url} ({token}; from {source})")


@app.command()
def allocations(as_json: JsonOpt = False) -> None:
    """Your allocations: hours granted, used and left (granted less used less reserved by
    unfinished work: `portal usage ID` shows the reservations), in their unit (the title says
    it: GPU-hours, and CPU-hours on the facilities without GPUs), the end date, and the day it
    runs out at its 7-day rate ("-" with no projection). Fits 80 columns."""
    rows = client().all_pages("allocations/")
    if as_json:
        print_json(rows)
        return
    table(
        f"Allocations ({hours_in(rows)})",
        ["id", "project", "facility", "status", "granted", "used", "left", "ends", "runs out"],
        [
            (
                a["id"],
                a["project_code"],
                a["facility"],
                a["status"],
                grant(a["gpu_hours"]),
                hours(a["gpu_hours_used"]),
                hours(a["gpu_hours_remaining"]),
                a["end_date"],
                runs_out(a.get("runs_out_on")),
            )
            for a in rows
        ],
        compact=True,
    )


def hours_in(rows: list[dict]) -> str:
    """The unit of the rows' hours, for the title: "GPU-hours", or where some facilities have
    no GPUs, "GPU-hours; CPU-hours on local" (no column: the table still fits 80 columns)."""
    by_unit: dict[str, list[str]] = {}
    for a in rows:
        facilities = by_unit.setdefault((a.get("unit") or GPU_UNIT)["hours"], [])
        if a["facility"] not in facilities:
            facilities.append(a["facility"])
    if len(by_unit) <= 1:
        return next(iter(by_unit), GPU_UNIT["hours"])
    most = max(by_unit, key=lambda u: (len(by_unit[u]), u == GPU_UNIT["hours"]))
    others = [f"{u} on {', '.join(by_unit[u])}" for u in by_unit if u != most]
    return "; ".join([most, *others])


def runs_out(projection: dict | None) -> str:
    """The earlier of the GPU-hours' and the budget's run-out dates (ISO dates sort as
    dates), or "-" with no projection."""
    found = projection or {}
    dates = [d for d in (found.get("gpu_hours"), found.get("budget")) if d]
    return min(dates) if dates else "-"


@app.command()
def usage(
    allocation: Annotated[int, typer.Argument(help="The allocation's id.")],
    as_json: JsonOpt = False,
) -> None:
    """An allocation's ledger and its GPU-hours (CPU-hours on a facility without GPUs)
    charged per day."""
    api = client()
    detail = api.get(f"allocations/{allocation}/")
    unit = detail.get("unit") or GPU_UNIT  # the facility's
    daily = api.get(f"allocations/{allocation}/usage/")
    if as_json:
        print_json({"allocation": detail, "usage": daily})
        return
    say(
        f"Allocation {detail['id']} ({detail['project_code']} on {detail['facility']}, "
        f"{detail['status']}): granted {grant(detail['gpu_hours'])}, used "
        f"{hours(detail['gpu_hours_used'])}, reserved {hours(detail['gpu_hours_reserved'])}, "
        f"left {hours(detail['gpu_hours_remaining'])} {unit['hours']}"
    )
    if detail.get("budget") is not None:
        typer.echo(
            f"Budget {money(detail['budget'])}: spent {money(detail['spend'])}, reserved "
            f"{money(detail['cost_reserved'])}, left {money(detail['budget_remaining'])}"
        )
    table(
        "Usage per day",
        ["date", f"{unit['singular']}-h", "cost"],
        [(d["date"], hours(d["gpu_hours"]), money(d["cost"])) for d in daily["daily"]],
    )


def main() -> None:
    """The console script: run the app; the portal's refusals become exit codes."""
    try:
        app()
    except PortalError as error:
        if error.body is not None and "--json" in sys.argv:
            print_json({"status": error.status, "error": error.body})
        err.print(error.message, style="red", markup=False, highlight=False, soft_wrap=True)
        sys.exit(error.code)
