"""The API's `unit` object: what a facility's hours and `gpus` count (allocations/units.py). The
field names stay `gpu_hours`, `gpu_seconds_used`, `gpus`, ... (the contract); `unit` says whether
they are GPUs or, on a facility without GPUs, CPUs."""

from __future__ import annotations

from rest_framework import serializers

from core import strict


class UnitSerializer(serializers.Serializer):
    key = serializers.ChoiceField(
        choices=["gpu", "cpu"],
        read_only=True,
        help_text='"gpu", or "cpu" on a facility without GPUs: there `gpus` counts CPUs and '
        "the `gpu_*` hours and seconds count CPU-hours and CPU-seconds",
    )
    singular = strict.CharField(source="one", read_only=True, help_text='"GPU" or "CPU"')
    plural = strict.CharField(source="many", read_only=True, help_text='"GPUs" or "CPUs"')
    hours = strict.CharField(read_only=True, help_text='"GPU-hours" or "CPU-hours"')
    seconds = strict.CharField(read_only=True, help_text='"GPU-seconds" or "CPU-seconds"')
    cores_each = strict.IntegerField(
        source="cores",
        read_only=True,
        allow_null=True,
        help_text="CPU cores per CPU (one training process on that many cores), where the "
        "facility's node types agree; null for GPUs",
    )


UNIT_HELP = "What this facility's hours and `gpus` count: GPUs, or CPUs where it has no GPUs"
