"""The usage report, aggregated in SQL: a fixed number of queries whatever the number of rows.

Scope: reviewers and admins see everything; a PI or manager sees the projects they lead or
manage; anyone else has no report (the caller answers 404).

Bases, stated on the page and in docs/reports.md:
- GPU-hours and cost by PI, project and facility come from the usage ledger (UsageRecord: what
  the schedulers and the cloud charged), by the month or week of the record's start.
- By user they come from the same ledger: the records attributed to a job (`UsageRecord.job_id`:
  Slurm rows, local cells, cloud workers' instance time), by the user who launched the job;
  records of no portal job (the head node older versions launched, work outside the portal)
  are under "-". So the user totals equal the project totals, cloud jobs included.
- Jobs, wait (submit to start), size (GPUs), efficiency (the mean utilisation the trainer
  reported, weighted by GPU-seconds) and short (< 1 min run) or failed shares come from Job rows,
  by the month or week the job was created; a job cancelled before it started is not counted.
- The totals' GPU-hours are split by what charged them (`split`): jobs, notebook sessions and
  other records; the job-size table holds jobs only.
- By PI, project or facility and month, the ledger's figures come from the monthly rollups the
  ledger keeps (portal/reports/monthly.py): the same sums, read from twelve rows an allocation
  a year rather than from every record.
- Those figures over the settled months are summed once a process and kept until what they read
  changes (portal/reports/settled.py); each request adds the live part to them.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection
from dataclasses import dataclass, field

from django.db.models import (
    Count,
    DateField,
    DurationField,
    ExpressionWrapper,
    F,
    FloatField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
)
from django.db.models.functions import Coalesce, TruncMonth, TruncWeek

from allocations.models import Facility, ProjectMembership, UsageRecord
from allocations.roles import sees_all_projects
from core.errors import NotFound
from launcher.job_months import FAILED, JOB_COUNTS, RAN, SHORT, WAIT
from launcher.models import Job

from . import job_rollups, monthly, settled
from .cells import LiveNames, grand_total, group_totals, ranked
from .job_rollups import JobScope
from .settled import USAGE_SUMS, Settled

GROUPS = ("pi", "project", "facility", "user")
#: The job figures a report reads besides its rows, groups and totals (usage_report's `figures`).
FIGURES = ("wait", "sizes", "efficiency")
PERIODS = ("month", "week")
#: A job's group by user (by PI, project or facility: its allocation's, cells.LiveNames).
_BY_USER = "created_by__username"
_TRUNC = {"month": TruncMonth, "week": TruncWeek}


def _period_of(period: str, field: str):
    """The period a row falls in, as a date from the database: a centre's live month is
    a thousand rows, and a truncated datetime is made aware in Python row by row."""
    return _TRUNC[period](field, output_field=DateField())


class NoReport(NotFound):
    """The user has no report to see (HTTP 404)."""


@dataclass
class Report:
    group_by: str
    period: str
    rows: list[dict] = field(default_factory=list)  # group x period
    groups: list[dict] = field(default_factory=list)  # totals per group
    totals: dict = field(default_factory=dict)
    wait: dict = field(default_factory=dict)
    sizes: list[dict] = field(default_factory=list)
    efficiency: list[dict] = field(default_factory=list)
    # When the job figures of settled months were rolled up (None: every job counted live).
    jobs_rolled_at: dt.datetime | None = None
    # The totals' hours by each facility's unit ({"GPU-hours": ..., "CPU-hours": ...}: a CPU-only
    # facility's ledger counts CPU-seconds), and the word for the hours columns.
    units: dict[str, float] = field(default_factory=dict)
    unit_label: str = "GPU-hours"
    # The totals' GPU-hours by what charged them: jobs, notebook sessions, other (records of
    # no portal job or session: work on the accounts outside the portal).
    split: dict = field(default_factory=dict)
    # Groups left out of `rows`, `groups` and `efficiency` by usage_report's `limit` (the page).
    hidden_groups: int = 0


def report_project_ids(user) -> list[int] | None:
    """None = every project (staff); else the ids of projects the user leads or manages.
    Raises NoReport when there are none."""
    if sees_all_projects(user):
        return None
    ids = (
        list(
            ProjectMembership.objects.filter(
                user=user, role__in=[ProjectMembership.Role.PI, ProjectMembership.Role.MANAGER]
            ).values_list("project_id", flat=True)
        )
        if user.is_authenticated
        else []
    )
    if not ids:
        raise NoReport("No usage report for you: it is for PIs, managers and staff.")
    return ids


def _scoped(qs: QuerySet, project_ids: list[int] | None, prefix: str = "allocation__") -> QuerySet:
    return qs if project_ids is None else qs.filter(**{f"{prefix}project_id__in": project_ids})


@dataclass
class LiveUsage:
    """The live part's ledger: (group, period) cells, and what they sum to by facility and
    by what charged them (monthly.split_seconds)."""

    cells: dict[tuple, dict]
    facility_seconds: dict[int, int]
    split: dict[str, int]


def _usage_cells(
    group_by: str, period: str, project_ids, since, window: monthly.Window, names: LiveNames
) -> LiveUsage:
    """The ledger's cells but those of the settled months: by month and PI, project or
    facility, the monthly rollups' rows by allocation (two queries at most) and the names'
    lookup, the sums by facility and split from the same rows; otherwise three queries more."""
    if period == "month" and group_by in monthly.KEY:
        cells = monthly.usage_cells(window)
        return LiveUsage(
            names.folded(cells, USAGE_SUMS), names.facility_seconds(cells), monthly.split_of(cells)
        )
    qs = _scoped(UsageRecord.objects.all(), project_ids)
    if since:
        qs = qs.filter(period_start__gte=monthly.at_midnight(since))
    key: Subquery | F
    if group_by == "user":
        # The ledger's records attributed to a job (Slurm rows, local cells, cloud workers'
        # instance time), by who launched that job; records of no portal job group under "-".
        key = Subquery(Job.objects.filter(pk=OuterRef("job_id")).values("created_by__username")[:1])
    else:
        key = F(names.key)
    qs = (
        qs.annotate(g=key, p=_period_of(period, "period_start"))
        .values("g", "p")
        .annotate(total_seconds=Sum("gpu_seconds"), total_cost=Sum("cost"))
    )
    return LiveUsage(
        names.folded({(r["g"], r["p"]): r for r in qs.order_by()}, USAGE_SUMS),
        monthly.seconds_by_facility(window),
        monthly.split_seconds(window),
    )


def _job_cells(period: str, project_ids, scope: JobScope, names: LiveNames) -> dict[tuple, dict]:
    """(group, period) -> jobs, failed, short of the jobs counted from their rows (`scope.live`).
    One query, and the names' lookup."""
    run = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    qs = _scoped(Job.objects.filter(RAN).filter(scope.live), project_ids)
    qs = (
        qs.annotate(g=F(names.key), p=_period_of(period, "created_at"), run=run)
        .values("g", "p")
        .annotate(
            jobs=Count("id"),
            failed=Count("id", filter=FAILED),
            short=Count("id", filter=Q(run__lt=SHORT)),
            short_or_failed=Count("id", filter=FAILED | Q(run__lt=SHORT)),
        )
    )
    return names.folded({(r["g"], r["p"]): r for r in qs.order_by()}, JOB_COUNTS)


