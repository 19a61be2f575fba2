"""The portal project: settings, URLs, the Celery app and the site shell."""

from .celery import app as celery_app

__all__ = ("celery_app",)
