"""Queue notification emails for after the commit (sending is network I/O)."""
from __future__ import annotations

from django.db import transaction


def notify_after_commit(kind: str, event_id: int) -> None:
    """Enqueue the email about an audit event once the transaction has committed."""
    from ..tasks import send_notification  # tasks import services; import late to avoid a cycle

    transaction.on_commit(lambda: send_notification.delay(kind, event_id))
