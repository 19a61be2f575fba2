"""One allocation's answer (`Option`) and their ranking, with the reasons in words (pure).

`prefer="finish"`: the earliest predicted finish first; options finishing within TIE_SECONDS of
the earliest one left count as a tie, and the cheaper of them goes first (a minute is below
what the predictions can tell apart). `prefer="cost"`: the cheapest first (predicted charge),
the earliest finish breaking ties. Ineligible options come last, unranked, each with why.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from .interval import RunTime
from .wait import Wait
from .words import clock_text, duration_text, money_text, wait_text

PREFER = ("finish", "cost")
TIE_SECONDS = 60.0


@dataclass(frozen=True)
class Option:
    """Where the job could go: one allocation, eligible (`refusals` empty) or not, with the
    predicted run, wait and charge. `runs` runs in `waves` rounds (a sweep's cells, as many at
    once as the facility runs); `interruption_delay` is the expected time lost to spot
    interruptions (rate x the time to a replacement worker)."""

    allocation_id: int
    project: str
    facility: str
    facility_name: str
    kind: str
    label: str
    refusals: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    run: RunTime | None = None
    wait: Wait | None = None
    wall_time_minutes: int = 0
    runs: int = 1
    waves: int = 1
    gpu_hours: Decimal = Decimal(0)
    cost: Decimal = Decimal(0)
    reserve_gpu_hours: Decimal = Decimal(0)
    reserve_cost: Decimal = Decimal(0)
    left_gpu_hours: Decimal | None = None
    left_budget: Decimal | None = None
    currency: str = "USD"
    interruption_rate: float | None = None
    interruption_delay: float = 0.0

    @property
    def eligible(self) -> bool:
        return not self.refusals and self.run is not None and self.wait is not None

    @property
    def finish_seconds(self) -> float | None:
        """Seconds from now to the predicted end of the last run (None when ineligible)."""
        if not self.eligible or self.run is None or self.wait is None:
            return None
        return self.wait.seconds + self.waves * self.run.seconds + self.interruption_delay


@dataclass(frozen=True)
class Ranked:
    """The options in order, each eligible one with its rank and the reason for its place."""

    prefer: str
    now: dt.datetime
    options: tuple[Option, ...]
    why: dict[int, str] = field(default_factory=dict)

    @property
    def chosen(self) -> Option | None:
        first = self.options[0] if self.options else None
        return first if first is not None and first.eligible else None

    def rank_of(self, option: Option) -> int | None:
        if not option.eligible:
            return None
        return self.options.index(option) + 1

    def finish_at(self, option: Option) -> dt.datetime | None:
        seconds = option.finish_seconds
        return None if seconds is None else self.now + dt.timedelta(seconds=seconds)

    def start_at(self, option: Option) -> dt.datetime | None:
        if not option.eligible or option.wait is None:
            return None
        return self.now + dt.timedelta(seconds=option.wait.seconds)


def _by_finish(options: list[Option]) -> list[Option]:
    left = sorted(options, key=lambda o: (o.finish_seconds or 0.0, o.cost, o.label))
    ordered: list[Option] = []
    while left:
        earliest = left[0].finish_seconds or 0.0
        tied = [o for o in left if (o.finish_seconds or 0.0) - earliest < TIE_SECONDS]
        pick = min(tied, key=lambda o: (o.cost, o.finish_seconds or 0.0, o.label))
        ordered.append(pick)
        left.remove(pick)
    return ordered


def rank(options: Sequence[Option], *, prefer: str, now: dt.datetime) -> Ranked:
    """The options ranked by `prefer` (PREFER), ineligible ones after, with a reason each."""
    if prefer not in PREFER:
        raise ValueError(f"prefer is one of {PREFER}")
    eligible = [o for o in options if o.eligible]
    others = sorted((o for o in options if not o.eligible), key=lambda o: o.label)
    if prefer == "finish":
        ordered = _by_finish(eligible)
    else:
        ordered = sorted(eligible, key=lambda o: (o.cost, o.finish_seconds or 0.0, o.label))
    ranked = Ranked(prefer=prefer, now=now, options=(*ordered, *others))
    for option in ranked.options:
        ranked.why[option.allocation_id] = _why(ranked, option)
    return ranked


def _facts(ranked: Ranked, option: Option) -> str:
    run, wait = option.run, option.wait
    assert run is not None and wait is not None
    finish = ranked.finish_at(option)
    assert finish is not None
    rounds = f"{option.waves} rounds of " if option.waves > 1 else ""
    span = (
        f" ({duration_text(run.low)}-{duration_text(run.high)})"
        if run.low is not None and run.high is not None
        else ""
    )
    return (
        f"finish predicted {clock_text(finish, ranked.now)}: {wait_text(wait.seconds)} "
        f"({wait.basis}), then runs {rounds}about {duration_text(run.seconds)}{span}; "
        f"{option.gpu_hours} GPU-hours, {money_text(option.cost, option.currency)}"
    )


def _why(ranked: Ranked, option: Option) -> str:
    if not option.eligible:
        return "Not eligible: " + "; ".join(option.refusals) + "."
    first = ranked.options[0]
    facts = _facts(ranked, option)
    if option is first:
        lead = "Cheapest" if ranked.prefer == "cost" else "Finishes first"
        return f"{lead}: {facts}."
    later = (option.finish_seconds or 0.0) - (first.finish_seconds or 0.0)
    dearer = option.cost - first.cost
    if ranked.prefer == "finish" and later < TIE_SECONDS:
        return f"Finishes about when {first.label} does, which costs less: {facts}."
    if ranked.prefer == "finish":
        extra = f" for {money_text(-dearer, option.currency)} less" if dearer < 0 else ""
        return f"Finishes {duration_text(later)} after {first.label}{extra}: {facts}."
    if dearer == 0:
        return f"Costs the same as {first.label} and finishes later: {facts}."
    sooner = f", finishing {duration_text(-later)} sooner" if later < 0 else ""
    return f"Costs {money_text(dearer, option.currency)} more than {first.label}{sooner}: {facts}."


def summary(ranked: Ranked) -> str:
    """One sentence for the job's page: where it went, when it should finish, and each
    alternative with what kept it second ("placed on local-slurm: finish predicted 14:02;
    baskerville 15:30 (queue 1 h 10 min); aws-spot 14:20 but $3.10")."""
    chosen = ranked.chosen
    if chosen is None:
        return "No allocation could take it."
    finish = ranked.finish_at(chosen)
    assert finish is not None and chosen.wait is not None and chosen.run is not None
    parts = [f"placed on {chosen.label}: finish predicted {clock_text(finish, ranked.now)}"]
    for option in ranked.options[1:]:
        if not option.eligible:
            parts.append(f"{option.label} not eligible ({option.refusals[0]})")
            continue
        assert option.wait is not None and option.run is not None
        at = ranked.finish_at(option)
        assert at is not None
        text = f"{option.label} {clock_text(at, ranked.now)}"
        if (option.finish_seconds or 0.0) < (chosen.finish_seconds or 0.0) + TIE_SECONDS and (
            option.cost > chosen.cost
        ):
            text += f" but {money_text(option.cost, option.currency)}"
        elif option.wait.seconds - chosen.wait.seconds >= TIE_SECONDS:
            text += f" (queue {duration_text(option.wait.seconds)})"
        elif option.run.seconds - chosen.run.seconds >= TIE_SECONDS:
            text += f" (runs {duration_text(option.waves * option.run.seconds)})"
        parts.append(text)
    return "; ".join(parts)
