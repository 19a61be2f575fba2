from django.apps import AppConfig


class LauncherConfig(AppConfig):
    name = "launcher"
    verbose_name = "Launcher"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (connects to the allocations signals)
