"""The usage report's settled part: its figures over the months the hourly job rollup has
settled, summed once and kept in the web process until what they read changes.

A report by PI, project or facility and by month reads, for its settled months (`RolledMonth`:
ended, every job final and charged), the ledger's monthly rollups (`UsageMonth`) and the jobs'
(`JobMonth`, `JobMonthSize`), and the longest waits of the jobs that started; at a centre's
scale a year is 100,000 rollup rows. Those months change only through a late ledger record, a
rewrite of the rollups, the hourly job pass, or a rename of what a report groups by. So the
sums over them (`Settled`) are computed once and kept in the process's memory under a key of:
the grouping, the scope (every project, or the reader's), each settled month with the time the
job pass rolled it, and the versions that every such change bumps (core/versions.py: settled,
people for usernames, catalogue for facility names). The report adds the live part (the current
month, a month with a job still running, the days before the first whole month) to it on every
request (portal/reports/selectors.py). Nothing expires by guessing at timeouts; the least
recently read of `PORTAL_REPORT_SETTLED_KEPT` entries is dropped when a new one comes.
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Q, Sum

from allocations.models import Allocation
from core.versions import fragment_key
from launcher.job_months import JOB_COUNTS, WAIT
from launcher.models import Job

from . import job_rollups, monthly
from .cells import LiveNames, by_use, charged, figures, grand_total, zero
from .job_rollups import JobScope


class Cells:
    """A settled part's (group, month) cells and longest waits, read when a report first needs
    them and kept with the part: the cells of the groups a report shows (`Settled.load`: a page
    reads its 50 groups', in two small queries, the CSV and the API every group's once), the
    waits when a report first takes a p90 (`Settled.top_waits`). Written under `lock`; a
    group's `keys` last, so a reader that finds them finds its cells."""

    def __init__(self) -> None:
        # (group, month) -> (seconds, cost) and -> the JOB_COUNTS, as tuples (a dict a cell
        # would be twice the memory: a centre's year is 52,000 cells).
        self.usage: dict[tuple, tuple] = {}
        self.jobs: dict[tuple, tuple] = {}
        self.keys: dict[Any, tuple] = {}  # group -> its (group, month) cells
        self.every = False
        # The longest waits (submit to start, seconds) of the months' started jobs, longest
        # first: every one, or the first of them a p90 is taken from (`wait_depth`); None
        # until a report takes a p90 (a CSV of the usage table does not).
        self.waits: array | None = None
        self.lock = threading.Lock()


