from django.apps import AppConfig


class LauncherConfig(AppConfig):
    name = "launcher"
    verbose_name = "Launcher"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects to the allocations signals)
        from allocations.connection import register_connection_check
        from allocations.sections import register_allocation_section

        from .backends.registry import ManualBackend, is_connected, register
        from .local.backend import LocalBackend
        from .slurm.backend import SlurmBackend

        register(ManualBackend())
        register(SlurmBackend())
        register(LocalBackend())
        register_connection_check(is_connected)

        from .pages import allocation_sections

        register_allocation_section(allocation_sections)

        from allocations.ledger import register_reservations

        from .selectors import job_reservations

        register_reservations(job_reservations)
