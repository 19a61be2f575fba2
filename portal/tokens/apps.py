from django.apps import AppConfig


class TokensConfig(AppConfig):
    name = "portal.tokens"
    label = "tokens"
    verbose_name = "API tokens"

    def ready(self) -> None:
        from . import receivers  # noqa: F401  (tokens end with a password change or deactivation)
