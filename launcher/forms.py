"""The browser's launch form (on the allocation page). Field rules are the API's: the values are
run through the same `TrainParams` serializer, whose messages land on the matching fields."""
from __future__ import annotations

from typing import Any

from django import forms

from . import bundles, sweepgrid
from .api.serializers import TrainParams


class LaunchForm(forms.Form):
    model = forms.ChoiceField(choices=[(m, m) for m in sweepgrid.MODELS], initial="densenet121")
    dataset = forms.CharField(initial="synthetic-ct", max_length=260,
                              help_text=f"{' or '.join(bundles.SYNTHETIC)}, or an absolute path on the cluster.")
    epochs = forms.IntegerField(initial=10)
    gpus = forms.IntegerField(label="GPUs", initial=1, min_value=1, max_value=64)
    wall_time_minutes = forms.IntegerField(label="Wall time (minutes)", initial=60, min_value=1,
                                           max_value=7 * 24 * 60)
    lr = forms.FloatField(label="Learning rate", required=False)
    batch_size = forms.IntegerField(required=False)

    PARAMS = ("model", "dataset", "epochs", "lr", "batch_size")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        raw = {k: data[k] for k in self.PARAMS if data.get(k) not in (None, "")}
        checked = TrainParams(data=raw)
        if not checked.is_valid():
            for field, messages in checked.errors.items():
                target = field if field in self.fields else None
                for message in messages if isinstance(messages, list) else [messages]:
                    self.add_error(target, str(message))
        else:
            data["params"] = dict(checked.validated_data)
        return data
