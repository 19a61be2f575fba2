"""Queue notification emails for after the commit (sending is network I/O)."""
from __future__ import annotations

from allocations.queue import enqueue


def notify_after_commit(kind: str, event_id: int) -> None:
    """Enqueue the email about an audit event once the transaction has committed."""
    enqueue("allocations.send_notification", kind, event_id)
