from django.apps import AppConfig


class LauncherConfig(AppConfig):
    name = "launcher"
    verbose_name = "Launcher"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects to the allocations signals)
        from . import slurm_runner  # noqa: F401  (registers the Slurm runner and provisioner)
        from allocations.sections import register_allocation_section

        from .pages import allocation_sections

        register_allocation_section(allocation_sections)
