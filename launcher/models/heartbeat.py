"""When a Celery worker last ran the beat's heartbeat task (launcher/heartbeat.py): one row
per name, written every few seconds by whichever worker runs it."""

from __future__ import annotations

from django.db import models


class WorkerHeartbeat(models.Model):
    name = models.CharField(max_length=40, unique=True)
    seen_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} seen at {self.seen_at:%Y-%m-%d %H:%M:%S}"
