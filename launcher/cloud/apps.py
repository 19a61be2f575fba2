from django.apps import AppConfig


class CloudConfig(AppConfig):
    name = "launcher.cloud"
    label = "cloud"
    verbose_name = "Cloud clusters"

    def ready(self) -> None:
        from . import (
            receivers,  # noqa: F401  (stops workers when an allocation stops)
            runner,
        )

        runner.register()

        from allocations.sections import register_allocation_section

        from .pages import allocation_sections

        register_allocation_section(allocation_sections)