def _finished(total: dict) -> dict:
    """A copy of a total with its hours and its short-or-failed share."""
    total = dict(total)
    total["gpu_hours"] = total["gpu_seconds"] / 3600
    # A job both short and failed counts once.
    total["short_or_failed_share"] = (
        total.pop("short_or_failed") / total["jobs"] if total["jobs"] else None
    )
    return total


def wait_times(project_ids, scope: JobScope, part: Settled) -> dict:
    """Mean and p90 of submit -> start over jobs that started. The count and mean from the
    rollups (`part`) and the live rows (`scope`: job_rollups), the p90 (a percentile does not
    add up) from the settled months' longest waits and the live ones, the same on PostgreSQL and
    SQLite."""
    live = (
        _scoped(
            Job.objects.filter(submitted_at__isnull=False, started_at__isnull=False), project_ids
        )
        .annotate(wait=WAIT)
        .filter(scope.live)
    )
    sums = live.aggregate(n=Count("id"), total=Sum("wait"))
    waited = part.facts["waited"]
    n = sums["n"] + waited
    if not n:
        return {"jobs": 0, "mean_seconds": None, "p90_seconds": None}
    total = (sums["total"] or dt.timedelta()).total_seconds()
    mean = (total + part.facts["wait_seconds"]) / n
    # Nearest-rank p90: the ceil(0.9 n)-th smallest wait, taken from the top (the n - ceil(0.9 n)
    # + 1-th largest), so the database keeps a tenth of the waits in its sort, not all of them.
    rank = n - math.ceil(0.9 * n)
    longest = live.order_by("-wait").values_list("wait", flat=True)
    if not waited:
        p90 = longest[rank].total_seconds()
    else:
        # The rank-th of the two parts' longest waits, each longest first. It is no shorter
        # than the settled part's own rank-th, so only live waits at least that long count.
        theirs = part.top_waits(rank + 1)
        if len(theirs) > rank:
            longest = longest.filter(wait__gte=dt.timedelta(seconds=theirs[rank]))
        mine = [wait.total_seconds() for wait in longest[: rank + 1]] if sums["n"] else []
        p90 = settled.kth_longest(theirs, mine, rank)
    return {"jobs": n, "mean_seconds": mean, "p90_seconds": p90}


