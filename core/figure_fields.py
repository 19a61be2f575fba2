"""The API's one type and one rounding rule per kind of figure (docs/api.md, "Figures"), as DRF
fields, so every answer and the OpenAPI document say the same:

- **Hours** (GPU-hours granted, used, reserved, remaining; CPU-hours; a prediction's hours; an
  estimate's; a rate per day): a JSON number (`type: number`), never rounded by the API: the
  value the ledger or the estimate holds, as a float (`HoursField`). Whole-hour amounts a
  person asks for (a request's `gpu_hours`, a facility's caps) are integers, also JSON numbers.
- **Money**: a decimal string (`type: string, format: decimal`), exact: every place its ledger
  column keeps, always that many (`MoneyField`; core.figures.MONEY_PLACES = 4 for charges,
  estimates, rates and balances; a budget as granted keeps its 2, a cloud instance's price its
  5), never a float.
- Seconds are integers where charged (`gpu_seconds`), numbers where predicted.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from . import strict
from .figures import MONEY_PLACES


class HoursField(strict.FloatField):
    """An hours figure: a JSON number, the held value (a Decimal from the ledger or an estimate,
    or a float) unrounded. DRF's DecimalField would quantize it (and write a string)."""

    # The stubs type FloatField's representation as str; DRF's own returns float(value).
    def to_representation(self, value: Any) -> float:  # type: ignore[override]
        return float(value)


def MoneyField(*, places: int = MONEY_PLACES, **kwargs: Any) -> serializers.DecimalField:  # noqa: N802  (a field, named as one)
    """A money figure: a decimal string with exactly `places` places, whatever
    COERCE_DECIMAL_TO_STRING says."""
    return serializers.DecimalField(
        max_digits=kwargs.pop("max_digits", 18),
        decimal_places=places,
        coerce_to_string=True,
        **kwargs,
    )
