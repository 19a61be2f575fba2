"""How many jobs there are, kept by the database (PostgreSQL triggers, migration 0014).

The staff's jobs list is every job, and its page gives the total (`count`): at a centre a
COUNT over a million rows on every page (25-90 ms). PostgreSQL keeps the total instead, in the
transaction that writes the rows, whoever writes them (services, the admin, bulk loads, COPY):
each INSERT, DELETE or TRUNCATE statement on `launcher_job` adds what it changed to the row of
its shard. A shard is the writing backend's process id modulo SHARDS, so a transaction only
ever holds its own shard's row, and concurrent writers seldom wait on one another. Exact at
every commit, like the COUNT it replaces (READ COMMITTED: the committed rows).
"""

from __future__ import annotations

from django.db import connection, models
from django.db.models import Sum

SHARDS = 64


class JobCountManager(models.Manager):
    def total(self) -> int | None:
        """How many jobs there are: one read of the shards, not a COUNT of every row. None
        where no total is kept (not PostgreSQL: the caller counts)."""
        if connection.vendor != "postgresql":
            return None
        return int(self.aggregate(n=Sum("jobs"))["n"] or 0)


class JobCount(models.Model):
    shard = models.PositiveSmallIntegerField(primary_key=True)
    jobs = models.BigIntegerField(default=0)

    objects = JobCountManager()

    def __str__(self) -> str:
        return f"shard {self.shard}: {self.jobs} jobs"
