from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "portal.identity"
    label = "identity"
    verbose_name = "Institutional sign-in"
