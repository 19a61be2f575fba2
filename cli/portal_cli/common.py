"""What every command shares: the `--json` option, the client, and running a command body
with the portal's refusals turned into exit codes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

import typer

from . import config
from .client import AUTH, Client, PortalError
from .output import table

JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the API's objects as JSON (for scripts).")
]


def client(*, need_token: bool = True) -> Client:
    settings = config.load()
    if need_token and not settings.token:
        raise PortalError("Not logged in: run `portal login` (or set PORTAL_TOKEN).", code=AUTH)
    return Client(settings)


# The API's `unit` of an allocation (docs/api.md, "Figures"): its `gpu_*` figures count
# CPU-hours where the facility has no GPUs. A portal from before `unit` counted GPUs only.
GPU_UNIT = {"key": "gpu", "singular": "GPU", "plural": "GPUs", "hours": "GPU-hours"}


def unit_of(api: Client, allocation: int | None) -> dict:
    """The unit of one allocation's figures (one GET), GPU where there is none."""
    if allocation is None:
        return GPU_UNIT
    return api.get(f"allocations/{allocation}/").get("unit") or GPU_UNIT


def units_by_allocation(api: Client) -> dict[int, dict]:
    """The unit of every allocation the user can see (for a list of jobs or sessions)."""
    return {a["id"]: a.get("unit") or GPU_UNIT for a in api.all_pages("allocations/")}


def sized_table(
    api: Client,
    title: str,
    columns: list[str],
    rows: list[dict],
    row: Callable[[dict, dict], Sequence[Any]],
) -> None:
    """A compact table of rows (jobs, sessions) on allocations that may count different units:
    `row(item, its allocation's unit)` gives a row's cells; a line under the table says which
    rows' hours are CPU-hours, when any are."""
    known = units_by_allocation(api)
    units = [known.get(item["allocation"], GPU_UNIT) for item in rows]
    table(
        title,
        columns,
        [row(item, unit) for item, unit in zip(rows, units, strict=True)],
        compact=True,
    )
    if any(unit.get("key", "gpu") == "cpu" for unit in units):
        typer.echo("Hours: GPU-hours; CPU-hours where the size is CPUs (a facility without GPUs).")


def size(n: int | None, unit: dict) -> str:
    """ "1 GPU", "2 CPUs"."""
    if n is None:
        return "-"
    return f"{n} {unit['singular'] if n == 1 else unit['plural']}"