def job_sizes(project_ids, scope: JobScope, rolled: dict) -> list[dict]:
    qs = _scoped(Job.objects.filter(RAN).filter(scope.live), project_ids)
    sizes: dict[int, list[int]] = {k: list(v) for k, v in rolled["sizes"].items()}
    for r in qs.values("gpus").annotate(jobs=Count("id"), s=Coalesce(Sum("gpu_seconds"), 0)):
        old = sizes.setdefault(r["gpus"], [0, 0])
        old[0], old[1] = old[0] + r["jobs"], old[1] + r["s"]
    return [
        {"gpus": gpus, "jobs": n, "gpu_hours": seconds / 3600}
        for gpus, (n, seconds) in sorted(sizes.items())
    ]


def efficiency(project_ids, scope: JobScope, rolled: dict, names: LiveNames) -> list[dict]:
    """Mean utilisation per group, weighted by GPU-seconds, over jobs that reported one (the
    plain mean where they used no GPU-seconds)."""
    qs = _scoped(Job.objects.filter(utilisation_mean__isnull=False).filter(scope.live), project_ids)
    weighted = ExpressionWrapper(
        F("utilisation_mean") * F("gpu_seconds"), output_field=FloatField()
    )
    # (group, source) -> [jobs, weighted sum, GPU-seconds, sum of the plain means]
    cells: dict[tuple, list] = {
        k: list(v) for k, v in (rolled or {}).get("utilisation", {}).items()
    }
    rows = list(
        qs.annotate(g=F(names.key))
        .values("g", "utilisation_source")
        .annotate(
            jobs=Count("id"),
            weighted=Sum(weighted),
            seconds=Sum("gpu_seconds"),
            plain=Sum("utilisation_mean"),
        )
    )
    names.name(r["g"] for r in rows)
    for r in rows:
        old = cells.setdefault((names.of(r["g"]), r["utilisation_source"]), [0, 0.0, 0, 0.0])
        for i, key in enumerate(("jobs", "weighted", "seconds", "plain")):
            old[i] += r[key] or 0
    return [
        {
            "group": group or "-",
            "source": source,
            "jobs": n,
            "mean_percent": (w / seconds) if seconds else plain / n,
        }
        for (group, source), (n, w, seconds, plain) in sorted(
            cells.items(), key=lambda item: (str(item[0][0]), item[0][1])
        )
    ]


