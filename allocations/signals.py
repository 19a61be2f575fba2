"""Signals that let higher apps (the launcher) react to allocation facts without an import
cycle. Each is sent after the transaction commits, with ids only. See docs/architecture.md.
"""

from django.dispatch import Signal

# An allocation changed state (suspended, exhausted, expired, closed, active again).
# kwargs: allocation_id, from_state, to_state
allocation_status_changed = Signal()

# The granted GPU-hours changed (a top-up): backends must raise their caps.
# kwargs: allocation_id
allocation_grant_changed = Signal()

# A project's member list changed (added, removed): backends must add or remove the members'
# associations on every live account of the project.
# kwargs: project_id
project_members_changed = Signal()
