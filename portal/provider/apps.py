from django.apps import AppConfig


class ProviderConfig(AppConfig):
    """The portal as an OpenID Connect provider (django-oauth-toolkit), so JupyterHub signs
    users in through the portal: one sign-on (docs/notebooks-hub.md)."""

    name = "portal.provider"
    label = "provider"
    verbose_name = "OpenID Connect provider"
