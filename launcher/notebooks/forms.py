"""The "Open a notebook" form (allocation page). Its bounds are the services' own
(services.max_gpus, settings.NOTEBOOK_MAX_HOURS); the service checks them again and its
per-field refusals land on these fields."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, cast

from django import forms
from django.conf import settings

from allocations.models import Allocation

from .services import max_gpus


class NotebookForm(forms.Form):
    gpus = forms.IntegerField(label="GPUs", min_value=0)
    hours = forms.DecimalField(
        label="Hours",
        max_digits=6,
        decimal_places=2,
        min_value=Decimal("0.01"),
        initial=Decimal(2),
        help_text="The session is stopped at this wall limit.",
    )

    def __init__(self, *args: Any, allocation: Allocation, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.allocation = allocation
        top = max_gpus(allocation)
        gpus = cast(forms.IntegerField, self.fields["gpus"])
        gpus.max_value = top
        gpus.initial = 1 if top else 0
        gpus.widget.attrs.update({"min": 1 if top else 0, "max": top})
        unit = allocation.facility.unit  # GPUs, or CPUs where it has no GPUs
        gpus.label = unit.many
        gpus.help_text = f"Up to {top} (one node)." if top else f"No {unit.many} here."
        if unit.is_cpu:
            gpus.help_text += " " + unit.brief
        limit = Decimal(str(settings.NOTEBOOK_MAX_HOURS))
        hours = cast(forms.DecimalField, self.fields["hours"])
        # A DecimalField's bound is a Decimal; the stubs give it IntegerField's int.
        hours.max_value = limit  # type: ignore[assignment]
        hours.widget.attrs.update({"max": str(limit), "step": "0.25"})
        hours.help_text += f" At most {limit.normalize():f} h."
