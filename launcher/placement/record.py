"""A ranking as JSON (pure): what POST placements/ answers and what a placed job keeps in
`Job.placement`, one shape for both (docs/placement.md)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from .rank import Option, Ranked, summary


def _money(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def _hours(value: Decimal | None) -> float | None:
    """Hours as the API writes them: a number, unrounded (core/figure_fields.py)."""
    return None if value is None else float(value)


def option_record(ranked: Ranked, option: Option) -> dict[str, Any]:
    """One allocation's verdict: eligible or the refusals, the predicted run (with its
    interval), wait, start and finish, the charge, what would be left, and why it ranks there."""
    run, wait = option.run, option.wait
    start, finish = ranked.start_at(option), ranked.finish_at(option)
    return {
        "allocation": option.allocation_id,
        "project": option.project,
        "facility": option.facility,
        "facility_name": option.facility_name,
        "kind": option.kind,
        "label": option.label,
        "eligible": option.eligible,
        "rank": ranked.rank_of(option),
        "reason": ranked.why.get(option.allocation_id, ""),
        "refusals": list(option.refusals),
        "notes": list(option.notes),
        "run": None
        if run is None
        else {
            "seconds": round(run.seconds, 1),
            "low_seconds": None if run.low is None else round(run.low, 1),
            "high_seconds": None if run.high is None else round(run.high, 1),
            "source": run.source,
            "basis": run.basis,
        },
        "wait": None
        if wait is None or not option.eligible
        else {
            "seconds": round(wait.seconds, 1),
            "source": wait.source,
            "basis": wait.basis,
            "backlog": wait.backlog,
            "raw_seconds": round(wait.uncorrected, 1),
        },
        "start_at": None if start is None else start.isoformat(),
        "finish_at": None if finish is None else finish.isoformat(),
        "wall_time_minutes": option.wall_time_minutes,
        "runs": option.runs,
        "rounds": option.waves,
        "gpu_hours": _hours(option.gpu_hours),
        "cost": _money(option.cost),
        "reserve_gpu_hours": _hours(option.reserve_gpu_hours),
        "reserve_cost": _money(option.reserve_cost),
        "left_gpu_hours": _hours(option.left_gpu_hours),
        "left_budget": _money(option.left_budget),
        "currency": option.currency,
        "interruption_rate": option.interruption_rate,
    }


def placement_record(ranked: Ranked) -> dict[str, Any]:
    """The whole ranking at this moment: `prefer`, when, the chosen allocation (None when none
    can take it), the sentence, and every option in rank order (ineligible ones last)."""
    chosen = ranked.chosen
    return {
        "prefer": ranked.prefer,
        "at": ranked.now.isoformat(),
        "chosen": None if chosen is None else chosen.allocation_id,
        "summary": summary(ranked),
        "options": [option_record(ranked, option) for option in ranked.options],
    }
