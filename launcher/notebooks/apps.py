from django.apps import AppConfig


class NotebooksConfig(AppConfig):
    name = "launcher.notebooks"
    label = "notebooks"
    verbose_name = "Notebook sessions"