@dataclass(frozen=True)
class Settled:
    """Sums over the settled months (`months`); every dict but the `cells` is shared between
    requests and never written after it is built."""

    months: tuple[dt.date, ...] = ()
    group_by: str = "project"
    totals: dict[Any, dict] = field(default_factory=dict)  # group -> its sums
    order: tuple = ()  # the groups, cells.by_use
    everything: dict = field(default_factory=lambda: zero("all"))
    facts: dict = field(default_factory=job_rollups.no_facts)
    split: dict[str, int] = field(default_factory=lambda: {"total": 0, "jobs": 0, "notebooks": 0})
    facility_seconds: dict[int, int] = field(default_factory=dict)
    project_ids: tuple[int, ...] | None = None
    # Every allocation in the scope -> its group's name (what the live part's rows are named
    # after, cells.LiveNames): the versions of the key cover every rename.
    names: dict[int, Any] = field(default_factory=dict)
    facilities: dict[int, int] = field(default_factory=dict)  # and -> its facility's id
    members: dict[Any, tuple] = field(default_factory=dict)  # group -> its allocations with rows
    group_names: dict[Any, Any] = field(default_factory=dict)  # a group's id -> its name
    cells: Cells = field(default_factory=Cells, compare=False)

    def load(self, groups: Collection) -> None:
        """Read the cells of these groups not read yet: two queries, none when every one is.
        Where they hold most of the part's allocations, every group's are read at once."""
        cells = self.cells
        with cells.lock:
            missing = [g for g in groups if g not in cells.keys and g in self.totals]
            if cells.every or not missing:
                return
            allocations: list[int] | None = [pk for g in missing for pk in self.members[g]]
            every = len(allocations or ()) * 2 > len(self.names)
            if every:
                # Every row read; the cells of the groups read before are kept as they are.
                allocations = None
                missing = [g for g in self.totals if g not in cells.keys]
            wanted = set(missing)
            usage, jobs = self._read(allocations, wanted)
            cells.usage.update(usage)
            cells.jobs.update(jobs)
            keys: dict[Any, set] = {g: set() for g in missing}
            for key in (*usage, *jobs):
                keys[key[0]].add(key)
            for group, its in keys.items():
                cells.keys[group] = tuple(its)
            cells.every = every

    def _read(self, allocations: list[int] | None, wanted: set) -> tuple[dict, dict]:
        """The cells of the `wanted` groups: (group, month) -> (seconds, cost), and -> the
        JOB_COUNTS. Of every allocation (None) in a part of few groups of many allocations (a
        report by facility: 240 cells of a year, from 52,000 rows), summed by the group's id in
        the database; otherwise the rows as they are, one an allocation a month (of the groups
        shown: a few hundred), named by allocation and added up here. Two queries."""
        window = monthly.settled_window(self.project_ids, list(self.months), allocations)
        rows = job_rollups.rollup_rows(self.months, self.project_ids, allocations)
        if allocations is None and len(self.totals) * GROUPED <= len(self.names):
            by = f"allocation__{monthly.GROUP_ID[self.group_by]}"
            name_of: Callable[[Any], Any] = self.group_names.get
            usage_rows = window.months.values_list(by, "month").annotate(
                Sum("gpu_seconds"), Sum("cost")
            )
            job_rows = rows.values_list(by, "month").annotate(*(Sum(c) for c in JOB_COUNTS))
        else:
            name_of = LiveNames(self.group_by, "", self.names, self.facilities).of
            usage_rows = window.months.values_list("allocation_id", "month", "gpu_seconds", "cost")
            job_rows = rows.values_list("allocation_id", "month", *JOB_COUNTS)
        usage: dict[tuple, tuple] = {}
        for pk, month, seconds, cost in usage_rows.order_by():
            key = (name_of(pk), month)
            if key[0] in wanted:
                found = usage.get(key)
                usage[key] = (
                    (seconds, cost) if found is None else (found[0] + seconds, found[1] + cost)
                )
        jobs: dict[tuple, tuple] = {}
        for pk, month, *counts in job_rows.order_by():
            key = (name_of(pk), month)
            if key[0] in wanted:
                found = jobs.get(key)
                jobs[key] = (
                    tuple(counts)
                    if found is None
                    else tuple(map(sum, zip(found, counts, strict=True)))
                )
        return usage, jobs

    def rows(self, shown: list, usage: dict, jobs: dict) -> list[dict]:
        """The report's rows of the `shown` groups, by group name then period: the live part's
        (group, period) cells (`usage`, `jobs`) and this part's, read for them (`load`); each
        key is in one part only, as they lie in different months."""
        self.load(shown)
        wanted = set(shown)
        live_keys: dict[Any, list[tuple]] = {}
        for key in usage.keys() | jobs.keys():
            if key[0] in wanted:
                live_keys.setdefault(key[0], []).append(key)
        rows = []
        for group in sorted(shown, key=str):
            keys = sorted(
                (*self.cells.keys.get(group, ()), *live_keys.get(group, ())),
                key=lambda k: k[1] or dt.date.min,
            )
            for k in keys:
                cell = usage.get(k)
                seconds, cost = charged(cell) if cell is not None else self.charged(k)
                counts = jobs.get(k)
                rows.append(
                    _row(
                        k,
                        seconds,
                        cost,
                        self.cells.jobs.get(k, _NO_JOBS)
                        if counts is None
                        else tuple(counts[name] for name in JOB_COUNTS),
                    )
                )
        return rows

    def charged(self, key: tuple) -> tuple[int, Decimal]:
        """A loaded cell's GPU-seconds and cost (cells.figures; 0 for no cell)."""
        found = self.cells.usage.get(key)
        return figures(0, 0) if found is None else figures(*found)

    def top_waits(self, count: int) -> Sequence[float]:
        """At least the `count` longest settled waits in seconds (or every one), longest first:
        the kept ones (read at the first report that takes a p90), or (when more are asked
        than were kept) from the jobs."""
        cells = self.cells
        with cells.lock:
            if cells.waits is None:
                depth = wait_depth(self.facts["waited"])
                cells.waits = array(
                    "d",
                    (w.total_seconds() for w in _started(self.months, self.project_ids)[:depth]),
                )
        waits = cells.waits
        if count <= len(waits) or len(waits) == self.facts["waited"]:
            return waits
        return [wait.total_seconds() for wait in _started(self.months, self.project_ids)[:count]]


