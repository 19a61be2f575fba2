"""The notebook session state machine as a table, for allocations.transitions.transition()."""

from __future__ import annotations

from typing import Any

from allocations.models import Event
from allocations.transitions import transition

from .models import NotebookSession

S = NotebookSession.State

SESSION_MOVES: dict[str, tuple[str, ...]] = {
    S.STARTING: (S.RUNNING, S.STOPPING, S.STOPPED, S.FAILED),
    S.RUNNING: (S.STOPPING, S.STOPPED, S.FAILED),
    S.STOPPING: (S.STOPPED, S.FAILED),
    # A stopped session that never got a record from its backend is failed (nothing charged).
    S.STOPPED: (S.FAILED,),
    S.FAILED: (),
}


def session_move(
    session: NotebookSession, *, to: str, actor: Any = None, comment: str = "", **updates: Any
) -> Event:
    """Compare-and-swap `session.state` to `to` by the table, with an audit event (inside the
    caller's transaction)."""
    return transition(
        session, to=to, table=SESSION_MOVES, field="state", actor=actor, comment=comment, **updates
    )
