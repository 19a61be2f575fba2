"""Input and output shapes of the jobs and sweeps API. Input is validated per field (400); the
fields, bounds and cross-field rules come from launcher/params.py, the one home the browser
forms and the launch services read too."""
from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from allocations.api import strict as serializers

from allocations.models import Allocation

from .. import params as P
from .. import sweepgrid
from ..estimates import default_wall_time
from ..models import Job, Sweep

# A dataset reference: a synthetic set, or one of the project's datasets by id or name (the
# service looks it up and resolves its path). Never a path: nothing with a slash gets here.
_REF_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")


def _dataset(value: str) -> str:
    if value in P.SYNTHETIC or _REF_RE.match(value):
        return value
    raise serializers.ValidationError(
        f"Name one of the project's datasets (by id or name) or {' or '.join(P.SYNTHETIC)};"
        " paths are not accepted.")


def param_field(name: str, **kwargs: Any) -> serializers.Field:
    """The DRF field for one train parameter of launcher/params.py (bounds included)."""
    spec = P.PARAMS[name]
    kwargs.setdefault("required", False)
    if spec.help:
        kwargs.setdefault("help_text", spec.help)
    if spec.choices:
        return serializers.ChoiceField(choices=list(spec.choices), **kwargs)
    if spec.kind is bool:
        return serializers.BooleanField(**kwargs)
    if spec.kind is str:
        return serializers.CharField(max_length=40, **kwargs)
    field = serializers.IntegerField if spec.kind is int else serializers.FloatField
    return field(min_value=spec.low, max_value=spec.high, **kwargs)


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

    dataset = serializers.CharField(default=P.DEFAULT_JOB["dataset"], validators=[_dataset],
                                    help_text="synthetic-ct, synthetic-xray, or an absolute path on the cluster.")
    wall_time_minutes = serializers.IntegerField(
        min_value=P.WALL_TIME_MINUTES[0], max_value=P.WALL_TIME_MINUTES[1], required=False,
        help_text="Accepted here too for scripts; the top-level field wins.")

    def get_fields(self):
        fields = super().get_fields()
        for name, spec in P.PARAMS.items():
            if spec.job:
                fields[name] = param_field(name)
        return fields

    def validate(self, attrs):
        return P.with_defaults(attrs)


class FixedParams(serializers.Serializer):
    """Train arguments shared by every cell of a sweep (sweepgrid.FIXED_ALLOWED)."""

    def get_fields(self):
        return {name: param_field(name) for name in sweepgrid.FIXED_ALLOWED}


class GridAxes(serializers.Serializer):
    """An explicit grid: every combination of the lists, times `folds` (one training run each)."""

    models = serializers.ListField(child=serializers.ChoiceField(choices=list(sweepgrid.MODELS)),
                                   min_length=1)
    lrs = serializers.ListField(child=serializers.FloatField(
        min_value=P.PARAMS["lr"].low, max_value=P.PARAMS["lr"].high), min_length=1)
    lr_steps = serializers.ListField(child=serializers.IntegerField(
        min_value=P.PARAMS["lr_step"].low, max_value=P.PARAMS["lr_step"].high), min_length=1)
    weight_decays = serializers.ListField(child=serializers.FloatField(
        min_value=P.PARAMS["weight_decay"].low, max_value=P.PARAMS["weight_decay"].high),
        min_length=1)
    folds = serializers.IntegerField(min_value=P.PARAMS["folds"].low,
                                     max_value=P.PARAMS["folds"].high, default=1)
    fixed = FixedParams(required=False)


class GridPreset(serializers.Serializer):
    """A named grid (`claire`: 4 DenseNets x 3 lrs x 3 steps x 3 weight decays x 5 folds = 540
    runs); any of the explicit grid's fields given beside it override the preset's."""

    preset = serializers.ChoiceField(choices=list(sweepgrid.PRESETS))

    def get_fields(self):
        fields = {"preset": super().get_fields()["preset"]}
        for name, field in GridAxes().get_fields().items():
            field.required = False
            if name == "folds":
                field.default = serializers.empty
            fields[name] = field
        return fields


_GRID_SCHEMA = PolymorphicProxySerializer(component_name="SweepGrid", serializers=[GridAxes, GridPreset],
                                          resource_type_field_name=None)


