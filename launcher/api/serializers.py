"""Input and output shapes of the jobs and sweeps API. Input is validated per field (400)."""
from __future__ import annotations

import re

from rest_framework import serializers

from allocations.models import Allocation

from .. import bundles, sweepgrid
from ..models import Job, Sweep

# A cluster-side dataset path: absolute, plain characters only (it reaches the job as JSON and
# argv, never a shell, but a clear refusal beats a confusing failure on the node).
_PATH_RE = re.compile(r"^/[A-Za-z0-9._/-]{1,250}$")


def _dataset(value: str) -> str:
    if value in bundles.SYNTHETIC or _PATH_RE.match(value):
        return value
    raise serializers.ValidationError(
        f"Use {', '.join(bundles.SYNTHETIC)} or an absolute path on the cluster.")


class TrainParams(serializers.Serializer):
    """`ctxray train` parameters (docs/workload.md)."""

    model = serializers.ChoiceField(choices=sweepgrid.MODELS, default="densenet121")
    epochs = serializers.IntegerField(min_value=1, max_value=500, default=10)
    dataset = serializers.CharField(default="synthetic-ct", validators=[_dataset])
    synthetic_n = serializers.IntegerField(min_value=8, max_value=5000, required=False)
    size = serializers.IntegerField(min_value=16, max_value=512, required=False)
    dims = serializers.ChoiceField(choices=[2, 3], required=False)
    lr = serializers.FloatField(min_value=1e-7, max_value=1.0, required=False)
    lr_step = serializers.IntegerField(min_value=1, max_value=500, required=False)
    weight_decay = serializers.FloatField(min_value=0, max_value=0.99, required=False)
    batch_size = serializers.IntegerField(min_value=1, max_value=4096, required=False)
    patience = serializers.IntegerField(min_value=1, max_value=500, required=False)
    folds = serializers.IntegerField(min_value=1, max_value=20, required=False)
    fold = serializers.IntegerField(min_value=0, max_value=19, required=False)
    seed = serializers.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    threads = serializers.IntegerField(min_value=1, max_value=256, required=False)
    bootstrap = serializers.IntegerField(min_value=10, max_value=10000, required=False)
    progress_every = serializers.IntegerField(min_value=1, max_value=10000, required=False)
    deterministic = serializers.BooleanField(required=False)
    augment = serializers.BooleanField(required=False)
    wall_time_minutes = serializers.IntegerField(min_value=1, max_value=7 * 24 * 60, required=False)

    def validate(self, attrs):
        if "fold" in attrs and attrs["fold"] >= attrs.get("folds", 1):
            raise serializers.ValidationError({"fold": "Must be below folds."})
        return attrs


class SweepGrid(serializers.JSONField):
    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            sweepgrid.validate(value)
        except sweepgrid.GridError as error:
            raise serializers.ValidationError(str(error)) from None
        return value


class LaunchInput(serializers.Serializer):
    """POST jobs/: a training job, or (workload "sweep") a grid of them."""

    allocation = serializers.PrimaryKeyRelatedField(queryset=Allocation.objects.none())  # scoped in the view
    workload = serializers.ChoiceField(choices=["ctxray-train", "sweep"], default="ctxray-train")
    gpus = serializers.IntegerField(min_value=1, max_value=64, default=1)
    wall_time_minutes = serializers.IntegerField(min_value=1, max_value=7 * 24 * 60, required=False)
    params = TrainParams(default=dict)
    grid = SweepGrid(required=False)
    concurrency = serializers.IntegerField(min_value=1, max_value=1000, default=4)
    name = serializers.CharField(max_length=120, required=False, default="")

    def __init__(self, *args, allocations=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["allocation"].queryset = allocations

    def validate(self, attrs):
        if attrs["workload"] == "sweep" and "grid" not in attrs:
            raise serializers.ValidationError({"grid": "A sweep needs a grid (or {\"preset\": \"claire\"})."})
        params = dict(attrs["params"])
        attrs["wall_time_minutes"] = attrs.get("wall_time_minutes") or params.pop(
            "wall_time_minutes", 60)
        params.pop("wall_time_minutes", None)
        attrs["params"] = params
        return attrs


class JobOut(serializers.ModelSerializer):
    percent = serializers.FloatField(read_only=True)
    state_label = serializers.CharField(source="get_state_display", read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = ["id", "allocation", "sweep", "workload", "params", "gpus", "wall_time_minutes",
                  "estimate_gpu_hours", "estimate_cost", "estimate_source", "state", "state_label",
                  "state_reason", "scheduler_id", "array_index", "exit_code", "progress", "percent",
                  "metrics", "gpu_seconds", "created_at", "submitted_at", "started_at",
                  "finished_at", "url"]

    def get_url(self, job: Job) -> str:
        return f"/jobs/{job.pk}/"


class JobListOut(JobOut):
    class Meta(JobOut.Meta):
        fields = [f for f in JobOut.Meta.fields if f not in ("metrics", "progress")]


class SweepOut(serializers.ModelSerializer):
    class Meta:
        model = Sweep
        fields = ["id", "allocation", "name", "grid", "params", "size", "gpus",
                  "wall_time_minutes", "concurrency", "scheduler_id", "estimate_gpu_hours",
                  "estimate_cost", "sort_by", "created_at"]
