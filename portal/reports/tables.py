"""The report's tables, defined once: the page renders them and the CSV export writes them,
so the two always have the same rows and columns. Cells hold exact values; the page rounds
for display only (never to zero), the CSV writes them as they are."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from decimal import Decimal
from html import escape

from django.utils.safestring import SafeString

from core.figures import exact, rounded
from portal.templatetags.portal_tags import shown

from .selectors import Report

GROUP_LABELS = {"pi": "PI", "project": "Project", "facility": "Facility", "user": "User"}
GROUPS_WORD = {"pi": "PIs", "project": "projects", "facility": "facilities", "user": "users"}


def size_word(unit_label: str) -> str:
    """What a job's size counts, for the report's hours: GPUs, CPUs, or both."""
    return {"GPU-hours": "GPUs", "CPU-hours": "CPUs"}.get(unit_label, "GPUs or CPUs")


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    headers: list[str]
    rows: list[list]
    basis: str

    @property
    def body(self) -> SafeString:
        """The page's rows, each cell as `shown` gives it, escaped (the first the row's name,
        the others numbers): built here in one pass, not by the template's loops, which took
        three times as long for a year's 600 rows."""
        return SafeString(  # nosec B703 # every cell's text goes through html.escape below
            "".join(
                f"<tr><td>{escape(shown(row[0]))}</td>"
                + "".join(f'<td class="num">{escape(shown(cell))}</td>' for cell in row[1:])
                + "</tr>"
                for row in self.rows
            )
        )


def tables(report: Report) -> dict[str, Table]:
    label = GROUP_LABELS[report.group_by]
    ledger = (
        "the usage ledger (scheduler, local and cloud records), each record by who "
        'launched the job it charges; "-" is usage of no portal job'
        if report.group_by == "user"
        else "the usage ledger (scheduler and cloud records)"
    )
    result = [
        Table(
            "usage",
            f"{report.unit_label}, cost and jobs by {label.lower()} and {report.period}",
            [
                label,
                report.period.title(),
                report.unit_label,
                "Cost",
                "Jobs",
                "Failed",
                "Short (<1 min)",
            ],
            [
                [
                    r["group"],
                    r["period"].isoformat() if r["period"] else "",
                    r["gpu_hours"],
                    r["cost"],
                    r["jobs"],
                    r["failed"],
                    r["short"],
                ]
                for r in report.rows
            ],
            f"{report.unit_label} and cost from {ledger}; jobs from Job rows, by the {report.period} "
            "they were created (a job cancelled before it started is not counted).",
        ),
        Table(
            "groups",
            f"Totals by {label.lower()}",
            [label, report.unit_label, "Cost", "Jobs", "Short or failed share"],
            [
                [g["group"], g["gpu_hours"], g["cost"], g["jobs"], g["short_or_failed_share"]]
                for g in report.groups
            ],
            "Sums of the table above; the share is the jobs that failed or ran under a minute "
            "(each counted once) over all jobs.",
        ),
        Table(
            "wait",
            "Wait time (submit to start)",
            ["Jobs that started", "Mean (s)", "p90 (s)"],
            # None where the report did not read it (a CSV of another table: usage_report).
            [[report.wait["jobs"], report.wait["mean_seconds"], report.wait["p90_seconds"]]]
            if report.wait
            else [],
            "From each job's submitted and started times; p90 is the nearest-rank 90th percentile.",
        ),
        Table(
            "sizes",
            "Job size distribution",
            [size_word(report.unit_label), "Jobs", report.unit_label],
            [[s["gpus"], s["jobs"], s["gpu_hours"]] for s in report.sizes],
            f"What each job asked for; {report.unit_label} those jobs were charged. Jobs only: "
            f"notebook sessions ({rounded(report.split.get('notebooks', 0.0))} {report.unit_label}) and "
            f"other records ({rounded(report.split.get('other', 0.0))}) are in the totals, not "
            "here.",
        ),
        Table(
            "efficiency",
            f"Utilisation by {label.lower()}",
            [label, "Source", "Jobs reporting", "Mean utilisation (%)"],
            [[e["group"], e["source"], e["jobs"], e["mean_percent"]] for e in report.efficiency],
            "Mean utilisation the trainer sampled (GPU through NVML where a GPU exists, else "
            f"CPU), weighted by each job's {report.unit_label} charged; jobs that reported none are "
            "left out.",
        ),
    ]
    return {t.name: t for t in result}


def _cell(cell: object) -> object:
    """A Decimal as it is stored (every digit, its scale kept: 6.0000); a float to the exact
    decimals core/figures.py gives it; None as empty."""
    if cell is None:
        return ""
    if isinstance(cell, Decimal):
        return f"{cell:f}"
    return exact(cell) if isinstance(cell, float) else cell


_AS_IS = (int, str)


def _cells(row: list) -> list:
    # Ints and strings (most cells of a long table) as they are, without the call.
    return [cell if type(cell) in _AS_IS else _cell(cell) for cell in row]


def to_csv(table: Table) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(table.headers)
    for row in table.rows:
        # Exact decimals (core/figures.py), not float artefacts like 0.05388888888888889.
        writer.writerow(_cells(row))
    return out.getvalue()
