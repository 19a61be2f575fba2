"""Output shapes of placement (docs/placement.md): POST placements/, GET
placements/calibration/, and a placed job's `placement` (the same shape as POST's answer,
kept at launch)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from core import strict
from core.figure_fields import HoursField, MoneyField
from core.figures import money_text

# An option's figures: hours as numbers, money as decimal strings (core/figure_fields.py).
HOURS = ("gpu_hours", "reserve_gpu_hours", "left_gpu_hours")
MONEY = ("cost", "reserve_cost", "left_budget")


def _money(help_text: str, *, allow_null: bool = False) -> serializers.DecimalField:
    return MoneyField(max_digits=20, allow_null=allow_null, help_text=help_text)


def placement_json(record: dict[str, Any] | None) -> dict[str, Any] | None:
    """A job's kept placement as the API writes it: its options' hours as numbers and money as
    decimal strings, whatever form the record was kept in (before issue 39, hours were kept as
    strings; a kept record is never rewritten)."""
    if record is None:
        return None
    options = []
    for option in record.get("options") or []:
        fixed = dict(option)
        fixed.update({k: float(fixed[k]) for k in HOURS if fixed.get(k) is not None})
        fixed.update({k: money_text(fixed[k]) for k in MONEY if fixed.get(k) is not None})
        options.append(fixed)
    return {**record, "options": options}


class PlacementRunOut(serializers.Serializer):
    seconds = serializers.FloatField(help_text="One run's predicted seconds (calibrated)")
    low_seconds = serializers.FloatField(allow_null=True, help_text="Its interval's low end")
    high_seconds = serializers.FloatField(allow_null=True, help_text="Its interval's high end")
    source = strict.CharField(help_text="measured, recommender or wall-time")  # type: ignore[assignment]
    basis = strict.CharField()


class PlacementWaitOut(serializers.Serializer):
    seconds = serializers.FloatField(help_text="Predicted seconds from now until it starts")
    source = strict.CharField(  # type: ignore[assignment]
        help_text="backend (the scheduler's own estimate, a cloud's time to a ready worker), "
        "slots (the facility's slots and queue), history (its recent waits) or none"
    )
    basis = strict.CharField()
    backlog = strict.IntegerField(allow_null=True, help_text="Jobs waiting ahead, when known")
    raw_seconds = serializers.FloatField(
        help_text="The source's own estimate before it was corrected by the facility's "
        "past real / predicted waits (equal to seconds when it was not)"
    )


class PlacementOptionOut(serializers.Serializer):
    allocation = strict.IntegerField()
    project = strict.CharField()
    facility = strict.CharField(help_text="The facility's slug")
    facility_name = strict.CharField()
    kind = strict.CharField()
    # A field named like Field.label: DRF takes declared fields off the class; the stubs see
    # the attribute.
    label = strict.CharField(help_text="How the sentences name it")  # type: ignore[assignment]
    eligible = serializers.BooleanField()
    rank = strict.IntegerField(allow_null=True, help_text="1 = chosen; null when not eligible")
    reason = strict.CharField(help_text="Why it ranks here, or why it is not eligible")
    refusals = serializers.ListField(child=strict.CharField(), help_text="Why not, each")
    notes = serializers.ListField(child=strict.CharField())
    run = PlacementRunOut(allow_null=True)
    wait = PlacementWaitOut(allow_null=True)
    start_at = serializers.DateTimeField(allow_null=True)
    finish_at = serializers.DateTimeField(allow_null=True)
    wall_time_minutes = strict.IntegerField()
    runs = strict.IntegerField()
    rounds = strict.IntegerField(help_text="A sweep's rounds of runs at once")
    gpu_hours = HoursField(help_text="GPU-hours it would be charged (predicted)")
    cost = _money("What it would be charged, in `currency` (predicted)")
    reserve_gpu_hours = HoursField(help_text="What the launch reserves: wall time x GPUs x runs")
    reserve_cost = _money("The reservation in money")
    left_gpu_hours = HoursField(
        allow_null=True, help_text="GPU-hours left after the predicted charge"
    )
    left_budget = _money("Money left after the predicted charge (budgets only)", allow_null=True)
    currency = strict.CharField()
    interruption_rate = serializers.FloatField(
        allow_null=True, help_text="Share of recent spot workers interrupted (cloud)"
    )


class PlacementOut(serializers.Serializer):
    prefer = strict.CharField()
    at = serializers.DateTimeField(help_text="When it was placed")
    chosen = strict.IntegerField(allow_null=True, help_text="The first-ranked allocation")
    summary = strict.CharField(help_text="The placement in one sentence")
    options = PlacementOptionOut(many=True)


class PlacementErrorOut(serializers.Serializer):
    facility = strict.CharField()
    jobs = strict.IntegerField(help_text="Placed jobs that started")
    wait_median = serializers.FloatField(help_text="Median |predicted - real| wait, seconds")
    wait_p90 = serializers.FloatField(help_text="90th percentile of |predicted - real| wait")
    wait_bias = serializers.FloatField(help_text="Median predicted - real wait (> 0: too long)")
    finished = strict.IntegerField(help_text="Of them, how many have finished")
    finish_median = serializers.FloatField(allow_null=True)
    finish_p90 = serializers.FloatField(allow_null=True)


class PlacementCalibrationOut(serializers.Serializer):
    facilities = PlacementErrorOut(many=True)
    basis = strict.CharField()
