from django.apps import AppConfig


class KnowledgeConfig(AppConfig):
    name = "portal.knowledge"
    label = "knowledge"
