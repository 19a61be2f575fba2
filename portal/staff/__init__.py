"""The reviewers' and admins' home (`/staff/`): what waits for staff, each with its action."""
