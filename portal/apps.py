from django.apps import AppConfig


class PortalConfig(AppConfig):
    name = "portal"
    verbose_name = "Portal"

    def ready(self) -> None:
        from .apiconf import strict_strings

        strict_strings()  # the API's strings are strings (docs/api.md)
