"""Admin for the matrix (tools with their cells, systems linked to facilities) and the
walkthroughs, whose saves go through the service so the HTML is rendered and sanitised."""

from __future__ import annotations

from django.contrib import admin

from . import services
from .models import Support, System, Tool, Walkthrough


class SupportInline(admin.TabularInline):
    model = Support
    extra = 0
    fields = ["system", "status", "note"]


@admin.register(Tool)
class ToolAdmin(admin.ModelAdmin):
    list_display = ["name", "order", "url"]
    list_editable = ["order"]
    inlines = [SupportInline]


@admin.register(System)
class SystemAdmin(admin.ModelAdmin):
    list_display = ["name", "facility", "order"]
    list_editable = ["order"]


@admin.register(Walkthrough)
class WalkthroughAdmin(admin.ModelAdmin):
    list_display = ["title", "slug", "facility", "is_published", "updated_at"]
    list_filter = ["is_published", "facility"]
    search_fields = ["title", "summary", "body_markdown"]
    prepopulated_fields = {"slug": ["title"]}
    fields = ["title", "slug", "summary", "facility", "is_published", "body_markdown"]

    def save_model(self, request, obj, form, change) -> None:
        services.walkthrough_save(
            walkthrough=obj if change else None,
            slug=obj.slug,
            title=obj.title,
            summary=obj.summary,
            body_markdown=obj.body_markdown,
            facility=obj.facility,
            is_published=obj.is_published,
        )
