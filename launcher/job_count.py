"""The check of the jobs' kept total (launcher/models/job_count.py) against the rows.

The triggers keep the total in every writing transaction; only a write with triggers off (a
restore under `session_replication_role = replica`, a superuser's `ALTER TABLE ... DISABLE
TRIGGER`) can leave it wrong. The hourly beat task `launcher.roll_job_months` runs this check:
a COUNT of the rows (25-90 ms at a million jobs), and where it differs, the count again and the
total rewritten with writers held off for that moment (`LOCK TABLE ... IN SHARE MODE`), so no
insert lands between the two.
"""

from __future__ import annotations

import logging

from django.db import connection, transaction

from .models import Job, JobCount

logger = logging.getLogger(__name__)


def job_count_check() -> int:
    """Rewrite the kept total if it differs from the rows; the difference corrected (rows -
    kept; 0 when none, or where no total is kept)."""
    kept = JobCount.objects.total()
    if kept is None or kept == Job.objects.count():
        return 0
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE launcher_job IN SHARE MODE")
        rows, kept = Job.objects.count(), JobCount.objects.total() or 0
        if rows == kept:
            return 0  # a write committed between the first two reads: no drift
        JobCount.objects.all().delete()
        JobCount.objects.create(shard=0, jobs=rows)
    logger.warning("job total: kept %d, rows %d: rewritten to %d", kept, rows, rows)
    return rows - kept
