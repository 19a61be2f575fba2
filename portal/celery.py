"""The Celery app.

Redis is the broker in tests and production (CELERY_BROKER_URL=redis://...). `make run` uses
kombu's filesystem transport, so a real worker process runs with no server to install.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

app = Celery("portal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
