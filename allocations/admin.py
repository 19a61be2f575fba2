"""Admin: catalogue editing, and lists with the filters and actions operators need. Actions
call the same services as the pages and the API, so every move is audited."""
from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError

from . import services
from .models import (
    Allocation, AllocationRequest, Dataset, Event, Facility, NodeType, Project, ProjectMembership,
    UsageRecord,
)
from .transitions import InvalidTransition


def _run_each(modeladmin, request, queryset, action, verb: str) -> None:
    done = 0
    for obj in queryset:
        try:
            action(obj)
            done += 1
        except (InvalidTransition, PermissionDenied, ValidationError) as error:
            modeladmin.message_user(request, f"#{obj.pk}: {error}", messages.WARNING)
    if done:
        modeladmin.message_user(request, f"{verb} {done} item(s).", messages.SUCCESS)


class NodeTypeInline(admin.TabularInline):
    model = NodeType
    extra = 0
    fields = ["name", "accelerator", "accelerator_memory_gb", "accelerators_per_node",
              "peak_tflops_bf16", "peak_tflops_fp32", "instance_type", "price_on_demand",
              "price_spot"]


@admin.register(Facility)
class FacilityAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "kind", "backend", "trial_gpu_hours_cap", "trial_auto_approve",
                    "latest_end_date", "gpu_hour_rate", "is_active"]
    list_filter = ["kind", "backend", "trial_auto_approve", "is_active"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [NodeTypeInline]


@admin.register(NodeType)
class NodeTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "facility", "accelerator", "accelerator_memory_gb",
                    "accelerators_per_node", "peak_tflops_bf16", "price_spot"]
    list_filter = ["facility"]
    search_fields = ["name", "accelerator", "instance_type"]


class MembershipInline(admin.TabularInline):
    model = ProjectMembership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["code", "title", "research_area", "pi_name", "created_at"]
    search_fields = ["code", "title", "pi_name", "pi_email"]
    list_filter = ["research_area"]
    inlines = [MembershipInline]
    autocomplete_fields = ["pi"]


@admin.register(AllocationRequest)
class AllocationRequestAdmin(admin.ModelAdmin):
    list_display = ["id", "project", "facility", "kind", "purpose", "gpu_hours", "status",
                    "requested_by", "submitted_at"]
    list_filter = ["status", "kind", "purpose", "facility", "data_sensitivity"]
    search_fields = ["project__code", "project__title", "requested_by__username", "justification"]
    date_hierarchy = "created_at"
    list_select_related = ["project", "facility", "requested_by"]
    # The workflow moves only through services (pages, API, actions): status is not editable.
    readonly_fields = ["status", "submitted_at", "reviewed_by", "reviewed_at", "allocation",
                       "requested_by"]
    actions = ["approve_selected"]

    @admin.action(description="Approve selected submitted requests in full")
    def approve_selected(self, request, queryset):
        _run_each(self, request, queryset.filter(status="submitted"),
                  lambda r: services.request_approve(request=r, by=request.user), "Approved")


@admin.register(Allocation)
class AllocationAdmin(admin.ModelAdmin):
    # Status second and no long columns, so it stays in view at 1280 px beside the filters.
    list_display = ["id", "status", "project_code", "facility", "kind", "gpu_hours", "end_date"]
    list_filter = ["status", "kind", "facility"]
    search_fields = ["project__code", "account_name"]
    list_select_related = ["project", "facility"]
    readonly_fields = ["status", "status_reason", "activated_at", "alerted_thresholds"]
    actions = ["activate", "suspend", "resume", "close", "retry_provisioning"]

    @admin.display(ordering="project__code", description="project")
    def project_code(self, allocation: Allocation) -> str:
        return allocation.project.code

    @admin.action(description="Mark provisioned allocations active (manual facilities)")
    def activate(self, request, queryset):
        _run_each(self, request, queryset.filter(status="provisioning"),
                  lambda a: services.allocation_activate(allocation=a, by=request.user),
                  "Activated")

    @admin.action(description="Suspend (block new work, stop running work)")
    def suspend(self, request, queryset):
        _run_each(self, request, queryset,
                  lambda a: services.allocation_suspend(allocation=a, by=request.user), "Suspended")

    @admin.action(description="Resume suspended allocations")
    def resume(self, request, queryset):
        _run_each(self, request, queryset,
                  lambda a: services.allocation_resume(allocation=a, by=request.user), "Resumed")

    @admin.action(description="Close")
    def close(self, request, queryset):
        _run_each(self, request, queryset,
                  lambda a: services.allocation_close(allocation=a, by=request.user), "Closed")

    @admin.action(description="Retry provisioning of failed allocations")
    def retry_provisioning(self, request, queryset):
        _run_each(self, request, queryset,
                  lambda a: services.allocation_reprovision(allocation=a, by=request.user),
                  "Re-queued")


@admin.register(UsageRecord)
class UsageRecordAdmin(admin.ModelAdmin):
    list_display = ["allocation", "source", "external_id", "period_start", "gpu_seconds", "cost"]
    list_filter = ["source"]
    search_fields = ["external_id"]
    date_hierarchy = "period_start"
    list_select_related = ["allocation__project"]


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    """Read-only: datasets are registered, changed and removed through their services (the
    project's datasets page or the API), which check the rules and audit every change."""

    list_display = ["name", "project", "location", "modality", "sensitivity", "created_by",
                    "updated_at"]
    list_filter = ["modality", "sensitivity"]
    search_fields = ["name", "location", "project__code"]
    list_select_related = ["project", "created_by"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "content_type", "object_id", "actor", "from_state", "to_state"]
    list_filter = ["content_type", "to_state"]
    search_fields = ["comment"]
    list_select_related = ["content_type", "actor"]

    # The audit trail is append-only and written by the services alone: nobody, superusers
    # included, adds, edits or deletes an event here.
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