def hours_by_unit(project_ids, seconds: dict[int, int]) -> tuple[dict[str, float], str]:
    """The charged hours by unit (GPU-hours, CPU-hours: each facility's, allocations/units.py)
    from the report's charged seconds per facility, and the word the hours columns take: the
    one unit, or "Hours (GPU or CPU)" when both are in the report. Before anything is charged,
    the units of the report's allocations' facilities (0 of each). One or two queries, and the
    facilities' node types."""
    facilities = Facility.objects.filter(pk__in=seconds)
    if not seconds:
        facilities = _scoped(Facility.objects.all(), project_ids, "allocations__").filter(
            allocations__isnull=False
        )
    facilities = facilities.distinct().prefetch_related("node_types")
    units: dict[str, float] = {}
    for facility in facilities:
        hours = facility.unit.hours
        units[hours] = units.get(hours, 0.0) + seconds.get(facility.pk, 0) / 3600
    used = sorted(units, key=lambda unit: unit != "GPU-hours")
    word = used[0] if len(used) == 1 else ("Hours (GPU or CPU)" if used else "GPU-hours")
    return {unit: units[unit] for unit in used}, word


def usage_report(
    user,
    *,
    group_by: str = "project",
    period: str = "month",
    since: dt.date | None = None,
    limit: int | None = None,
    figures: Collection[str] = FIGURES,
) -> Report:
    """The whole report for what `user` may see. Raises NoReport (404) if nothing.

    With `limit` (the page: settings.PORTAL_REPORT_PAGE_GROUPS), the rows, group totals and
    utilisation of the `limit` groups with the most GPU-hours only, and how many more there are
    (`hidden_groups`); the totals, waits, sizes and split stay those of every group. A centre's
    staff report by PI over a year has thousands of groups, 27,000 rows: the page shows 50, the
    CSV and the API every one.

    `figures` names the job figures to read besides the rows, groups and totals: a CSV of one
    table reads its own only (the usage table's none: no p90 wait read over a year's jobs); the
    others stay empty."""
    if group_by not in GROUPS or period not in PERIODS:
        raise ValueError("group_by or period not allowed")
    project_ids = report_project_ids(user)
    scope = job_rollups.job_scope(group_by, period, project_ids, since)
    part = settled.settled_part(group_by, project_ids, scope)
    window = monthly.live_window(project_ids, since, list(part.months))
    names = LiveNames(group_by, _BY_USER, part.names, part.facilities)
    live = _usage_cells(group_by, period, project_ids, since, window, names)
    usage = live.cells
    jobs = _job_cells(period, project_ids, scope, names)
    live_totals = group_totals(usage, jobs)
    # Most GPU-hours first; ties in the order of the groups' names.
    shown, totals, count = ranked(part.totals, part.order, live_totals, limit)
    report = Report(group_by=group_by, period=period, hidden_groups=count - len(shown))
    report.rows = part.rows(shown, usage, jobs)
    report.groups = [_finished(totals[g]) for g in shown]
    report.totals = _finished(grand_total([part.everything, *live_totals.values()]))
    if "wait" in figures:
        report.wait = wait_times(project_ids, scope, part)
    if "sizes" in figures:
        report.sizes = job_sizes(project_ids, scope, part.facts)
    report.split = monthly.split_hours({k: v + part.split[k] for k, v in live.split.items()})
    if "efficiency" in figures:
        report.efficiency = efficiency(project_ids, scope, part.facts, names)
    if report.hidden_groups:
        named = {totals[g]["group"] for g in shown}
        report.efficiency = [e for e in report.efficiency if e["group"] in named]
    report.jobs_rolled_at = scope.rolled_at
    seconds = dict(part.facility_seconds)
    for pk, more in live.facility_seconds.items():
        seconds[pk] = seconds.get(pk, 0) + more
    report.units, report.unit_label = hours_by_unit(project_ids, seconds)
    return report
