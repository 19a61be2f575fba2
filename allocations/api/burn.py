"""The allocation API's `burn_rate` and `runs_out_on` (allocations/burn.py has the definitions):
their shapes for the OpenAPI document, their values, and a list's burns read in one query."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models.manager import BaseManager
from rest_framework import serializers

from core import strict
from core.figure_fields import HoursField, MoneyField
from core.figures import money_text

from ..burn import Burn, allocation_burn, burns_of
from ..models import Allocation

_BURN = "_burn"  # where a list keeps each allocation's burn, on the row


class BurnRateSerializer(serializers.Serializer):
    """Use per day (allocations/burn.py): GPU-hours as numbers (unrounded), money as decimal
    strings (core/figure_fields.py); null before the first whole day, money null without a
    budget."""

    gpu_hours_per_day_7d = HoursField(allow_null=True)
    gpu_hours_per_day_30d = HoursField(allow_null=True)
    cost_per_day_7d = MoneyField(allow_null=True)
    cost_per_day_30d = MoneyField(allow_null=True)
    basis = strict.CharField()


class RunsOutSerializer(serializers.Serializer):
    """When the grant (GPU-hours) and the budget run out at the 7-day rate, remaining = granted
    - charged (reservations not counted); null without a projection (`basis` says why)."""

    gpu_hours = serializers.DateField(allow_null=True)
    budget = serializers.DateField(allow_null=True)
    before_end_date = serializers.BooleanField()
    basis = strict.CharField()


def _hours(value: Decimal | None) -> float | None:
    return None if value is None else float(value)


def _money(value: Decimal | None) -> str | None:
    return None if value is None else money_text(value)


def burn_rate_of(burn: Burn) -> dict[str, Any]:
    return {
        "gpu_hours_per_day_7d": _hours(burn.rate_7d.gpu_hours_per_day),
        "gpu_hours_per_day_30d": _hours(burn.rate_30d.gpu_hours_per_day),
        "cost_per_day_7d": _money(burn.rate_7d.cost_per_day),
        "cost_per_day_30d": _money(burn.rate_30d.cost_per_day),
        "basis": burn.rate_basis,
    }


def runs_out_of(burn: Burn) -> dict[str, Any]:
    hours, budget = burn.runs_out_gpu_hours, burn.runs_out_budget
    return {
        "gpu_hours": hours.isoformat() if hours else None,
        "budget": budget.isoformat() if budget else None,
        "before_end_date": burn.before_end_date,
        "basis": burn.runs_out_basis,
    }


def burn_of_row(allocation: Allocation) -> Burn:
    """The burn a list read for this row, or (one allocation) read now, once."""
    found = getattr(allocation, _BURN, None)
    if found is None:
        found = allocation_burn(allocation)
        setattr(allocation, _BURN, found)
    return found


class AllocationListSerializer(serializers.ListSerializer):
    """A page of allocations: their burns read together (one query), not one per row."""

    def to_representation(self, data: Any) -> list[Any]:
        rows = list(data.all() if isinstance(data, BaseManager) else data)
        burns = burns_of(rows)
        for allocation in rows:
            setattr(allocation, _BURN, burns.get(allocation.pk))
        return super().to_representation(rows)
