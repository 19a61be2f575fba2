"""A usage report's cells and their sums: a (group, period) cell of the ledger (GPU-seconds and
cost) and of the jobs (the counts `JOB_COUNTS`), a group's totals over its cells, and the
report's grand total. Shared by the report (selectors.py) and its settled part (settled.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from allocations.models import Allocation
from launcher.job_months import JOB_COUNTS

from .monthly import KEY

#: What every total adds up (and `cost`).
SUMMED = ("gpu_seconds", *JOB_COUNTS)


_PLACES = Decimal("0.0001")


def figures(seconds: Any, cost: Any) -> tuple[int, Decimal]:
    """GPU-seconds and cost as a report shows them: whole seconds, the cost to the ledger's 4
    places; None as 0."""
    return int(seconds or 0), Decimal(cost or 0).quantize(_PLACES)


def charged(usage: dict | None) -> tuple[int, Decimal]:
    """A usage cell's `figures`; 0 for no cell."""
    if usage is None:
        return figures(0, 0)
    return figures(usage.get("total_seconds"), usage.get("total_cost"))


def zero(group: str) -> dict[str, Any]:
    return {"group": group, **{key: 0 for key in SUMMED}, "cost": Decimal(0)}


def add(total: dict, row: dict) -> None:
    for key in SUMMED:
        total[key] += row[key]
    total["cost"] += row["cost"]


def group_totals(usage: dict[tuple, dict], jobs: dict[tuple, dict]) -> dict[Any, dict]:
    """Each group's sums over its periods, in one pass over the cells: the figures a report row
    gives its cell, added up without building a row per cell."""
    totals: dict[Any, dict] = {}
    for (group, _), cell in usage.items():
        total = totals.get(group)
        if total is None:
            total = totals[group] = zero(group or "-")
        # `charged`'s figures: the ledger's costs have its 4 places, and so have their sums.
        total["gpu_seconds"] += int(cell["total_seconds"] or 0)
        total["cost"] += cell["total_cost"] or 0
    for (group, _), cell in jobs.items():
        total = totals.get(group)
        if total is None:
            total = totals[group] = zero(group or "-")
        for name in JOB_COUNTS:
            total[name] += cell.get(name, 0)
    return totals


def merged_totals(base: dict[Any, dict], more: dict[Any, dict]) -> dict[Any, dict]:
    """`base`'s totals with `more`'s added, leaving both as they were (`base` is shared: the
    settled part a process keeps)."""
    totals = dict(base)
    for group, total in more.items():
        if group in totals:
            totals[group] = dict(totals[group])
            add(totals[group], total)
        else:
            totals[group] = total
    return totals


def by_use(totals: dict[Any, dict]) -> list:
    """The groups, most GPU-seconds first; ties in the order of the groups' names."""
    return sorted(totals, key=lambda g: (-totals[g]["gpu_seconds"], str(g)))


def ranked(
    settled: dict[Any, dict], settled_order: Sequence, live: dict[Any, dict], limit: int | None
) -> tuple[list, dict[Any, dict], int]:
    """The first `limit` groups `by_use` (every one without a limit) of the settled and live
    totals added up, their totals, and how many groups there are in all.

    With a limit only the settled part's first `limit` groups (`settled_order`, its `by_use`)
    and the live part's are ranked, not a centre's thousands: a group with no live cell keeps
    its settled total, and the `limit` settled groups before it only gain. Where a live total
    is negative (a correction) every group is ranked."""
    if limit is None or any(total["gpu_seconds"] < 0 for total in live.values()):
        totals = merged_totals(settled, live)
        order = by_use(totals)
        return (order if limit is None else order[:limit]), totals, len(order)
    # The candidates ranked by their seconds alone; only the first `limit` are added up whole.
    seconds = {g: settled[g]["gpu_seconds"] for g in settled_order[:limit]}
    for g, total in live.items():
        before = settled.get(g)
        seconds[g] = total["gpu_seconds"] + (before["gpu_seconds"] if before else 0)
    shown = sorted(seconds, key=lambda g: (-seconds[g], str(g)))[:limit]
    totals = merged_totals(
        {g: settled[g] for g in shown if g in settled}, {g: live[g] for g in shown if g in live}
    )
    count = len(settled) + sum(1 for g in live if g not in settled)
    return shown, totals, count


def grand_total(totals: Iterable[dict]) -> dict[str, Any]:
    everything = zero("all")
    for total in totals:
        add(everything, total)
    return everything


class LiveNames:
    """How the live part's queries key a row's group. By PI, project or facility they group by
    the allocation's id, and the ids met are named afterwards in one lookup: the joins to every
    allocation, project and user (12,000, 3,000 and 10,000 rows at a centre) cost more than the
    current month's rows they name. By user, the query groups by the name itself. An
    allocation's facility is looked up with its name (`facility_seconds`)."""

    def __init__(
        self,
        group_by: str,
        name_path: str,
        known: dict[int, Any] | None = None,
        facilities: dict[int, int] | None = None,
    ):
        self.by_allocation = group_by in KEY
        self.path = KEY.get(group_by, "")
        self.key = "allocation_id" if self.by_allocation else name_path
        # What the settled part already holds (shared: never written), then what is looked up
        # here; `known` and `facilities` hold the same allocations.
        self._known = known or {}
        self._facilities = facilities or {}
        self._found: dict[Any, tuple[Any, int]] = {}

    def name(self, keys: Iterable[Any]) -> None:
        """Look up the names of these keys (allocation ids) not yet known: one query, none
        when every one is."""
        if not self.by_allocation:
            return
        missing = {key for key in keys if key not in self._known and key not in self._found}
        if missing:
            found = Allocation.objects.filter(pk__in=missing)
            for pk, name, facility in found.values_list("pk", self.path, "facility_id"):
                self._found[pk] = (name, facility)

    def of(self, key: Any) -> Any:
        """The group's name of a key; an allocation not yet named is looked up (one query)."""
        if not self.by_allocation:
            return key
        found = self._known.get(key, _NONE)
        if found is not _NONE:
            return found
        if key not in self._found:
            self.name((key,))
        return self._found.get(key, _GONE)[0]

    def folded(self, cells: dict[tuple, dict], sums: Iterable[str]) -> dict[tuple, dict]:
        """(key, period) cells as (group, period) cells, the `sums` of one group's added up."""
        if not self.by_allocation:
            return cells
        self.name(key for key, _ in cells)
        sums = tuple(sums)
        out: dict[tuple, dict] = {}
        for (key, period), cell in cells.items():
            group = (self.of(key), period)
            if group in out:
                folded = out[group]
                for name in sums:
                    folded[name] = (folded[name] or 0) + (cell[name] or 0)
            else:
                out[group] = {name: cell[name] for name in sums}
        return out

    def facility(self, key: int) -> int | None:
        """An allocation's facility's id (looked up with its name where not known)."""
        found = self._facilities.get(key)
        if found is None:
            self.of(key)
            found = self._found.get(key, _GONE)[1]
        return found

    def facility_seconds(self, cells: dict[tuple, dict]) -> dict[int, int]:
        """Charged seconds per facility of (allocation id, period) usage cells, named first."""
        self.name(key for key, _ in cells)
        totals: dict[int, int] = {}
        for (key, _), cell in cells.items():
            facility = self.facility(key)
            if facility is not None:  # None: deleted since its rows were read
                totals[facility] = totals.get(facility, 0) + int(cell["total_seconds"] or 0)
        return totals


_NONE = object()
#: An allocation deleted since its rows were read: no name, no facility.
_GONE = (None, None)
