"""Admin: notebook sessions, read-only (states move through the services and the hub's view;
a deleted session would drop its reservation from the ledger). Stopping is the page's, the
API's or the CLI's `notebook_stop`, audited."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyMixin

from .models import NotebookSession


@admin.register(NotebookSession)
class NotebookSessionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "state",
        "allocation",
        "user",
        "gpus",
        "hours",
        "gpu_seconds",
        "created_at",
        "stopped_at",
    ]
    list_filter = ["state", ("allocation__facility", admin.RelatedOnlyFieldListFilter)]
    search_fields = [
        "allocation__project__code",
        "user__username",
        "server_name",
        "reason",
        "external_id",
    ]
    list_select_related = ["allocation__project", "user"]
    date_hierarchy = "created_at"
    show_full_result_count = False
