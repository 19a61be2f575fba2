from django.apps import AppConfig


class CloudConfig(AppConfig):
    name = "launcher.cloud"
    label = "cloud"
    verbose_name = "Cloud clusters"

    def ready(self) -> None:
        from launcher.backends.registry import register

        from . import receivers  # noqa: F401  (stops workers when an allocation stops)
        from .backend import AwsBackend

        register(AwsBackend())
