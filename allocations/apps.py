from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save
from django.urls import register_converter

from .bounds import IdConverter
from .versions import catalogue_changed


class AllocationsConfig(AppConfig):
    name = "allocations"
    verbose_name = "Allocations"

    def ready(self) -> None:
        # `<id:pk>` for every URL's ids (allocations.bounds), before any URLconf is loaded.
        register_converter(IdConverter, "id")
        # The shared catalogue's version (allocations/versions.py): launch forms predict from it.
        for model in ("allocations.Facility", "allocations.NodeType"):
            for signal in (post_save, post_delete):
                signal.connect(catalogue_changed, sender=model, dispatch_uid=f"catalogue:{model}")