@extend_schema_field(_GRID_SCHEMA)
class SweepGrid(serializers.Field):
    """The grid, checked by the matching shape's serializer (per-field messages) and then by
    sweepgrid.validate (repeats, the cell limit)."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("Give an object: the grid's lists, or {\"preset\": \"claire\"}.")
        shape = GridPreset if "preset" in data else GridAxes
        checked = shape(data=data)
        if not checked.is_valid():
            raise serializers.ValidationError(checked.errors)
        try:
            sweepgrid.validate(data)
        except sweepgrid.GridError as error:
            field, _, message = str(error).partition(": ")
            if field in GridAxes().fields and message:
                raise serializers.ValidationError({field: [message]}) from None
            raise serializers.ValidationError(str(error)) from None
        return dict(data)

    def to_representation(self, value):
        return value


class _AllocationScoped(serializers.Serializer):
    allocation = serializers.PrimaryKeyRelatedField(queryset=Allocation.objects.none())  # scoped in the view
    gpus = serializers.IntegerField(min_value=P.GPUS[0], max_value=P.GPUS[1], default=P.DEFAULT_GPUS)
    wall_time_minutes = serializers.IntegerField(
        min_value=P.WALL_TIME_MINUTES[0], max_value=P.WALL_TIME_MINUTES[1], required=False,
        help_text=f"Per run; default: the predicted run time x {P.WALL_TIME_MARGIN}, at least "
                  f"{P.WALL_TIME_FLOOR_MINUTES} min ({P.DEFAULT_WALL_TIME_MINUTES} without a "
                  "prediction). The launch reserves this limit x GPUs; the run is stopped there.")

    def __init__(self, *args, allocations=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["allocation"].queryset = allocations if allocations is not None else Allocation.objects.none()

    def _wall_time(self, attrs):
        params = dict(attrs.get("params") or {})
        attrs["wall_time_minutes"] = (attrs.get("wall_time_minutes") or params.pop("wall_time_minutes", None)
                                      or self._predicted_minutes(attrs, params))
        params.pop("wall_time_minutes", None)
        attrs["params"] = params
        return attrs

    @staticmethod
    def _predicted_minutes(attrs, params) -> int:
        """No wall time given: the prediction with its margin (P.WALL_TIME_MARGIN)."""
        return default_wall_time(allocation=attrs.get("allocation"), params=_first_cell(attrs, params),
                                 gpus=attrs.get("gpus") or P.DEFAULT_GPUS).minutes


def _first_cell(attrs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    """What one run of this launch trains: the job's params, or a sweep's first cell."""
    grid = attrs.get("grid")
    if grid is None or attrs.get("workload", "sweep") != "sweep":
        return P.with_defaults(params)
    grid = sweepgrid.PRESETS.get(grid.get("preset"), grid) if "preset" in grid else grid
    models = grid.get("models") or [P.DEFAULT_JOB["model"]]
    return {**P.DEFAULT_SWEEP_PARAMS, **params, **(grid.get("fixed") or {}), "model": models[0],
            "folds": grid.get("folds", 1)}


class SweepParams(TrainParams):
    """A sweep's shared parameters: the data, and any train argument the grid does not set."""

    def validate(self, attrs):
        return attrs  # combinations are checked with the grid, in SweepInput.validate


class SweepInput(_AllocationScoped):
    """POST sweeps/: a grid of training runs against an allocation."""

    grid = SweepGrid()
    params = SweepParams(required=False, default=dict)
    concurrency = serializers.IntegerField(min_value=P.CONCURRENCY[0], max_value=P.CONCURRENCY[1],
                                           default=P.DEFAULT_CONCURRENCY,
                                           help_text="How many cells may run at once.")
    name = serializers.CharField(max_length=120, required=False, default="", allow_blank=True)

    def validate(self, attrs):
        return _validate_sweep(self._wall_time(attrs))


def _validate_sweep(attrs: dict[str, Any]) -> dict[str, Any]:
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
    concurrency = serializers.IntegerField(min_value=P.CONCURRENCY[0], max_value=P.CONCURRENCY[1],
                                           default=P.DEFAULT_CONCURRENCY)
    name = serializers.CharField(max_length=120, required=False, default="", allow_blank=True)

    def validate(self, attrs):
        if attrs["workload"] == "sweep":
            if "grid" not in attrs:
                raise serializers.ValidationError({"grid": "A sweep needs a grid (or {\"preset\": \"claire\"})."})
            return _validate_sweep(self._wall_time(attrs))
        attrs = self._wall_time(attrs)
        attrs["params"] = P.with_defaults(attrs["params"])
        errors = P.combination_errors(attrs["params"], gpus=attrs["gpus"])
        if errors:
            raise serializers.ValidationError({"params": _errors_to_fields(errors)})
        return attrs


