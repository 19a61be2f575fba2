"""`portal notebooks start|stop|list|show`: JupyterLab sessions on an allocation."""

from __future__ import annotations

import time
import webbrowser
from typing import Annotated

import typer

from .client import FAILED, Client
from .common import JsonOpt, client, size, sized_table, unit_of
from .output import err, hours, print_json

app = typer.Typer(
    rich_markup_mode="markdown",
    help="Notebook sessions (JupyterLab): start (and open), stop, list, show.",
    no_args_is_help=True,
)
POLL_SECONDS = 1.0
ENDED = ("stopped", "failed")


def _summary(nb: dict, api: Client) -> None:
    unit = unit_of(api, nb["allocation"])
    reason = f" ({nb['reason']})" if nb.get("reason") else ""
    typer.echo(
        f"notebook {nb['id']}: {nb['state']}{reason}  {size(nb['gpus'], unit)} for "
        f"{nb['hours']} h on allocation {nb['allocation']}"
    )
    charged = (
        f"charged {nb['gpu_seconds']} {unit['singular']}-seconds"
        if nb.get("charged")
        else f"reserves {hours(nb['reserved_gpu_seconds'] / 3600)} {unit['hours']}; "
        f"{hours(nb['gpu_seconds_so_far'] / 3600)} so far"
    )
    idle = (
        f"; idle {nb['idle_for']} s (limit {nb['idle_limit_minutes']} min)"
        if nb.get("idle_for") is not None
        else ""
    )
    typer.echo(f"{charged}{idle}; {api.settings.url}{nb['page']}")
    if nb.get("url"):
        typer.echo(f"JupyterLab: {nb['url']}")


def wait_running(api: Client, pk: int, *, timeout: float) -> dict:
    """Poll the session until it runs (or ends, or `timeout` seconds pass)."""
    deadline = time.monotonic() + timeout
    while True:
        nb = api.get(f"notebooks/{pk}/")
        if nb["state"] == "running" or nb["state"] in ENDED or time.monotonic() > deadline:
            return nb
        time.sleep(POLL_SECONDS)


@app.command()
def start(
    allocation: Annotated[
        int, typer.Option(help="The allocation to run on (see `portal allocations`).")
    ],
    gpus: Annotated[
        int,
        typer.Option(
            help="GPUs (CPUs on a facility without GPUs), within one node of the allocation's "
            "node type."
        ),
    ] = 1,
    hours_: Annotated[
        float,
        typer.Option(
            "--hours",
            help="The wall limit in hours (to 0.01): "
            "it is stopped there, and GPUs x hours "
            "is reserved until it is charged.",
        ),
    ] = 2.0,
    open_: Annotated[
        bool,
        typer.Option(
            "--open",
            help="Wait until it runs, then open JupyterLab "
            "in your browser (exit 1 if it never ran).",
        ),
    ] = False,
    wait: Annotated[
        float, typer.Option(help="With --open: seconds to wait for it to run.")
    ] = 300.0,
    as_json: JsonOpt = False,
) -> None:
    """Open a notebook session on an allocation (refused with exit 3 when it does not fit)."""
    api = client()
    nb = api.post("notebooks/", {"allocation": allocation, "gpus": gpus, "hours": round(hours_, 2)})
    if open_:
        if not as_json:
            err.print(f"Notebook {nb['id']} is starting...", highlight=False)
        nb = wait_running(api, nb["id"], timeout=wait)
    print_json(nb) if as_json else _summary(nb, api)
    if open_:
        if nb["state"] != "running" or not nb.get("url"):
            err.print(f"Notebook {nb['id']} is {nb['state']}: not opened.", style="red")
            raise typer.Exit(FAILED)
        webbrowser.open(nb["url"])


@app.command()
def stop(
    notebook: Annotated[int, typer.Argument(help="The session's id.")], as_json: JsonOpt = False
) -> None:
    """Stop a session (yours; a stopped one is refused: exit 3). It is charged what it ran."""
    api = client()
    nb = api.post(f"notebooks/{notebook}/stop/")
    print_json(nb) if as_json else _summary(nb, api)


@app.command("list")
def list_notebooks(
    allocation: Annotated[int | None, typer.Option(help="Only this allocation's sessions.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many, newest first (0: all).")] = 20,
    as_json: JsonOpt = False,
) -> None:
    """Notebook sessions on the allocations you can see, newest first."""
    api = client()
    query = {"allocation": allocation} if allocation else {}
    rows = (
        api.get("notebooks/", **query)["results"][:limit]
        if limit
        else api.all_pages("notebooks/", **query)
    )
    if as_json:
        print_json(rows)
        return
    sized_table(
        api,
        "Notebooks",
        ["id", "allocation", "owner", "state", "size", "hours", "used", "started"],
        rows,
        _row,
    )


def _row(n: dict, unit: dict) -> tuple:
    return (
        n["id"],
        n["allocation"],
        n["owner"],
        n["state"],
        size(n["gpus"], unit),
        n["hours"],
        hours(n["gpu_seconds_so_far"] / 3600),
        (n["started_at"] or "")[:16].replace("T", " "),
    )


@app.command()
def show(
    notebook: Annotated[int, typer.Argument(help="The session's id.")], as_json: JsonOpt = False
) -> None:
    """One session: state, reservation or charge, idle time, and its URL (yours only)."""
    api = client()
    nb = api.get(f"notebooks/{notebook}/")
    print_json(nb) if as_json else _summary(nb, api)
