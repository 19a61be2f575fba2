"""Usage reports (`/reports/usage/`, `GET /api/v1/reports/usage/`): GPU-hours, cost and jobs by
PI, project, facility, user and month or week; wait times; job sizes; GPU efficiency; the share
of short or failed jobs. Aggregated in SQL with a fixed number of queries (docs/reports.md)."""