class SweepEstimateOut(serializers.Serializer):
    cells = serializers.IntegerField()
    per_cell_gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=3)
    total_gpu_hours = serializers.DecimalField(max_digits=14, decimal_places=3)
    total_cost = serializers.DecimalField(max_digits=14, decimal_places=4)
    currency = serializers.CharField()
    source = serializers.CharField(help_text="measured, recommender or wall-time")
    basis = serializers.CharField()
    remaining_gpu_hours = serializers.DecimalField(max_digits=14, decimal_places=3)
    fits = serializers.BooleanField()


class JobEstimateOut(serializers.Serializer):
    gpu_hours = serializers.DecimalField(max_digits=12, decimal_places=3)
    cost = serializers.DecimalField(max_digits=14, decimal_places=4)
    currency = serializers.CharField()
    source = serializers.CharField(help_text="measured, recommender or wall-time")
    basis = serializers.CharField()
    predicted_hours = serializers.DecimalField(max_digits=14, decimal_places=6, allow_null=True,
                                               help_text="One run's predicted wall hours, if any")
    remaining_gpu_hours = serializers.DecimalField(max_digits=14, decimal_places=3)
    fits = serializers.BooleanField()


# The recommender's prediction at launch (launcher/estimates.py), beside the estimate.
PREDICTION_FIELDS = ["estimate_basis", "estimate_confidence", "estimate_neighbour",
                     "predicted_hours", "predicted_images_per_s"]


class JobOut(serializers.ModelSerializer):
    percent = serializers.FloatField(read_only=True)
    images_per_s = serializers.FloatField(
        read_only=True, allow_null=True,
        help_text="Measured throughput: images trained per second of training steps, all ranks "
                  "(validation and start-up not counted); the whole run's once it has ended, "
                  "the running figure before; null until reported.")
    state_label = serializers.CharField(source="get_state_display", read_only=True)
    is_final = serializers.BooleanField(read_only=True)
    url = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = ["id", "allocation", "sweep", "workload", "params", "gpus", "wall_time_minutes",
                  "estimate_gpu_hours", "estimate_cost", "estimate_source", "state", "state_label",
                  "is_final", "state_reason", "scheduler_id", "array_index", "exit_code", "progress",
                  "percent", "images_per_s", "metrics", "gpu_seconds", "created_at", "submitted_at", "started_at",
                  "finished_at", "url", *PREDICTION_FIELDS]

    def get_url(self, job: Job) -> str:
        return f"/jobs/{job.pk}/"


class JobListOut(JobOut):
    class Meta(JobOut.Meta):
        fields = [f for f in JobOut.Meta.fields if f not in ("metrics", "progress")]


class SweepOut(serializers.ModelSerializer):
    grid = serializers.JSONField(help_text="The grid as launched (see SweepGrid).")
    url = serializers.SerializerMethodField()

    class Meta:
        model = Sweep
        fields = ["id", "allocation", "name", "grid", "params", "size", "gpus",
                  "wall_time_minutes", "concurrency", "scheduler_id", "estimate_gpu_hours",
                  "estimate_cost", "sort_by", "created_at", "url"]

    def get_url(self, sweep: Sweep) -> str:
        return f"/sweeps/{sweep.pk}/"



class SweepDetailOut(SweepOut):
    """sweeps/{id}/: the sweep with its cells counted by state and its leaderboard."""

    counts = serializers.DictField(child=serializers.IntegerField(), read_only=True)
    leaderboard = serializers.ListField(child=serializers.DictField(), read_only=True)

    class Meta(SweepOut.Meta):
        fields = [*SweepOut.Meta.fields, "counts", "leaderboard"]


class SweepCancelOut(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    cancelled = serializers.IntegerField(read_only=True, help_text="How many cells were cancelled")


class JobLogOut(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    state = serializers.ChoiceField(choices=Job.State.choices, read_only=True)
    log = serializers.CharField(read_only=True, help_text="The tail of the job's log")
