"""API shapes: the harness's JSON in, stored results out, recommendation request and answer."""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Q
from rest_framework import serializers

from allocations.models import NodeType
from benchmarks.models import BenchmarkResult, Workload
from benchmarks.recommender import NEEDS, PRECISIONS, SENSITIVITY_TIERS, STRATEGIES
from benchmarks.recommender.validation import LIMITS, SEQUENCE_LIMITS
from core import strict
from core.figure_fields import HoursField, MoneyField

MAX_SOFTWARE_BYTES = 8_000


def _choice(choices: tuple[str, ...], **kwargs: Any) -> serializers.ChoiceField:
    allowed = ", ".join(choices)
    return serializers.ChoiceField(
        choices=choices,
        error_messages={"invalid_choice": f'"{{input}}" is not allowed; allowed: {allowed}.'},
        **kwargs,
    )


class BenchmarkResultInputSerializer(serializers.Serializer):
    """Exactly what `python -m benchmarks.harness run` prints, plus an optional `facility`.

    `workload` is a model name (with `dims`) or a workload key such as densenet121-2d.
    `facility` (slug) is needed only where two facilities have a node type of that name.
    """

    node_type = strict.CharField(max_length=60)
    facility = strict.SlugField(required=False, allow_blank=True)
    workload = strict.CharField(max_length=40)
    dims = strict.IntegerField(min_value=1, max_value=3, required=False)
    image_size = strict.IntegerField(min_value=1, max_value=131_072)
    precision = _choice(PRECISIONS)
    strategy = _choice(STRATEGIES, default="single")
    gpus = strict.IntegerField(min_value=1, max_value=4096, default=1)
    batch_size = strict.IntegerField(min_value=1, max_value=65_536)
    throughput = strict.FloatField(min_value=0, help_text="samples/s over all GPUs (median)")
    throughput_min = strict.FloatField(min_value=0, required=False, allow_null=True)
    throughput_max = strict.FloatField(min_value=0, required=False, allow_null=True)
    repeats = strict.IntegerField(min_value=1, max_value=100_000, default=1)
    peak_memory_gb = strict.FloatField(
        min_value=0, max_value=100_000, required=False, allow_null=True
    )
    # A field named like Field.source: DRF takes declared fields off the class; the
    # stubs see the attribute.
    source = _choice(tuple(BenchmarkResult.Source.values), default="measured")  # type: ignore[assignment]
    citation = strict.CharField(max_length=2000, required=False, allow_blank=True, default="")
    software = serializers.DictField(required=False, default=dict)
    measured_at = serializers.DateTimeField(required=False, allow_null=True)
    notes = strict.CharField(max_length=4000, required=False, allow_blank=True, default="")

    def validate_throughput(self, value: float) -> float:
        if value <= 0:
            raise serializers.ValidationError("Must be greater than 0 samples/s.")
        return value

    def validate_software(self, value: dict) -> dict:
        if len(json.dumps(value)) > MAX_SOFTWARE_BYTES:
            raise serializers.ValidationError(f"At most {MAX_SOFTWARE_BYTES} bytes of JSON.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        errors: dict[str, list[str]] = {}
        attrs["node_type"] = self._node_type(attrs, errors)
        attrs["workload"] = self._workload(attrs, errors)
        if errors:
            raise serializers.ValidationError(errors)
        attrs.pop("facility", None)
        attrs.pop("dims", None)
        return attrs

    @staticmethod
    def _node_type(attrs: dict[str, Any], errors: dict[str, list[str]]) -> NodeType | None:
        name, slug = attrs["node_type"], attrs.get("facility")
        found = NodeType.objects.filter(name=name).select_related("facility")
        if slug:
            found = found.filter(facility__slug=slug)
        matches = list(found[:20])
        if len(matches) == 1:
            return matches[0]
        if matches:
            where = ", ".join(sorted(m.facility.slug for m in matches))
            errors["facility"] = [f"{name!r} exists at {where}; give the facility slug."]
            return None
        known = sorted(set(NodeType.objects.values_list("name", flat=True)))
        at = f" at {slug!r}" if slug else ""
        errors["node_type"] = [f"Unknown node type {name!r}{at}; known: {', '.join(known)}."]
        return None

    @staticmethod
    def _workload(attrs: dict[str, Any], errors: dict[str, list[str]]) -> Workload | None:
        name, dims = attrs["workload"], attrs.get("dims")
        by_key = Workload.objects.filter(key=name).first()
        if by_key is not None and dims in (None, by_key.dims):
            return by_key
        same_model = list(Workload.objects.filter(Q(model=name)).order_by("dims"))
        chosen = [w for w in same_model if dims is None or w.dims == dims]
        if len(chosen) == 1:
            return chosen[0]
        if same_model:
            allowed = ", ".join(str(w.dims) for w in same_model)
            errors["dims"] = [f"{name} is known with dims {allowed}."]
            return None
        models = sorted(set(Workload.objects.values_list("model", flat=True)))
        errors["workload"] = [f"Unknown workload {name!r}; known models: {', '.join(models)}."]
        return None


class BenchmarkResultSerializer(strict.ModelSerializer):
    """A stored result, with names instead of ids."""

    node_type = strict.CharField(source="node_type.name")
    facility = strict.CharField(source="node_type.facility.slug")
    accelerator = strict.CharField(source="node_type.accelerator")
    workload = strict.CharField(source="workload.key")
    model = strict.CharField(source="workload.model")
    dims = strict.IntegerField(source="workload.dims")
    submitted_by = strict.CharField(source="submitted_by.username", default=None, allow_null=True)

    class Meta:
        model = BenchmarkResult
        fields = [
            "id",
            "node_type",
            "facility",
            "accelerator",
            "workload",
            "model",
            "dims",
            "image_size",
            "precision",
            "strategy",
            "gpus",
            "batch_size",
            "throughput",
            "throughput_min",
            "throughput_max",
            "repeats",
            "peak_memory_gb",
            "source",
            "citation",
            "software",
            "measured_at",
            "submitted_by",
            "notes",
            "created_at",
        ]
        read_only_fields = fields


def _bounded(name: str, integer: bool = True, **kwargs: Any) -> serializers.Field:
    """A number with the range `parse_request` enforces (LIMITS), so the schema says it too."""
    lo, hi = LIMITS[name]
    if integer:  # the integer names have whole-number limits
        return strict.IntegerField(min_value=int(lo), max_value=int(hi), **kwargs)
    return strict.FloatField(min_value=lo, max_value=hi, **kwargs)


class RecommendationRequestSerializer(serializers.Serializer):
    """Documentation of the request body; validation is `benchmarks.recommender.parse_request`
    (one rule set for the API and the page), whose 400s list the allowed values. The ranges and
    choices here are read from the same constants; which `dims` a model has depends on the
    stored workloads (a 400 names them)."""

    model = strict.CharField(
        help_text="densenet121, densenet169, resnet18, resnet50, "
        "gpt2, gpt2-m, gpt2-l, gpt2-xl, gpt2-xxl, gpt2-xxxl"
    )
    dims = strict.IntegerField(
        min_value=1, max_value=3, help_text="1 for GPT (sequences), 2 slices, 3 volumes"
    )
    image_size = strict.IntegerField(
        required=False,
        min_value=0,
        max_value=SEQUENCE_LIMITS[1],
        help_text="pixels per side or tokens (0: default)",
    )
    dataset_samples = _bounded("dataset_samples")
    epochs = _bounded("epochs", integer=False)
    precision = serializers.ChoiceField(PRECISIONS)
    gpus = _bounded("gpus")
    batch_size = _bounded("batch_size", help_text="per GPU")
    data_sensitivity = serializers.ChoiceField(SENSITIVITY_TIERS)
    budget = _bounded("budget", integer=False, required=False, help_text="USD")
    deadline_hours = _bounded("deadline_hours", integer=False, required=False)
    needs = serializers.ListField(child=serializers.ChoiceField(NEEDS), required=False)
    strategy = serializers.ChoiceField(
        ("auto", *STRATEGIES), required=False, help_text="auto (default)"
    )


class RecommendationResultSerializer(serializers.Serializer):
    """One ranked option (documentation of the answer)."""

    rank = strict.IntegerField()
    facility = strict.CharField()
    node_type = strict.CharField()
    fits_memory = serializers.BooleanField()
    eligible = serializers.BooleanField()
    predicted_hours = strict.FloatField(allow_null=True)
    gpu_hours = strict.FloatField(allow_null=True)
    cost = MoneyField(allow_null=True, help_text="Money as a decimal string")
    cost_on_demand = MoneyField(
        allow_null=True, help_text="The same at the on-demand price (cloud; else as `cost`)"
    )
    confidence = strict.CharField()
    reasons = serializers.ListField(child=strict.CharField())
    request_url = strict.CharField()
    request_gpu_hours = HoursField(
        allow_null=True, help_text="The whole GPU-hours `request_url` asks for"
    )


class RecommendationAnswerSerializer(serializers.Serializer):
    results = RecommendationResultSerializer(many=True)
    pareto = serializers.ListField(child=serializers.DictField())
    request = serializers.DictField()
