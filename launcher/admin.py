"""Admin: jobs and sweeps, read-mostly. Lists filter by state, facility and allocation and
search by project, user, token and scheduler id; a job's state moves only through the services
(the cancel action calls `job_cancel`, audited like the page and the API)."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from core.admin import ReadOnlyMixin, run_action

from . import services
from .models import Job, Sweep


class ReadMostly(ReadOnlyMixin, admin.ModelAdmin):
    """Nothing is added, edited or deleted by hand: jobs come from launches, states from the
    backends, and a deleted job would drop its reservation from the ledger."""


@admin.register(Job)
class JobAdmin(ReadMostly):
    list_display = [
        "id",
        "state",
        "allocation",
        "facility",
        "created_by",
        "gpus",
        "scheduler_id",
        "created_at",
    ]
    list_filter = [
        "state",
        ("allocation__facility", admin.RelatedOnlyFieldListFilter),
        ("allocation", admin.RelatedOnlyFieldListFilter),
        "workload",
    ]
    search_fields = [
        "allocation__project__code",
        "created_by__username",
        "token",
        "scheduler_id",
        "state_reason",
    ]
    list_select_related = ["allocation__project", "allocation__facility", "created_by"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    actions = ["cancel"]

    @admin.display(ordering="allocation__facility__name", description="facility")
    def facility(self, job: Job) -> str:
        return job.allocation.facility.name

    @admin.action(description="Cancel selected jobs")
    def cancel(self, request: HttpRequest, queryset: QuerySet[Job]) -> None:
        run_action(
            self,
            request,
            queryset.select_related("allocation"),
            lambda job: services.job_cancel(job=job, by=request.user),
            verb="Cancelled",
            noun="job(s)",
        )


@admin.register(Sweep)
class SweepAdmin(ReadMostly):
    list_display = [
        "id",
        "name",
        "allocation",
        "facility",
        "created_by",
        "size",
        "gpus",
        "concurrency",
        "created_at",
    ]
    list_filter = [
        ("allocation__facility", admin.RelatedOnlyFieldListFilter),
        ("allocation", admin.RelatedOnlyFieldListFilter),
    ]
    search_fields = [
        "name",
        "allocation__project__code",
        "created_by__username",
        "token",
        "scheduler_id",
    ]
    list_select_related = ["allocation__project", "allocation__facility", "created_by"]
    date_hierarchy = "created_at"

    @admin.display(ordering="allocation__facility__name", description="facility")
    def facility(self, sweep: Sweep) -> str:
        return sweep.allocation.facility.name