def _row(key: tuple, seconds: int, cost: Decimal, counts: Sequence[int]) -> dict:
    jobs, failed, short, short_or_failed = counts  # JOB_COUNTS
    return {
        "group": key[0] or "-",
        "period": key[1],
        "gpu_seconds": seconds,
        "gpu_hours": seconds / 3600,
        "cost": cost,
        "jobs": jobs,
        "failed": failed,
        "short": short,
        "short_or_failed": short_or_failed,
    }


_NO_JOBS = (0,) * len(JOB_COUNTS)


def kth_longest(a: Sequence[float], b: Sequence[float], k: int) -> float:
    """The k-th (from 0) largest of two sequences each sorted longest first, together holding
    more than k values: by bisecting how many of the k + 1 largest come from `b`, O(log k)."""
    lo, hi = max(0, k + 1 - len(a)), min(k + 1, len(b))
    while lo < hi:
        i = (lo + hi) // 2  # i from b, k + 1 - i from a
        if b[i] > a[k - i]:
            lo = i + 1  # b's next is longer than a's last taken: take more from b
        else:
            hi = i
    taken = [*([a[k - lo]] if lo <= k else []), *([b[lo - 1]] if lo else [])]
    return min(taken)


USAGE_SUMS = ("total_seconds", "total_cost")
#: A part's every cell is summed by its group's id in the database where it has at least this
#: many allocations a group (Settled._read).
GROUPED = 10
EMPTY = Settled()
_kept: OrderedDict[str, Settled] = OrderedDict()
_lock = threading.Lock()


def wait_depth(waited: int) -> int:
    """How many of `waited` settled waits are kept: those a p90 reads (the ceil(0.1 n)-th
    longest and above), and as many again as a live part up to the settled one's size adds."""
    rank = waited - math.ceil(0.9 * waited)
    return min(waited, 2 * rank + 64)


def _months_q(months: tuple[dt.date, ...]) -> Q:
    """Jobs created in these months: one created_at range a run of consecutive months."""
    runs: list[list[dt.date]] = []  # [first month, the month after the run]
    for month in months:
        if runs and runs[-1][1] == month:
            runs[-1][1] = monthly.next_month(month)
        else:
            runs.append([month, monthly.next_month(month)])
    q = Q()
    for start, end in runs:
        q |= Q(created_at__gte=monthly.at_midnight(start), created_at__lt=monthly.at_midnight(end))
    return q


def _started(months: tuple[dt.date, ...], project_ids):
    """The waits of the months' started jobs, longest first (a queryset of timedeltas)."""
    jobs = Job.objects.filter(
        _months_q(months), submitted_at__isnull=False, started_at__isnull=False
    )
    jobs = monthly.scoped(jobs, project_ids, "allocation__")
    return jobs.annotate(wait=WAIT).order_by("-wait").values_list("wait", flat=True)


