from django.apps import AppConfig
from django.conf import settings
from django.db.models.signals import post_delete, post_save
from django.urls import register_converter

from core.bounds import IdConverter
from core.versions import catalogue_changed, people_changed, settled_changed


class AllocationsConfig(AppConfig):
    name = "allocations"
    verbose_name = "Allocations"

    def ready(self) -> None:
        # `<id:pk>` for every URL's ids (core.bounds), before any URLconf is loaded.
        register_converter(IdConverter, "id")
        # The shared catalogue's version (core/versions.py): launch forms predict from it.
        for model in ("allocations.Facility", "allocations.NodeType"):
            for signal in (post_save, post_delete):
                signal.connect(catalogue_changed, sender=model, dispatch_uid=f"catalogue:{model}")
        # The usernames an audit trail shows (the pages' cached histories).
        for signal in (post_save, post_delete):
            signal.connect(
                people_changed,
                sender=settings.AUTH_USER_MODEL,
                dispatch_uid=f"people:{signal is post_save}",
            )
        # What the usage report keeps of settled months groups by (portal/reports/settled.py):
        # a project's code and PI. (Allocations with ledger records or jobs are never deleted.)
        for signal in (post_save, post_delete):
            signal.connect(
                settled_changed,
                sender="allocations.Project",
                dispatch_uid=f"settled:{signal is post_save}",
            )
