"""The train parameters and the sweep grid as the API takes them: one DRF field per parameter
of launcher/params.py (its bounds included), the grid's two shapes (lists of values or ranges,
or a preset) with early stopping and search, checked per field and then by sweepgrid.validate.
launcher/api/serializers.py builds the launch inputs from these."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer, extend_schema_field
from rest_framework import serializers

from core import strict

from .. import params as P
from .. import sweepgrid
from ..search import spec as search_spec

__all__ = ["GridAxes", "GridPreset", "SweepGrid", "param_field"]


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
        return strict.CharField(max_length=40, **kwargs)
    if spec.kind is int:
        return strict.IntegerField(min_value=spec.int_low, max_value=spec.int_high, **kwargs)
    return strict.FloatField(min_value=spec.low, max_value=spec.high, **kwargs)


class FixedParams(serializers.Serializer):
    """Train arguments shared by every cell of a sweep (sweepgrid.FIXED_ALLOWED)."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {name: param_field(name) for name in sweepgrid.FIXED_ALLOWED}


class EarlyStoppingIn(serializers.Serializer):
    """Asynchronous successive halving (docs/sweeps.md): rungs at min_epochs x eta^k epochs;
    a configuration outside the top 1/eta of those that reached a rung stops on every fold."""

    method = serializers.ChoiceField(choices=list(search_spec.METHODS), default="asha")
    eta = strict.IntegerField(
        min_value=search_spec.ETA_RANGE[0], max_value=search_spec.ETA_RANGE[1], default=3
    )
    min_epochs = strict.IntegerField(min_value=1, max_value=500, default=1)


class SearchIn(serializers.Serializer):
    """How configurations are chosen: every grid point, or `trials` drawn at random or by TPE
    (Optuna), within an optional GPU-hour budget of the search's own."""

    strategy = serializers.ChoiceField(choices=list(search_spec.STRATEGIES), default="grid")
    trials = strict.IntegerField(min_value=1, max_value=sweepgrid.MAX_CELLS, required=False)
    seed = strict.IntegerField(min_value=0, max_value=search_spec.MAX_SEED, default=0)
    gpu_hours = strict.FloatField(min_value=0.001, max_value=1e9, required=False)


class RangeIn(serializers.Serializer):
    """A random or TPE search's range of one axis, sampled uniformly (or log-uniformly)."""

    min = strict.FloatField(min_value=0)
    max = strict.FloatField(min_value=0)
    log = serializers.BooleanField(default=False)


def _axis(name: str, *, integer: bool) -> serializers.Field:
    """A grid axis: a list of values within the parameter's bounds, or (a random or TPE
    search) a range {"min", "max", "log"}. The two shapes are disjoint in the schema."""
    bound = P.PARAMS[name]
    assert bound.low is not None and bound.high is not None  # every axis is bounded
    low: float = float(bound.low)
    high: float = float(bound.high)
    item: dict[str, Any] = {
        "type": "integer" if integer else "number",
        "minimum": int(low) if integer else low,
        "maximum": int(high) if integer else high,
    }

    def child() -> serializers.Field:  # a fresh one per list: DRF binds a child to its parent
        if integer:
            return strict.IntegerField(min_value=int(low), max_value=int(high))
        return strict.FloatField(min_value=low, max_value=high)

    @extend_schema_field(
        {
            "anyOf": [  # disjoint (an array, an object): anyOf says the same, cheaper to check
                {"type": "array", "items": item, "minItems": 1},
                {
                    "type": "object",
                    "properties": {
                        "min": item,
                        "max": item,
                        "log": {"type": "boolean", "default": False},
                    },
                    "required": ["min", "max"],
                },
            ]
        }
    )
    class Axis(serializers.Field):
        def to_internal_value(self, data: Any) -> Any:
            if isinstance(data, dict):
                checked = RangeIn(data=data)
                if not checked.is_valid():
                    raise serializers.ValidationError(checked.errors)
                return dict(data)
            return serializers.ListField(child=child(), min_length=1).run_validation(data)

        def to_representation(self, value: Any) -> Any:
            return value

    return Axis(help_text="A list, or for a random or TPE search a range {min, max, log}.")


class GridAxes(serializers.Serializer):
    """An explicit grid (every combination of the lists, times `folds`), or with `search` a
    random or TPE search over lists and ranges (`search.trials` configurations x `folds`)."""

    models = serializers.ListField(
        child=serializers.ChoiceField(choices=list(sweepgrid.MODELS)), min_length=1
    )
    lrs = _axis("lr", integer=False)
    lr_steps = _axis("lr_step", integer=True)
    weight_decays = _axis("weight_decay", integer=False)
    folds = strict.IntegerField(
        min_value=P.PARAMS["folds"].int_low, max_value=P.PARAMS["folds"].int_high, default=1
    )
    fixed = FixedParams(required=False)
    early_stopping = EarlyStoppingIn(required=False)
    search = SearchIn(required=False)


class GridPreset(serializers.Serializer):
    """A named grid (`claire`: 4 DenseNets x 3 lrs x 3 steps x 3 weight decays x 5 folds = 540
    runs); any of the explicit grid's fields given beside it override the preset's."""

    preset = serializers.ChoiceField(choices=list(sweepgrid.PRESETS))

    def get_fields(self) -> dict[str, serializers.Field]:
        fields = {"preset": super().get_fields()["preset"]}
        for name, field in GridAxes().get_fields().items():
            field.required = False
            if name == "folds":
                field.default = serializers.empty
            fields[name] = field
        return fields


_GRID_SCHEMA = PolymorphicProxySerializer(
    component_name="SweepGrid", serializers=[GridAxes, GridPreset], resource_type_field_name=None
)


def _shape(data: dict[str, Any]) -> type[serializers.Serializer]:
    return GridPreset if "preset" in data else GridAxes


@extend_schema_field(_GRID_SCHEMA)
class SweepGrid(serializers.Field):
    """The grid, checked by the matching shape's serializer (per-field messages) and then by
    sweepgrid.validate (repeats, the cell limit)."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise serializers.ValidationError(
                'Give an object: the grid\'s lists, or {"preset": "claire"}.'
            )
        checked = _shape(data)(data=data)
        if not checked.is_valid():
            raise serializers.ValidationError(checked.errors)
        try:
            sweepgrid.validate(data)
        except sweepgrid.GridError as error:
            field, _, message = str(error).partition(": ")
            head = field.split(".")[0]
            if head in GridAxes().fields and message:
                raise serializers.ValidationError({field: [message]}) from None
            raise serializers.ValidationError(str(error)) from None
        return dict(data)

    def to_representation(self, value: Any) -> Any:
        return value
