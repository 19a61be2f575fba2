"""Tasks enqueued by name once the transaction commits.

Services enqueue work by task name (`enqueue`), so that they never import a tasks module (the
tasks import the services they call, and the reverse import was an import cycle). The task is
looked up by name in the registry of the current Celery app (portal/celery.py) and sent with its
`.delay()` after the commit, as if the service had imported it (`CELERY_TASK_ALWAYS_EAGER` runs
it in-process).
"""

from __future__ import annotations

from typing import Any

from celery import Task, current_app
from django.db import transaction


def task_named(name: str) -> Task:
    """The registered task `name` (the apps' tasks modules are imported on first use)."""
    if name not in current_app.tasks:
        current_app.loader.import_default_modules()
    task: Task = current_app.tasks[name]
    return task


def enqueue(name: str, *args: Any) -> None:
    """Run task `name` with `args` after the current transaction commits (at once when no
    transaction is open). Arguments are ids and plain values, never model instances."""
    transaction.on_commit(lambda: task_named(name).delay(*args))
