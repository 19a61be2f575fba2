"""Admin: browse and correct benchmark data; filters by source, precision, strategy, system."""

from django.contrib import admin

from .models import BenchmarkResult, Workload


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["key", "model", "dims", "family", "reference_size", "parameters"]
    list_filter = ["family", "dims"]
    search_fields = ["key", "model"]


@admin.register(BenchmarkResult)
class BenchmarkResultAdmin(admin.ModelAdmin):
    list_display = [
        "workload",
        "node_type",
        "precision",
        "strategy",
        "gpus",
        "batch_size",
        "image_size",
        "throughput",
        "source",
        "submitted_by",
        "created_at",
    ]
    list_filter = [
        "source",
        "precision",
        "strategy",
        "gpus",
        "workload__family",
        "node_type__facility",
    ]
    search_fields = ["workload__key", "node_type__name", "citation", "notes"]
    list_select_related = ["workload", "node_type__facility", "submitted_by"]
    raw_id_fields = ["submitted_by"]
    readonly_fields = ["created_at"]
