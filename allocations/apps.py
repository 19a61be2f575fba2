from django.apps import AppConfig
from django.urls import register_converter

from .bounds import IdConverter


class AllocationsConfig(AppConfig):
    name = "allocations"
    verbose_name = "Allocations"

    def ready(self) -> None:
        # `<id:pk>` for every URL's ids (allocations.bounds), before any URLconf is loaded.
        register_converter(IdConverter, "id")
