"""API input and output shapes. Inputs validate types; policy lives in the services."""
from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field

from . import strict as serializers

from ..models import (
    Allocation, AllocationRequest, Facility, NodeType, Project, ProjectMembership, Sensitivity,
)
from ..bounds import as_id
from ..figures import MONEY_PLACES
from ..ledger import Ledger, ledger_of
from ..models.project import project_code_validator
from ..selectors import visible_allocations, visible_projects
from ..usernames import CLUSTER_USERNAME_HELP, CLUSTER_USERNAME_PATTERN


# Money in the API is a decimal string ("12.3400"; OpenAPI: string, format decimal), never a float.
MONEY = serializers.DecimalField(max_digits=18, decimal_places=MONEY_PLACES, read_only=True)
MONEY_OR_NULL = serializers.DecimalField(max_digits=18, decimal_places=MONEY_PLACES,
                                         read_only=True, allow_null=True)


class NodeTypeSerializer(serializers.ModelSerializer):
    class Meta:
        model = NodeType
        fields = [
            "id", "name", "accelerator", "accelerator_memory_gb", "accelerators_per_node",
            "cpu_cores", "memory_gb", "interconnect", "peak_tflops_fp16", "peak_tflops_bf16",
            "peak_tflops_fp32", "peak_tflops_fp64", "peak_tflops_tf32", "device",
            "max_accelerators", "launch_date", "instance_type",
            "price_on_demand", "price_spot",
        ]


class FacilitySerializer(serializers.ModelSerializer):
    node_types = NodeTypeSerializer(many=True, read_only=True)

    class Meta:
        model = Facility
        fields = [
            "slug", "name", "kind", "backend", "description", "documentation_url",
            "trial_gpu_hours_cap", "trial_days", "trial_auto_approve", "full_gpu_hours_max",
            "latest_end_date",
            "allowed_sensitivity", "gpu_hour_rate", "offers_notebooks", "offers_root",
            "offers_public_web", "node_types",
        ]


class MemberSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", read_only=True)

    class Meta:
        model = ProjectMembership
        fields = ["username", "role", "cluster_username"]


class ProjectSerializer(serializers.ModelSerializer):
    members = MemberSerializer(source="memberships", many=True, read_only=True)
    pi = serializers.CharField(source="pi.username", read_only=True)

    class Meta:
        model = Project
        fields = ["id", "code", "title", "research_area", "pi", "pi_name", "pi_email",
                  "members", "created_at"]
        read_only_fields = ["id", "pi", "members", "created_at"]
        # Uniqueness is the service's to check, with a clear message; the format stays here
        # (so the schema carries its pattern).
        extra_kwargs = {"code": {"validators": [project_code_validator]},
                        "pi_name": {"required": False},
                        "pi_email": {"required": False}}


class MemberInputSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=254, help_text="A username or an email address.")
    role = serializers.ChoiceField(choices=ProjectMembership.Role.choices,
                                   default=ProjectMembership.Role.MEMBER)
    cluster_username = serializers.RegexField(
        CLUSTER_USERNAME_PATTERN, required=False, allow_blank=True, default="",
        error_messages={"invalid": CLUSTER_USERNAME_HELP})


class MemberRoleSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=ProjectMembership.Role.choices)


class RequestOutputSerializer(serializers.ModelSerializer):
    facility = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    node_type = serializers.CharField(source="node_type.name", default=None, read_only=True)
    project_code = serializers.CharField(source="project.code", read_only=True)
    requested_by = serializers.CharField(source="requested_by.username", read_only=True)
    reviewed_by = serializers.CharField(source="reviewed_by.username", default=None,
                                        read_only=True)

    class Meta:
        model = AllocationRequest
        fields = [
            "id", "project", "project_code", "facility", "node_type", "kind", "purpose",
            "extends", "gpu_hours", "cpu_hours", "cloud_budget", "start_date", "end_date",
            "data_sensitivity", "justification", "status", "requested_by", "submitted_at",
            "reviewed_by", "reviewed_at", "decision_comment", "granted_gpu_hours", "allocation",
            "created_at", "updated_at",
        ]
        read_only_fields = fields


