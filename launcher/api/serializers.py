"""Input and output shapes of the jobs and sweeps API. Input is validated per field (400); the
fields, bounds and cross-field rules come from launcher/params.py, the one home the browser
forms and the launch services read too."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, cast

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from allocations.models import Allocation
from core import strict
from core.bounds import ID_MAX, ID_MIN
from core.figure_fields import HoursField, MoneyField

from .. import params as P
from .. import sweepgrid
from ..estimates import gpus_refusal
from ..heartbeat import last_beat, queue_notice
from ..models import Job, Sweep
from ..placement.rank import PREFER
from .fields import AUTO, AllocationOrAuto
from .grid import SweepGrid, param_field
from .placement_out import PlacementOut, placement_json

# A dataset reference: a synthetic set, or one of the project's datasets by id or name (the
# service looks it up and resolves its path). Never a path: nothing with a slash gets here.
_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


def _dataset(value: str) -> None:
    if value in P.SYNTHETIC or _REF_RE.match(value):
        return
    raise serializers.ValidationError(
        f"Name one of the project's datasets (by id or name) or {' or '.join(P.SYNTHETIC)};"
        " paths are not accepted."
    )


def _errors_to_fields(errors: dict[str, str]) -> dict[str, Any]:
    """ParamsError keys (`name` or `fixed.name`) as a nested DRF error dict."""
    out: dict[str, Any] = {}
    for key, message in errors.items():
        head, _, tail = key.partition(".")
        if tail:
            out.setdefault(head, {})[tail] = [message]
        else:
            out[head] = [message]
    return out


class TrainParams(serializers.Serializer):
    """`ctxray train` parameters (docs/workload.md). Omitted ones take the default job's values
    (launcher/params.py DEFAULT_JOB) or, beyond those, the trainer's own defaults."""

    dataset = strict.CharField(
        default=P.DEFAULT_JOB["dataset"],
        validators=[_dataset],
        help_text="synthetic-ct, synthetic-xray, or an absolute path on the cluster.",
    )
    wall_time_minutes = strict.IntegerField(
        min_value=P.WALL_TIME_MINUTES[0],
        max_value=P.WALL_TIME_MINUTES[1],
        required=False,
        help_text="Accepted here too for scripts; the top-level field wins.",
    )

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = super().get_fields()
        for name, spec in P.PARAMS.items():
            if spec.job:
                fields[name] = param_field(name)
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return P.with_defaults(attrs)


