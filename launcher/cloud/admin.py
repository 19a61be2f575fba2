"""Admin: the price catalogue with its refresh actions; clusters, nodes, tasks (their `argv`
is what a worker runs) and interruptions read-only: they change through the cloud services."""

from __future__ import annotations

from django.contrib import admin, messages

from allocations.models import Facility
from core.admin import ReadOnlyMixin

from .backend import AwsBackend
from .models import CloudTask, Cluster, Interruption, Node, PriceCatalogueEntry
from .services import price_catalogue_load, price_catalogue_refresh_spot


@admin.register(PriceCatalogueEntry)
class PriceCatalogueAdmin(admin.ModelAdmin):
    list_display = [
        "instance_type",
        "region",
        "market",
        "price_per_hour",
        "currency",
        "source",
        "as_of",
    ]
    list_filter = ["region", "market"]
    search_fields = ["instance_type"]
    actions = ["refresh_bundled", "refresh_spot_history"]

    @admin.action(description="Refresh from the bundled public price list")
    def refresh_bundled(self, request, queryset):
        count = price_catalogue_load()
        self.message_user(request, f"{count} prices loaded from the bundled list.")

    @admin.action(description="Refresh spot prices from the EC2 spot price history")
    def refresh_spot_history(self, request, queryset):
        for facility in Facility.objects.filter(backend=AwsBackend.name, is_active=True):
            result = price_catalogue_refresh_spot(facility=facility)
            level = messages.SUCCESS if result["updated"] else messages.WARNING
            self.message_user(
                request,
                f"{facility.slug}: {result['updated']} updated, "
                f"{result['skipped_implausible']} dummy prices skipped.",
                level=level,
            )


class NodeInline(ReadOnlyMixin, admin.TabularInline):
    model = Node
    extra = 0
    readonly_fields = [f.name for f in Node._meta.fields]


@admin.register(Cluster)
class ClusterAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ["id", "allocation", "facility", "state", "region", "created_at"]
    list_filter = ["state", "facility"]
    inlines = [NodeInline]


@admin.register(CloudTask)
class CloudTaskAdmin(ReadOnlyMixin, admin.ModelAdmin):
    pass


@admin.register(Interruption)
class InterruptionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    pass
