"""Staff see who is linked to which provider subject, link an account after a collision and
remove a link; both through the services, audited."""

from __future__ import annotations

from django.contrib import admin

from . import services
from .models import ExternalIdentity


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(admin.ModelAdmin):
    list_display = ["user", "issuer", "subject", "created_at", "last_sign_in"]
    search_fields = ["user__username", "user__email", "subject"]
    list_filter = ["issuer"]
    fields = ["user", "issuer", "subject"]
    autocomplete_fields = ["user"]
    actions = None  # no bulk delete around identity_unlink

    def has_change_permission(self, request, obj=None) -> bool:
        return False  # a link is made or removed, never edited into another

    def save_model(self, request, obj, form, change) -> None:
        linked = services.identity_link(
            user=obj.user, issuer=obj.issuer, subject=obj.subject, by=request.user
        )
        obj.pk = linked.pk

    def delete_model(self, request, obj) -> None:
        services.identity_unlink(identity=obj, by=request.user)
