"""The dashboard's rows: fetched by prepared statements and rendered in Python.

With 20 allocations, 20 requests and a PI's projects, the template engine's per-row work
(variable lookups, 60 URL reversals, filter calls, autoescape) was about three quarters of a
dashboard request, and the ORM's building, compiling and model instantiation most of the rest
(docs/performance.md). The rows are read as plain tuples by statements compiled once
(`allocations/prepared.py`), with the ledger from its own compiled statement, and rendered with
`escape` on every value people typed and the same formats the template used (`amount`,
`floatformat:0`, `intcomma`, `date:"d M Y"`, `age`), with one URL reversal per table.
tests/portal/test_dashboard_rows.py checks the markup against the template filters.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

from django.urls import reverse
from django.utils.dates import MONTHS_3
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from allocations.ledger_query import ledger_figures
from allocations.models import Allocation, AllocationRequest, Project
from allocations.prepared import Statement

from .templatetags.portal_tags import age, amount

PROJECTS = Statement(lambda p: Project.objects.filter(pk__in=p.ids("projects")).order_by("code")
                     .values_list("pk", "code", "title", "research_area", "pi_name")[:50])
REQUESTS = Statement(lambda p: AllocationRequest.objects.filter(project_id__in=p.ids("projects"))
                     .order_by("-created_at", "-id")
                     .values_list("pk", "project__code", "kind", "facility__name", "gpu_hours",
                                  "granted_gpu_hours", "status", "updated_at")[:20])
ALLOCATIONS = Statement(lambda p: Allocation.objects.filter(project_id__in=p.ids("projects"))
                        .order_by("-created_at", "-id")
                        .values_list("pk", "project__code", "kind", "facility__name", "status",
                                     "gpu_hours", "end_date")[:20])

REQUEST_KINDS = dict(AllocationRequest.Kind.choices)
REQUEST_STATUSES = dict(AllocationRequest.Status.choices)
ALLOCATION_STATUSES = dict(Allocation.Status.choices)


class Tables(NamedTuple):
    projects: SafeString
    requests: SafeString
    allocations: SafeString
    counts: dict[str, int]


def _url_maker(name: str) -> Callable[[int], str]:
    """The URL of object `pk` for a route whose last segment is the id, reversed once."""
    sample = reverse(name, args=[0])
    head, sep, tail = sample.rpartition("/0/")
    if not sep:
        return lambda pk: reverse(name, args=[pk])
    return lambda pk: f"{head}/{pk}/{tail}"


def _grouped(value) -> str:
    """`intcomma`: thousands separated by commas (en-gb, the portal's language)."""
    return f"{value:,}"


def _whole(value: Decimal) -> str:
    """`floatformat:0`: rounded half up to a whole number."""
    return str(Decimal(value).quantize(Decimal(1), ROUND_HALF_UP))


def _date(value) -> str:
    """`date:"d M Y"`, e.g. `05 Jan 2027`."""
    return f"{value.day:02d} {MONTHS_3[value.month].title()} {value.year}"


def allocation_rows(rows: Iterable[tuple]) -> SafeString:
    """Rows of `ALLOCATIONS`, each with the ledger's GPU-hours used (never rounded to zero)."""
    rows = list(rows)
    figures = ledger_figures(row[0] for row in rows)
    url = _url_maker("allocation-detail")
    out = []
    for pk, code, kind, facility, status, granted, end_date in rows:
        used = Decimal(figures[pk]["gpu_seconds_used"]) / 3600
        out.append(
            f'\n      <tr>\n'
            f'        <td><a href="{url(pk)}">#{pk} {escape(code)}</a> '
            f'<span class="muted">{escape(kind)}</span></td>\n'
            f'        <td>{escape(facility)}</td>\n'
            f'        <td><span class="status status-{escape(status)}">'
            f'{escape(ALLOCATION_STATUSES.get(status, status))}</span></td>\n'
            f'        <td class="wide"><div class="usage"><progress max="{"%f" % granted}" '
            f'value="{"%f" % used}" aria-label="GPU-hours used"></progress>\n'
            f'          <span class="usage-text">{amount(used)} used · {_whole(granted)} '
            f'granted</span></div></td>\n'
            f'        <td>{_date(end_date)}</td>\n'
            f'      </tr>')
    return mark_safe("".join(out))  # nosec B308 B703 # every value above is escaped or ours


def _hours_asked(gpu_hours: int, granted: int | None) -> str:
    if granted is not None:
        return f'{_grouped(granted)} <span class="muted">of {_grouped(gpu_hours)}</span>'
    return _grouped(gpu_hours)


def request_rows(rows: Iterable[tuple]) -> SafeString:
    """Rows of `REQUESTS`."""
    url = _url_maker("request-detail")
    out = []
    for pk, code, kind, facility, gpu_hours, granted, status, updated_at in rows:
        out.append(
            f'\n      <tr>\n'
            f'        <td><a href="{url(pk)}">#{pk} {escape(code)}</a> '
            f'<span class="muted">{escape(str(REQUEST_KINDS.get(kind, kind)).lower())}</span></td>\n'
            f'        <td>{escape(facility)}</td>\n'
            f'        <td class="num">{_hours_asked(gpu_hours, granted)}</td>\n'
            f'        <td><span class="status status-{escape(status)}">'
            f'{escape(REQUEST_STATUSES.get(status, status))}</span></td>\n'
            f'        <td>{age(updated_at)} ago</td>\n'
            f'      </tr>')
    return mark_safe("".join(out))  # nosec B308 B703 # every value above is escaped or ours


def project_items(rows: Iterable[tuple]) -> SafeString:
    """Items of `PROJECTS`."""
    url = _url_maker("project-detail")
    return mark_safe("".join(  # nosec B308 B703 # every value is escaped
        f'<li><a href="{url(pk)}"><strong>{escape(code)}</strong></a> {escape(title)} '
        f'<span class="muted">· {escape(area)} · PI {escape(pi_name)}</span></li>'
        for pk, code, title, area, pi_name in rows))


def tables(project_ids: list[int]) -> Tables:
    """The dashboard's three tables for a member of `project_ids`: four queries whatever the
    number of rows (projects, requests, allocations, the allocations' ledger)."""
    if not project_ids:
        return Tables(SafeString(), SafeString(), SafeString(),
                      {"projects": 0, "requests": 0, "allocations": 0})
    projects = PROJECTS.run(projects=project_ids)
    requests = REQUESTS.run(projects=project_ids)
    allocations = ALLOCATIONS.run(projects=project_ids)
    return Tables(project_items(projects), request_rows(requests), allocation_rows(allocations),
                  {"projects": len(projects), "requests": len(requests),
                   "allocations": len(allocations)})
