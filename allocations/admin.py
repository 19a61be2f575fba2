"""Admin: catalogue editing, and lists with the filters and actions operators need. The admin
is a view on the services: projects, members, requests, allocations, usage, datasets and events
are read-only here; every change is an action or a form that calls the same service as the
pages and the API (with its checks, audit event and backend side effects). Members change on
the project page; hours and dates through a request; the ledger by a correction record."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ReadOnlyMixin, run_action

from . import services
from .models import (
    Allocation,
    AllocationRequest,
    Dataset,
    Event,
    Facility,
    NodeType,
    Project,
    ProjectMembership,
    UsageRecord,
)


class ReadOnly(ReadOnlyMixin, admin.ModelAdmin):
    """Seen, filtered and searched here; changed only through the services (actions)."""


class NodeTypeInline(admin.TabularInline):
    model = NodeType
    extra = 0
    fields = [
        "name",
        "accelerator",
        "accelerator_memory_gb",
        "accelerators_per_node",
        "peak_tflops_bf16",
        "peak_tflops_fp32",
        "instance_type",
        "price_on_demand",
        "price_spot",
    ]


@admin.register(Facility)
class FacilityAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "slug",
        "kind",
        "backend",
        "trial_gpu_hours_cap",
        "trial_auto_approve",
        "latest_end_date",
        "gpu_hour_rate",
        "is_active",
    ]
    list_filter = ["kind", "backend", "trial_auto_approve", "is_active"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [NodeTypeInline]


@admin.register(NodeType)
class NodeTypeAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "facility",
        "accelerator",
        "accelerator_memory_gb",
        "accelerators_per_node",
        "peak_tflops_bf16",
        "price_spot",
    ]
    list_filter = ["facility"]
    search_fields = ["name", "accelerator", "instance_type"]


class MembershipInline(ReadOnlyMixin, admin.TabularInline):
    """Read-only: members are added, changed and removed on the project page or the API
    (services.project_member_*: the login rule, the audit event, the Slurm sync)."""

    model = ProjectMembership
    extra = 0
    fields = readonly_fields = ("user", "role", "cluster_username", "sync_error", "added_at")


@admin.register(Project)
class ProjectAdmin(ReadOnly):
    list_display = ["code", "title", "research_area", "pi_name", "created_at"]
    search_fields = ["code", "title", "pi_name", "pi_email"]
    list_filter = ["research_area"]
    inlines = [MembershipInline]
    autocomplete_fields = ["pi"]


@admin.register(AllocationRequest)
class AllocationRequestAdmin(ReadOnly):
    list_display = [
        "id",
        "project",
        "facility",
        "kind",
        "purpose",
        "gpu_hours",
        "status",
        "requested_by",
        "submitted_at",
    ]
    list_filter = ["status", "kind", "purpose", "facility", "data_sensitivity"]
    search_fields = ["project__code", "project__title", "requested_by__username", "justification"]
    date_hierarchy = "created_at"
    list_select_related = ["project", "facility", "requested_by"]
    # The workflow moves only through services (pages, API, actions): nothing is edited here.
    actions = ["approve_selected"]

    @admin.action(description="Approve selected submitted requests in full")
    def approve_selected(self, request: HttpRequest, queryset: QuerySet[AllocationRequest]) -> None:
        run_action(
            self,
            request,
            queryset.filter(status="submitted"),
            lambda r: services.request_approve(request=r, by=request.user),
            verb="Approved",
        )


@admin.register(Allocation)
class AllocationAdmin(ReadOnly):
    # Status second and no long columns, so it stays in view at 1280 px beside the filters.
    list_display = ["id", "status", "project_code", "facility", "kind", "gpu_hours", "end_date"]
    list_filter = ["status", "kind", "facility"]
    search_fields = ["project__code", "account_name"]
    list_select_related = ["project", "facility"]
    actions = ["activate", "suspend", "resume", "close", "retry_provisioning"]

    @admin.display(ordering="project__code", description="project")
    def project_code(self, allocation: Allocation) -> str:
        return allocation.project.code

    @admin.action(description="Mark provisioned allocations active (manual facilities)")
    def activate(self, request: HttpRequest, queryset: QuerySet[Allocation]) -> None:
        run_action(
            self,
            request,
            queryset.filter(status="provisioning"),
            lambda a: services.allocation_activate(allocation=a, by=request.user),
            verb="Activated",
        )

    @admin.action(description="Suspend (block new work, stop running work)")
    def suspend(self, request: HttpRequest, queryset: QuerySet[Allocation]) -> None:
        run_action(
            self,
            request,
            queryset,
            lambda a: services.allocation_suspend(allocation=a, by=request.user),
            verb="Suspended",
        )

    @admin.action(description="Resume suspended allocations")
    def resume(self, request: HttpRequest, queryset: QuerySet[Allocation]) -> None:
        run_action(
            self,
            request,
            queryset,
            lambda a: services.allocation_resume(allocation=a, by=request.user),
            verb="Resumed",
        )

    @admin.action(description="Close")
    def close(self, request: HttpRequest, queryset: QuerySet[Allocation]) -> None:
        run_action(
            self,
            request,
            queryset,
            lambda a: services.allocation_close(allocation=a, by=request.user),
            verb="Closed",
        )

    @admin.action(description="Retry provisioning of failed allocations")
    def retry_provisioning(self, request: HttpRequest, queryset: QuerySet[Allocation]) -> None:
        run_action(
            self,
            request,
            queryset,
            lambda a: services.allocation_reprovision(allocation=a, by=request.user),
            verb="Re-queued",
        )


class UsageCorrectionForm(forms.ModelForm):
    reason = forms.CharField(
        widget=forms.Textarea,
        help_text="Why (kept with the record and in the allocation's audit trail).",
    )

    class Meta:
        model = UsageRecord
        fields = ["allocation", "gpu_seconds", "cost"]
        help_texts = {"gpu_seconds": "Negative to take back a wrong charge."}


@admin.register(UsageRecord)
class UsageRecordAdmin(admin.ModelAdmin):
    """The ledger is append-only: records are never edited or deleted. "Add" writes a
    correction through services.usage_correct (staff only, audited)."""

    list_display = ["allocation", "source", "external_id", "period_start", "gpu_seconds", "cost"]
    list_filter = ["source"]
    search_fields = ["external_id"]
    date_hierarchy = "period_start"
    list_select_related = ["allocation__project"]
    form = UsageCorrectionForm

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        data = form.cleaned_data
        record = services.usage_correct(
            allocation=data["allocation"],
            by=request.user,
            gpu_seconds=data["gpu_seconds"],
            cost=data["cost"],
            reason=data["reason"],
        )
        obj.pk, obj.source, obj.external_id = record.pk, record.source, record.external_id


@admin.register(Dataset)
class DatasetAdmin(ReadOnly):
    """Read-only: datasets are registered, changed and removed through their services (the
    project's datasets page or the API), which check the rules and audit every change."""

    list_display = [
        "name",
        "project",
        "location",
        "modality",
        "sensitivity",
        "created_by",
        "updated_at",
    ]
    list_filter = ["modality", "sensitivity"]
    search_fields = ["name", "location", "project__code"]
    list_select_related = ["project", "created_by"]


@admin.register(Event)
class EventAdmin(ReadOnly):
    list_display = ["created_at", "content_type", "object_id", "actor", "from_state", "to_state"]
    list_filter = ["content_type", "to_state"]
    search_fields = ["comment"]
    list_select_related = ["content_type", "actor"]

    # The audit trail is append-only and written by the services alone: nobody, superusers
    # included, adds, edits or deletes an event here.
