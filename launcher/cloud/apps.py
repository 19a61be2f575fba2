from django.apps import AppConfig


class CloudConfig(AppConfig):
    name = "launcher.cloud"
    label = "cloud"
    verbose_name = "Cloud clusters"