class _AllocationScoped(serializers.Serializer):
    allocation = AllocationOrAuto(queryset=Allocation.objects.none())  # scoped in the view
    prefer = serializers.ChoiceField(
        choices=list(PREFER),
        default="finish",
        help_text='With "allocation": "auto": the earliest predicted finish, or the lowest cost.',
    )
    project = strict.IntegerField(
        min_value=ID_MIN,
        max_value=ID_MAX,
        required=False,
        help_text='With "allocation": "auto": only this project\'s allocations.',
    )
    gpus = strict.IntegerField(min_value=P.GPUS[0], max_value=P.GPUS[1], default=P.DEFAULT_GPUS)
    wall_time_minutes = strict.IntegerField(
        min_value=P.WALL_TIME_MINUTES[0],
        max_value=P.WALL_TIME_MINUTES[1],
        required=False,
        help_text=f"Per run; default: the predicted run time x {P.WALL_TIME_MARGIN}, at least "
        f"{P.WALL_TIME_FLOOR_MINUTES} min ({P.DEFAULT_WALL_TIME_MINUTES} without a "
        "prediction). The launch reserves this limit x GPUs; the run is stopped there.",
    )

    def __init__(
        self, *args: Any, allocations: QuerySet[Allocation] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        if "allocation" not in self.fields:
            return  # POST placements/: every allocation of the caller's is a candidate
        field = cast(strict.PrimaryKeyRelatedField, self.fields["allocation"])
        # drf-stubs give RelatedField.queryset a Manager type, whose __get__ mypy then applies.
        field.queryset = Allocation.objects.none() if allocations is None else allocations  # type: ignore[arg-type]

    def _placed(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """`project` only goes with "auto" (a named allocation has its own project)."""
        if "project" in attrs and attrs.get("allocation", AUTO) != AUTO:
            raise serializers.ValidationError(
                {"project": 'Only with "allocation": "auto" (a named allocation has its project).'}
            )
        return attrs

    def _wall_time(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The wall time given at the top or in `params` (the top-level one wins), else None:
        the launch service predicts it (launcher/services/launch.py)."""
        params = dict(attrs.get("params") or {})
        attrs["wall_time_minutes"] = attrs.get("wall_time_minutes") or params.pop(
            "wall_time_minutes", None
        )
        params.pop("wall_time_minutes", None)
        attrs["params"] = params
        return attrs


class SweepParams(TrainParams):
    """A sweep's shared parameters: the data, and any train argument the grid does not set."""

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return attrs  # combinations are checked with the grid, in SweepInput.validate


class SweepInput(_AllocationScoped):
    """POST sweeps/: a grid of training runs against an allocation."""

    grid = SweepGrid()
    params = SweepParams(required=False, default=dict)
    concurrency = strict.IntegerField(
        min_value=P.CONCURRENCY[0],
        max_value=P.CONCURRENCY[1],
        default=P.DEFAULT_CONCURRENCY,
        help_text="How many cells may run at once.",
    )
    name = strict.CharField(max_length=120, required=False, default="", allow_blank=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return _validate_sweep(self._wall_time(self._placed(attrs)))


def _check_gpus(attrs: dict[str, Any]) -> None:
    """More GPUs than the named allocation's facility can run is said first, on `gpus`, in the
    facility's terms: the rules below that divide by the GPU count (training images per GPU
    against the batch size) would otherwise blame the batch size for 64 GPUs on a workstation.
    The launch service checks it again (`check_gpus_fit`), as placement does for "auto"."""
    allocation = attrs.get("allocation")
    if isinstance(allocation, Allocation):
        refusal = gpus_refusal(allocation.facility, attrs["gpus"])
        if refusal:
            raise serializers.ValidationError({"gpus": [refusal]})


def _validate_sweep(attrs: dict[str, Any]) -> dict[str, Any]:
    _check_gpus(attrs)
    if attrs["params"].get("dataset", P.DEFAULT_JOB["dataset"]) in P.SYNTHETIC:
        attrs["params"] = {**P.DEFAULT_SWEEP_PARAMS, **attrs["params"]}
    spec = sweepgrid.validate(attrs["grid"])
    try:
        P.check_sweep(attrs["params"], spec, gpus=attrs["gpus"])
    except P.ParamsError as error:  # in the serializer's own errors, beside the other fields'
        raise serializers.ValidationError(error.body()) from None
    return attrs


class LaunchInput(_AllocationScoped):
    """POST jobs/: a training job, or (workload "sweep") a grid of them, as POST sweeps/ takes."""

    workload = serializers.ChoiceField(choices=["ctxray-train", "sweep"], default="ctxray-train")
    params = TrainParams(default=dict)
    grid = SweepGrid(required=False)
    concurrency = strict.IntegerField(
        min_value=P.CONCURRENCY[0], max_value=P.CONCURRENCY[1], default=P.DEFAULT_CONCURRENCY
    )
    name = strict.CharField(max_length=120, required=False, default="", allow_blank=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = self._placed(attrs)
        if attrs["workload"] == "sweep":
            if "grid" not in attrs:
                raise serializers.ValidationError(
                    {"grid": 'A sweep needs a grid (or {"preset": "claire"}).'}
                )
            return _validate_sweep(self._wall_time(attrs))
        attrs = self._wall_time(attrs)
        _check_gpus(attrs)
        attrs["params"] = P.with_defaults(attrs["params"])
        errors = P.combination_errors(attrs["params"], gpus=attrs["gpus"])
        if errors:
            raise serializers.ValidationError({"params": _errors_to_fields(errors)})
        return attrs


class SweepEstimateOut(serializers.Serializer):
    """Hours are numbers, money decimal strings (core/figure_fields.py)."""

    cells = strict.IntegerField()
    per_cell_gpu_hours = HoursField()
    total_gpu_hours = HoursField()
    total_cost = MoneyField()
    currency = strict.CharField()
    # A field named like Field.source: DRF takes declared fields off the class; the
    # stubs see the attribute.
    source = strict.CharField(help_text="measured, recommender or wall-time")  # type: ignore[assignment]
    basis = strict.CharField()
    remaining_gpu_hours = HoursField(help_text="The allocation's GPU-hours left, exact")
    fits = serializers.BooleanField(
        help_text="Whether what launching reserves fits what is left: the whole grid, or for a "
        "staged sweep (early stopping, a search) its first `concurrency` cells"
    )
    staged = serializers.BooleanField()
    expected_gpu_hours = HoursField(
        allow_null=True,
        help_text="With early stopping: the rung schedule's expected case (total_gpu_hours is "
        "the worst case, every cell to its last epoch)",
    )
    expected_basis = strict.CharField(allow_blank=True)


class JobEstimateOut(serializers.Serializer):
    """Hours are numbers, money decimal strings (core/figure_fields.py)."""

    gpu_hours = HoursField()
    cost = MoneyField()
    currency = strict.CharField()
    # A field named like Field.source: DRF takes declared fields off the class; the
    # stubs see the attribute.
    source = strict.CharField(help_text="measured, recommender or wall-time")  # type: ignore[assignment]
    basis = strict.CharField()
    predicted_hours = HoursField(
        allow_null=True, help_text="One run's predicted wall hours, if any"
    )
    remaining_gpu_hours = HoursField(help_text="The allocation's GPU-hours left, exact")
    fits = serializers.BooleanField()


# The recommender's prediction at launch (launcher/estimates.py), beside the estimate.
PREDICTION_FIELDS = [
    "estimate_basis",
    "estimate_confidence",
    "estimate_neighbour",
    "predicted_hours",
    "predicted_images_per_s",
]


# Placement (docs/placement.md): the ranking the launch chose from ("allocation": "auto"), and
# the predicted wait (launch to start) and finish beside the real started_at and finished_at.
PLACEMENT_FIELDS = ["placement", "predicted_wait_seconds", "predicted_finish_at"]


class JobOut(strict.ModelSerializer):
    # Hours are numbers (the held value, unrounded), money decimal strings: core/figure_fields.py.
    estimate_gpu_hours = HoursField(read_only=True, help_text="What the launch reserved")
    predicted_hours = HoursField(
        read_only=True, allow_null=True, help_text="One run's predicted wall hours, if any"
    )
    placement = serializers.SerializerMethodField(
        help_text='With "allocation": "auto": the ranking the launch chose from (the shape '
        "POST placements/ answers); else null."
    )
    percent = strict.FloatField(read_only=True)
    images_per_s = strict.FloatField(
        read_only=True,
        allow_null=True,
        help_text="Measured throughput: images trained per second of training steps, all ranks "
        "(validation and start-up not counted); the whole run's once it has ended, "
        "the running figure before; null until reported.",
    )
    state_label = strict.CharField(source="get_state_display", read_only=True)
    is_final = serializers.BooleanField(read_only=True)
    url = serializers.SerializerMethodField()
    queue_notice = serializers.SerializerMethodField(
        help_text="Null, or (while the job is `queued` past a minute and no background worker "
        "has been seen for a while) a sentence saying the task queue is not being "
        "served, so the job waits there until a worker runs again."
    )

    class Meta:
        model = Job
        fields = [
            "id",
            "allocation",
            "sweep",
            "workload",
            "params",
            "gpus",
            "wall_time_minutes",
            "estimate_gpu_hours",
            "estimate_cost",
            "estimate_source",
            "state",
            "state_label",
            "is_final",
            "state_reason",
            "scheduler_id",
            "array_index",
            "stopped_at_epoch",
            "rung",
            "exit_code",
            "progress",
            "percent",
            "images_per_s",
            "metrics",
            "gpu_seconds",
            "created_at",
            "submitted_at",
            "started_at",
            "finished_at",
            "url",
            "queue_notice",
            *PREDICTION_FIELDS,
            *PLACEMENT_FIELDS,
        ]

    def get_url(self, job: Job) -> str:
        return f"/jobs/{job.pk}/"

    @extend_schema_field(PlacementOut(allow_null=True))
    def get_placement(self, job: Job) -> dict[str, Any] | None:
        return placement_json(job.placement)

    def get_queue_notice(self, job: Job) -> str | None:
        return queue_notice(job, seen=self._last_beat)

    def _last_beat(self) -> dt.datetime | None:
        """The worker's last heartbeat, read at most once per response (a list shares it)."""
        context = cast(dict[str, Any], self.context)  # the serializer's own dict (stubs: Mapping)
        if "worker_last_beat" not in context:
            context["worker_last_beat"] = last_beat()
        return context["worker_last_beat"]


class JobListOut(JobOut):
    class Meta(JobOut.Meta):
        fields = [f for f in JobOut.Meta.fields if f not in ("metrics", "progress", "placement")]


class SweepOut(strict.ModelSerializer):
    estimate_gpu_hours = HoursField(read_only=True)
    expected_gpu_hours = HoursField(
        read_only=True,
        allow_null=True,
        help_text="With early stopping: the rung schedule's expected case",
    )
    grid = serializers.JSONField(help_text="The grid as launched (see SweepGrid).")
    url = serializers.SerializerMethodField()

    class Meta:
        model = Sweep
        fields = [
            "id",
            "allocation",
            "name",
            "grid",
            "params",
            "size",
            "gpus",
            "wall_time_minutes",
            "concurrency",
            "scheduler_id",
            "estimate_gpu_hours",
            "estimate_cost",
            "expected_gpu_hours",
            "staged",
            "sort_by",
            "created_at",
            "url",
        ]

    def get_url(self, sweep: Sweep) -> str:
        return f"/sweeps/{sweep.pk}/"


class SweepDetailOut(SweepOut):
    """sweeps/{id}/: the sweep with its cells counted by state and its leaderboard."""

    counts = serializers.DictField(child=strict.IntegerField(), read_only=True)
    leaderboard = serializers.ListField(child=serializers.DictField(), read_only=True)
    schedule = serializers.DictField(
        read_only=True,
        allow_null=True,
        help_text="Early stopping (null without): the rungs, each configuration's furthest rung "
        "and why it stopped, GPU-hours charged and the estimated GPU-hours saved "
        "(docs/sweeps.md).",
    )

    finished = serializers.BooleanField(
        read_only=True,
        help_text="Every cell is final and no more will come (a staged sweep may end below its "
        "size: configurations stopped early, a search's budget spent)",
    )

    class Meta(SweepOut.Meta):
        fields = [*SweepOut.Meta.fields, "counts", "leaderboard", "schedule", "finished"]


class SweepCancelOut(serializers.Serializer):
    id = strict.IntegerField(read_only=True)
    cancelled = strict.IntegerField(read_only=True, help_text="How many cells were cancelled")


class JobLogOut(serializers.Serializer):
    id = strict.IntegerField(read_only=True)
    state = serializers.ChoiceField(choices=Job.State.choices, read_only=True)
    log = strict.CharField(read_only=True, help_text="The tail of the job's log")
