from django.apps import AppConfig


class LauncherConfig(AppConfig):
    name = "launcher"
    verbose_name = "Launcher"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects to the allocations signals)
        from .backends.registry import ManualBackend, register
        from .local.backend import LocalBackend
        from .slurm.backend import SlurmBackend

        register(ManualBackend())
        register(SlurmBackend())
        register(LocalBackend())