class RequestInputSerializer(serializers.Serializer):
    """What a caller may send to create or edit a request. `node_type` is a node type's id or
    its name within the facility."""

    project = serializers.PrimaryKeyRelatedField(queryset=Project.objects.none())
    facility = serializers.SlugRelatedField(slug_field="slug",
                                            queryset=Facility.objects.filter(is_active=True))
    node_type = serializers.CharField(required=False, allow_null=True, allow_blank=True)
    kind = serializers.ChoiceField(choices=AllocationRequest.Kind.choices,
                                   default=AllocationRequest.Kind.FULL)
    purpose = serializers.ChoiceField(choices=AllocationRequest.Purpose.choices,
                                      default=AllocationRequest.Purpose.NEW)
    extends = serializers.PrimaryKeyRelatedField(queryset=Allocation.objects.none(),
                                                 required=False, allow_null=True)
    gpu_hours = serializers.IntegerField(min_value=0, max_value=10_000_000)
    cpu_hours = serializers.IntegerField(min_value=0, max_value=100_000_000, default=0)
    cloud_budget = serializers.DecimalField(max_digits=10, decimal_places=2, min_value=0,
                                            required=False, allow_null=True)
    start_date = serializers.DateField()
    end_date = serializers.DateField()
    data_sensitivity = serializers.ChoiceField(choices=Sensitivity.choices,
                                               default=Sensitivity.PUBLIC)
    justification = serializers.CharField(max_length=10_000)
    submit = serializers.BooleanField(default=False, write_only=True)

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        user = user or AnonymousUser()  # schema generation builds it without a request
        self.fields["project"].queryset = visible_projects(user)
        self.fields["extends"].queryset = visible_allocations(user)

    def validate_start_date(self, value):
        if self.instance is None and value < timezone.localdate():
            raise serializers.ValidationError("The start date cannot be in the past.")
        return value

    def validate(self, attrs):
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
    comment = serializers.CharField(max_length=5000, allow_blank=True, default="")


class ApproveSerializer(CommentSerializer):
    # 0 is allowed for an extension or closure that asked for no hours; the service checks.
    gpu_hours = serializers.IntegerField(min_value=0, required=False, allow_null=True)


class AllocationSerializer(serializers.ModelSerializer):
    """An allocation with its ledger, exact (allocations/ledger.py): charged GPU-seconds as an
    integer; GPU-hours derived from seconds, unrounded; money to the cent-hundredth it is
    recorded in. `*_remaining` is granted less charged less reserved by unfinished work."""

    facility = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    node_type = serializers.CharField(source="node_type.name", default=None, read_only=True)
    project_code = serializers.CharField(source="project.code", read_only=True)
    gpu_seconds_used = serializers.SerializerMethodField()
    gpu_seconds_reserved = serializers.SerializerMethodField()
    gpu_hours_used = serializers.SerializerMethodField()
    gpu_hours_reserved = serializers.SerializerMethodField()
    gpu_hours_remaining = serializers.SerializerMethodField()
    spend = serializers.SerializerMethodField()
    cost_reserved = serializers.SerializerMethodField()
    budget_remaining = serializers.SerializerMethodField()

    class Meta:
        model = Allocation
        fields = [
            "id", "project", "project_code", "facility", "node_type", "kind", "status",
            "status_reason", "gpu_hours", "gpu_seconds_used", "gpu_seconds_reserved",
            "gpu_hours_used", "gpu_hours_reserved", "gpu_hours_remaining", "cpu_hours",
            "budget", "spend", "cost_reserved", "budget_remaining", "start_date", "end_date",
            "account_name", "created_at", "activated_at",
        ]
        read_only_fields = fields

    def _ledger(self, obj) -> Ledger:
        cached = getattr(obj, "_ledger", None)
        if cached is None:
            cached = obj._ledger = ledger_of(obj)
        return cached

    def get_gpu_seconds_used(self, obj) -> int:
        return self._ledger(obj).gpu_seconds_used

    def get_gpu_seconds_reserved(self, obj) -> float:
        return float(self._ledger(obj).gpu_seconds_reserved)

    def get_gpu_hours_used(self, obj) -> float:
        return float(self._ledger(obj).gpu_hours_used)

    def get_gpu_hours_reserved(self, obj) -> float:
        return float(self._ledger(obj).gpu_hours_reserved)

    def get_gpu_hours_remaining(self, obj) -> float:
        return float(self._ledger(obj).gpu_hours_remaining)

    @extend_schema_field(MONEY)
    def get_spend(self, obj) -> str:
        return MONEY.to_representation(self._ledger(obj).spend)

    @extend_schema_field(MONEY)
    def get_cost_reserved(self, obj) -> str:
        return MONEY.to_representation(self._ledger(obj).cost_reserved)

    @extend_schema_field(MONEY_OR_NULL)
    def get_budget_remaining(self, obj) -> str | None:
        left = self._ledger(obj).budget_remaining
        return None if left is None else MONEY.to_representation(left)