def compute(group_by: str, project_ids, scope: JobScope) -> Settled:
    """The settled part, from the rollups: four queries, whatever the span. Its totals, split
    and hours by facility come from the rollups summed by allocation (a row an allocation a
    scope: a centre's year is 12,000 rows, no join), named and added up here; the cells of the
    groups a report shows are read when it shows them (`Settled.load`), the longest waits when
    it takes a p90 (`Settled.top_waits`)."""
    months = tuple(scope.months)
    if not months:
        return EMPTY
    ids = None if project_ids is None else tuple(sorted(project_ids))
    named = _names(group_by, ids)
    names = LiveNames(group_by, "", named["names"], named["facilities"])
    members: dict[Any, set] = {}
    totals: dict[Any, dict] = {}

    def group_of(pk: int) -> Any:
        group = names.of(pk)
        members.setdefault(group, set()).add(pk)
        if group not in totals:
            totals[group] = zero(group or "-")
        return group

    split = {"total": 0, "jobs": 0, "notebooks": 0}
    facility_seconds: dict[int, int] = {}
    window = monthly.settled_window(ids, list(months))
    for pk, seconds, cost, jobs, notebooks in monthly.usage_by_allocation(window):
        total = totals[group_of(pk)]
        total["gpu_seconds"] += seconds
        total["cost"] += cost
        split["total"] += seconds
        split["jobs"] += jobs
        split["notebooks"] += notebooks
        facility = names.facility(pk)
        if facility is not None:  # None: deleted since its rows were read
            facility_seconds[facility] = facility_seconds.get(facility, 0) + seconds
    counts, facts = job_rollups.rolled_by_group(scope, group_of)
    for group, sums in counts.items():
        total = totals[group]
        for name, value in zip(JOB_COUNTS, sums, strict=True):
            total[name] += value
    return Settled(
        months=months,
        group_by=group_by,
        totals=totals,
        order=tuple(by_use(totals)),
        everything=grand_total(totals.values()),
        facts=facts,
        split=split,
        facility_seconds=facility_seconds,
        project_ids=ids,
        names=named["names"],
        facilities=named["facilities"],
        group_names=named["group_names"],
        members={group: tuple(pks) for group, pks in members.items()},
    )


def _names(group_by: str, project_ids) -> dict[str, dict]:
    """Every allocation in the scope -> its group's name (`names`) and its facility's id; and
    each of their groups' ids -> its name."""
    allocations = monthly.scoped(Allocation.objects.all(), project_ids, "")
    names, facilities, group_names = {}, {}, {}
    for pk, name, group, facility in allocations.values_list(
        "pk", monthly.KEY[group_by], monthly.GROUP_ID[group_by], "facility_id"
    ):
        names[pk], facilities[pk], group_names[group] = name, facility, name
    return {"names": names, "facilities": facilities, "group_names": group_names}


def settled_part(group_by: str, project_ids, scope: JobScope) -> Settled:
    """The settled part of this report, from the process's memory when its key still holds."""
    if not scope.months:
        return EMPTY
    rolled = scope.rolled_at_by_month
    key = fragment_key(
        "report-settled",
        group_by,
        "all" if project_ids is None else ",".join(map(str, sorted(project_ids))),
        *(f"{month}@{rolled.get(month)}" for month in scope.months),
        project_ids=[],
        catalogue=True,
        people=True,
        settled=True,
    )
    with _lock:
        found = _kept.get(key)
        if found is not None:
            _kept.move_to_end(key)
            return found
    part = compute(group_by, project_ids, scope)
    with _lock:
        _kept[key] = part
        while len(_kept) > max(settings.PORTAL_REPORT_SETTLED_KEPT, 0):
            _kept.popitem(last=False)
    return part


def forget() -> None:
    """Drop every kept part (tests: a database rolled back under the same keys)."""
    with _lock:
        _kept.clear()
