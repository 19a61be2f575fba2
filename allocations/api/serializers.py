"""API input and output shapes. Inputs validate types; policy lives in the services."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import strict
from core.bounds import as_id
from core.figure_fields import HoursField, MoneyField

from ..burn import Burn
from ..ledger import Ledger, ledger_of
from ..models import (
    Allocation,
    AllocationRequest,
    Facility,
    NodeType,
    Project,
    ProjectMembership,
    Sensitivity,
)
from ..models.project import project_code_validator
from ..selectors import User, visible_allocations, visible_projects
from ..usernames import CLUSTER_USERNAME_HELP, CLUSTER_USERNAME_PATTERN
from .burn import (
    AllocationListSerializer,
    BurnRateSerializer,
    RunsOutSerializer,
    burn_of_row,
    burn_rate_of,
    runs_out_of,
)
from .units import UNIT_HELP, UnitSerializer

# Money in the API is a decimal string ("12.3400"; OpenAPI: string, format decimal), never a
# float; hours are numbers, unrounded (core/figure_fields.py).
MONEY = MoneyField(read_only=True)
MONEY_OR_NULL = MoneyField(read_only=True, allow_null=True)


class NodeTypeSerializer(strict.ModelSerializer):
    # A figure that is not money is a number (core/figure_fields.py); prices stay decimal strings.
    accelerator_memory_gb = strict.FloatField(read_only=True)

    class Meta:
        model = NodeType
        fields = [
            "id",
            "name",
            "accelerator",
            "accelerator_memory_gb",
            "accelerators_per_node",
            "cpu_cores",
            "memory_gb",
            "interconnect",
            "peak_tflops_fp16",
            "peak_tflops_bf16",
            "peak_tflops_fp32",
            "peak_tflops_fp64",
            "peak_tflops_tf32",
            "device",
            "max_accelerators",
            "launch_date",
            "instance_type",
            "price_on_demand",
            "price_spot",
        ]


class FacilitySerializer(strict.ModelSerializer):
    node_types = NodeTypeSerializer(many=True, read_only=True)
    unit = UnitSerializer(read_only=True, help_text=UNIT_HELP)
    trial_gpu_hours_cap = HoursField(
        read_only=True, help_text="The most GPU-hours a trial may ask for (whole hours)"
    )
    full_gpu_hours_max = HoursField(
        read_only=True, help_text="The most GPU-hours a full request may ask for (whole hours)"
    )
    alert_thresholds = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=100),
        source="thresholds",
        read_only=True,
        help_text="Percent of the granted GPU-hours at which usage alerts go out.",
    )

    class Meta:
        model = Facility
        fields = [
            "slug",
            "name",
            "kind",
            "backend",
            "description",
            "documentation_url",
            "trial_gpu_hours_cap",
            "trial_days",
            "trial_auto_approve",
            "full_gpu_hours_max",
            "latest_end_date",
            "allowed_sensitivity",
            "gpu_hour_rate",
            "offers_notebooks",
            "offers_root",
            "offers_public_web",
            "alert_thresholds",
            "unit",
            "node_types",
        ]


class MemberSerializer(strict.ModelSerializer):
    username = strict.CharField(source="user.username", read_only=True)

    class Meta:
        model = ProjectMembership
        fields = ["username", "role", "cluster_username"]


class ProjectSerializer(strict.ModelSerializer):
    members = MemberSerializer(source="memberships", many=True, read_only=True)
    pi = strict.CharField(source="pi.username", read_only=True)

    class Meta:
        model = Project
        fields = [
            "id",
            "code",
            "title",
            "research_area",
            "pi",
            "pi_name",
            "pi_email",
            "members",
            "created_at",
        ]
        read_only_fields = ["id", "pi", "members", "created_at"]
        # Uniqueness is the service's to check, with a clear message; the format stays here
        # (so the schema carries its pattern).
        extra_kwargs = {
            "code": {"validators": [project_code_validator]},
            "pi_name": {"required": False},
            "pi_email": {"required": False},
        }


class MemberInputSerializer(serializers.Serializer):
    username = strict.CharField(max_length=254, help_text="A username or an email address.")
    role = serializers.ChoiceField(
        choices=ProjectMembership.Role.choices, default=ProjectMembership.Role.MEMBER
    )
    cluster_username = strict.RegexField(
        CLUSTER_USERNAME_PATTERN,
        required=False,
        allow_blank=True,
        default="",
        error_messages={"invalid": CLUSTER_USERNAME_HELP},
    )


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ProjectMembership.Role.choices)


class RequestOutputSerializer(strict.ModelSerializer):
    facility: serializers.SlugRelatedField[Facility] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    node_type = strict.CharField(source="node_type.name", default=None, read_only=True)
    project_code = strict.CharField(source="project.code", read_only=True)
    requested_by = strict.CharField(source="requested_by.username", read_only=True)
    reviewed_by = strict.CharField(source="reviewed_by.username", default=None, read_only=True)
    # Hours are numbers in every answer (core/figure_fields.py); a request asks for whole hours.
    gpu_hours = HoursField(read_only=True, help_text="GPU-hours asked for")
    cpu_hours = HoursField(read_only=True, help_text="CPU-hours asked for")
    granted_gpu_hours = HoursField(
        read_only=True, allow_null=True, help_text="GPU-hours granted (null until approved)"
    )

    class Meta:
        model = AllocationRequest
        fields = [
            "id",
            "project",
            "project_code",
            "facility",
            "node_type",
            "kind",
            "purpose",
            "extends",
            "gpu_hours",
            "cpu_hours",
            "cloud_budget",
            "start_date",
            "end_date",
            "data_sensitivity",
            "justification",
            "status",
            "requested_by",
            "submitted_at",
            "reviewed_by",
            "reviewed_at",
            "decision_comment",
            "granted_gpu_hours",
            "allocation",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class RequestInputSerializer(serializers.Serializer):
    """What a caller may send to create or edit a request. `node_type` is a node type's id or
    its name within the facility."""

    project = strict.PrimaryKeyRelatedField(queryset=Project.objects.none())
    facility = serializers.SlugRelatedField(
        slug_field="slug", queryset=Facility.objects.filter(is_active=True)
    )
    node_type = strict.CharField(required=False, allow_null=True, allow_blank=True)
    kind = serializers.ChoiceField(
        choices=AllocationRequest.Kind.choices, default=AllocationRequest.Kind.FULL
    )
    purpose = serializers.ChoiceField(
        choices=AllocationRequest.Purpose.choices, default=AllocationRequest.Purpose.NEW
    )
    extends = strict.PrimaryKeyRelatedField(
        queryset=Allocation.objects.none(), required=False, allow_null=True
    )
    gpu_hours = strict.IntegerField(min_value=0, max_value=10_000_000)
    cpu_hours = strict.IntegerField(min_value=0, max_value=100_000_000, default=0)
    cloud_budget = serializers.DecimalField(
        max_digits=10, decimal_places=2, min_value=0, required=False, allow_null=True
    )
    start_date = serializers.DateField()
    end_date = serializers.DateField()
    data_sensitivity = serializers.ChoiceField(
        choices=Sensitivity.choices, default=Sensitivity.PUBLIC
    )
    justification = strict.CharField(max_length=10_000)
    submit = serializers.BooleanField(default=False, write_only=True)

    def __init__(self, *args: Any, user: User | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        user = user or AnonymousUser()  # schema generation builds it without a request
        project = cast(strict.PrimaryKeyRelatedField, self.fields["project"])
        extends = cast(strict.PrimaryKeyRelatedField, self.fields["extends"])
        # drf-stubs give RelatedField.queryset a Manager type, whose __get__ mypy then applies.
        project.queryset = visible_projects(user)  # type: ignore[arg-type]
        extends.queryset = visible_allocations(user)  # type: ignore[arg-type]

    def validate_start_date(self, value: dt.date) -> dt.date:
        if self.instance is None and value < timezone.localdate():
            raise serializers.ValidationError("The start date cannot be in the past.")
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        facility = attrs.get("facility") or getattr(self.instance, "facility", None)
        if "node_type" not in attrs and self.partial:
            return attrs
        raw = attrs.get("node_type")
        if raw in (None, ""):
            attrs["node_type"] = None
            return attrs
        choices = NodeType.objects.filter(facility=facility)
        number = as_id(raw)
        found = choices.filter(pk=number).first() if number is not None else None
        found = found or choices.filter(name=raw).first()
        if found is None:
            names = ", ".join(choices.values_list("name", flat=True)) or "none"
            raise serializers.ValidationError(
                {"node_type": [f"No node type {raw!r} on this facility (choose from: {names})."]}
            )
        attrs["node_type"] = found
        return attrs


class CommentSerializer(serializers.Serializer):
    comment = strict.CharField(max_length=5000, allow_blank=True, default="")


class ApproveSerializer(CommentSerializer):
    # 0 is allowed for an extension or closure that asked for no hours; the service checks.
    gpu_hours = strict.IntegerField(min_value=0, required=False, allow_null=True)


_LEDGER = "_ledger"  # where AllocationSerializer keeps an allocation's ledger, on the row


class AllocationSerializer(strict.ModelSerializer):
    """An allocation with its ledger, exact (allocations/ledger.py): charged GPU-seconds as an
    integer; GPU-hours (granted, and derived from seconds) as numbers, unrounded; money to the
    cent-hundredth it is recorded in. `*_remaining` is granted less charged less reserved by
    unfinished work."""

    facility: serializers.SlugRelatedField[Facility] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    node_type = strict.CharField(source="node_type.name", default=None, read_only=True)
    project_code = strict.CharField(source="project.code", read_only=True)
    unit = UnitSerializer(source="facility.unit", read_only=True, help_text=UNIT_HELP)
    gpu_hours = HoursField(
        read_only=True,
        help_text="Granted GPU-hours (CPU-hours where `unit` is CPUs, as for every `gpu_*` "
        "figure here)",
    )
    cpu_hours = HoursField(read_only=True, help_text="Granted CPU-hours")
    gpu_seconds_used = serializers.SerializerMethodField()
    gpu_seconds_reserved = serializers.SerializerMethodField()
    gpu_hours_used = serializers.SerializerMethodField()
    gpu_hours_reserved = serializers.SerializerMethodField()
    gpu_hours_remaining = serializers.SerializerMethodField()
    spend = serializers.SerializerMethodField()
    cost_reserved = serializers.SerializerMethodField()
    budget_remaining = serializers.SerializerMethodField()
    burn_rate = serializers.SerializerMethodField()
    runs_out_on = serializers.SerializerMethodField()

    class Meta:
        model = Allocation
        list_serializer_class = AllocationListSerializer
        fields = [
            "id",
            "project",
            "project_code",
            "facility",
            "node_type",
            "unit",
            "kind",
            "status",
            "status_reason",
            "gpu_hours",
            "gpu_seconds_used",
            "gpu_seconds_reserved",
            "gpu_hours_used",
            "gpu_hours_reserved",
            "gpu_hours_remaining",
            "cpu_hours",
            "budget",
            "spend",
            "cost_reserved",
            "budget_remaining",
            "burn_rate",
            "runs_out_on",
            "start_date",
            "end_date",
            "account_name",
            "created_at",
            "activated_at",
        ]
        read_only_fields = fields

    def _ledger(self, obj: Allocation) -> Ledger:
        cached = getattr(obj, _LEDGER, None)
        if cached is None:
            cached = ledger_of(obj)
            setattr(obj, _LEDGER, cached)
        return cached

    def get_gpu_seconds_used(self, obj: Allocation) -> int:
        return self._ledger(obj).gpu_seconds_used

    def get_gpu_seconds_reserved(self, obj: Allocation) -> float:
        return float(self._ledger(obj).gpu_seconds_reserved)

    def get_gpu_hours_used(self, obj: Allocation) -> float:
        return float(self._ledger(obj).gpu_hours_used)

    def get_gpu_hours_reserved(self, obj: Allocation) -> float:
        return float(self._ledger(obj).gpu_hours_reserved)

    def get_gpu_hours_remaining(self, obj: Allocation) -> float:
        return float(self._ledger(obj).gpu_hours_remaining)

    @extend_schema_field(MONEY)
    def get_spend(self, obj: Allocation) -> str:
        return MONEY.to_representation(self._ledger(obj).spend)

    @extend_schema_field(MONEY)
    def get_cost_reserved(self, obj: Allocation) -> str:
        return MONEY.to_representation(self._ledger(obj).cost_reserved)

    @extend_schema_field(MONEY_OR_NULL)
    def get_budget_remaining(self, obj: Allocation) -> str | None:
        left = self._ledger(obj).budget_remaining
        return None if left is None else MONEY.to_representation(left)

    def _burn(self, obj: Allocation) -> Burn:
        return burn_of_row(obj)

    @extend_schema_field(BurnRateSerializer)
    def get_burn_rate(self, obj: Allocation) -> dict[str, Any]:
        return burn_rate_of(self._burn(obj))

    @extend_schema_field(RunsOutSerializer)
    def get_runs_out_on(self, obj: Allocation) -> dict[str, Any]:
        return runs_out_of(self._burn(obj))


class UsageDaySerializer(serializers.Serializer):
    date = serializers.DateField()
    gpu_hours = HoursField(help_text="GPU-hours charged that day, unrounded")
    cost = MoneyField(help_text="Money charged that day")


class UsageSeriesSerializer(serializers.Serializer):
    """allocations/{id}/usage/: what was charged per day, from the usage records."""

    allocation = strict.IntegerField()
    daily = UsageDaySerializer(many=True)
