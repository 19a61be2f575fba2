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


def size(n: int | None, unit: dict) -> str:
    """ "1 GPU", "2 CPUs"."""
    if n is None:
        return "-"
    return f"{n} {unit['singular'] if n == 1 else unit['plural']}"


def cpu_note(units: list[dict]) -> str | None:
    """The line under a list whose rows' hours differ in unit, or None when none is CPUs."""
    if all(u.get("key", "gpu") != "cpu" for u in units):
        return None
    return "Hours: GPU-hours; CPU-hours where the size is CPUs (a facility without GPUs)."
