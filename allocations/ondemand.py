"""The balance file Open OnDemand's dashboard reads (`OOD_BALANCE_PATH`): each member's GPU-hours
left per project, in OnDemand's version-1 format (docs/ondemand.md).

OnDemand (apps/dashboard/app/models/balance.rb, `Balance.find`) keeps the rows whose `user` is
the dashboard's own unix login, reads `value` with Ruby's `to_i` and `timestamp` as Unix seconds,
and shows `config.unit` ("GPU-hour balance is 12"; pluralised: "GPU-hours") and
`config.project_type` before `project` ("... warning for project ABC-DEF-001"). So:

- `user` is the member's cluster login in that project (`ProjectMembership.cluster_username`,
  the login the Slurm backend associates; allocations/usernames.py): members without one have
  no account on the cluster and no row;
- `project` is the project's code, the name the portal shows it by;
- `value` is the GPU-hours left on the project's active allocations, each by the ledger's one
  rule (allocations/ledger.py: granted - charged - reserved by unfinished work, never below 0),
  summed and rounded down to whole hours (OnDemand truncates anyway; the file never says more
  is left than is). A project whose live allocations are all suspended, exhausted or still
  provisioning has a row with 0: nothing may run on it. Projects with no live allocation
  (none yet, or all expired or closed) have no row.

Reads only: two queries (three with a facility), whatever the number of members and
allocations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from .ledger import ledger_of
from .models import Allocation, Facility, ProjectMembership

#: The only version of the format OnDemand reads.
VERSION = 1
#: Singular: OnDemand writes "<unit> balance is N" and pluralises it ("GPU-hours").
UNIT = "GPU-hour"
#: Shown before the project's code in OnDemand's warning.
PROJECT_TYPE = "project"
#: What a facility's slug can be (models.SlugField): anything else names none, unasked.
SLUG = re.compile(r"[-a-zA-Z0-9_]{1,50}")


@dataclass(frozen=True)
class OodBalance:
    """One row of the file: a member's login, the project's code, whole GPU-hours left."""

    user: str
    project: str
    value: int


def ood_balances(*, user_id: int | None = None, facility_id: int | None = None) -> list[OodBalance]:
    """The rows, ordered by login then project: every active member's (`user_id=None`) or one
    portal user's own, over the allocations of every facility or of `facility_id`'s only.
    Who may ask for which is the caller's to decide (allocations/api/balances.py)."""
    allocations = Allocation.objects.filter(status__in=Allocation.LIVE)
    if facility_id is not None:
        allocations = allocations.filter(facility_id=facility_id)
    members = ProjectMembership.objects.filter(user__is_active=True).exclude(cluster_username="")
    if user_id is not None:
        members = members.filter(user_id=user_id)
        allocations = allocations.filter(project_id__in=members.values("project_id"))

    seconds_left: dict[int, Decimal] = {}
    for allocation in allocations.only(
        "project_id", "status", "gpu_hours", "budget", *Allocation.LEDGER_FIELDS
    ):
        left = seconds_left.setdefault(allocation.project_id, Decimal(0))
        if allocation.status == Allocation.Status.ACTIVE:
            seconds_left[allocation.project_id] = left + ledger_of(allocation).gpu_seconds_remaining

    rows = (
        members.filter(project_id__in=allocations.values("project_id"))
        .order_by("cluster_username", "project__code")
        .values_list("cluster_username", "project__code", "project_id")
    )
    found: dict[tuple[str, str], OodBalance] = {}
    for login, code, project_id in rows:
        hours = int(seconds_left.get(project_id, Decimal(0)) // 3600)
        # Two portal accounts with one login in one project are one person on the cluster.
        found.setdefault((login, code), OodBalance(user=login, project=code, value=hours))
    return list(found.values())


def facility_id(slug: str) -> int | None:
    """The id of the facility with this slug, or None (one query, none for a non-slug)."""
    if not SLUG.fullmatch(slug):
        return None
    return Facility.objects.filter(slug=slug).values_list("pk", flat=True).first()


def ood_document(balances: list[OodBalance], *, now: datetime) -> dict[str, Any]:
    """The whole file, as OnDemand's version 1 has it; `timestamp` in Unix seconds."""
    return {
        "version": VERSION,
        "timestamp": int(now.timestamp()),
        "config": {"unit": UNIT, "project_type": PROJECT_TYPE},
        "balances": [
            {"user": row.user, "project": row.project, "value": row.value} for row in balances
        ],
    }
