from django.contrib import admin

from .models import PersonalToken


@admin.register(PersonalToken)
class PersonalTokenAdmin(admin.ModelAdmin):
    """Read-only: tokens are made and revoked by their owners on /account/tokens/."""

    list_display = [
        "user",
        "kind",
        "name",
        "prefix",
        "created_at",
        "expires_at",
        "last_used_at",
        "revoked_at",
    ]
    list_filter = ["kind", "revoked_at"]
    search_fields = ["user__username", "name", "prefix"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
