"""Jobs summed by allocation and calendar month of creation, and by size: the usage report's job
figures for settled months (launcher/job_months.py keeps them; portal/reports/job_rollups.py
reads them)."""

from __future__ import annotations

from django.db import models


class JobMonth(models.Model):
    """One allocation's jobs created in one month, once the month is settled (every job in it
    final and none finished within the last day: its charges are in). The report's rules:
    `jobs`, `failed`, `short`, `short_or_failed` and `gpu_seconds` count the jobs that ran (not a
    job cancelled before it started); `waited` and `wait_seconds` the jobs that started (submit
    to start); the `gpu_util_*` and `cpu_util_*` columns the jobs that reported a utilisation
    from that source (jobs, sum of utilisation x GPU-seconds, sum of GPU-seconds, sum of
    utilisation). The same jobs by size are `JobMonthSize` rows: one row here an allocation a
    month keeps a centre's year, which the report sums by group at every view, to a third of
    the rows it would be with the size in the key."""

    allocation = models.ForeignKey(
        "allocations.Allocation", on_delete=models.CASCADE, related_name="job_months"
    )
    month = models.DateField()  # the first day of the month
    jobs = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    short = models.PositiveIntegerField(default=0)
    short_or_failed = models.PositiveIntegerField(default=0)
    gpu_seconds = models.BigIntegerField(default=0)
    waited = models.PositiveIntegerField(default=0)
    wait_seconds = models.FloatField(default=0)
    gpu_util_jobs = models.PositiveIntegerField(default=0)
    gpu_util_weighted = models.FloatField(default=0)
    gpu_util_seconds = models.BigIntegerField(default=0)
    gpu_util_sum = models.FloatField(default=0)
    cpu_util_jobs = models.PositiveIntegerField(default=0)
    cpu_util_weighted = models.FloatField(default=0)
    cpu_util_seconds = models.BigIntegerField(default=0)
    cpu_util_sum = models.FloatField(default=0)
    rolled_at = models.DateTimeField()

    SOURCES = ("gpu", "cpu")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["allocation", "month"], name="job_month_unique")
        ]
        indexes = [models.Index(fields=["month", "allocation"], name="job_month_month")]

    def __str__(self) -> str:
        return f"allocation {self.allocation_id} {self.month:%Y-%m}: {self.jobs} jobs"


class JobMonthSize(models.Model):
    """One allocation's jobs of one size (GPUs, or CPUs on a CPU-only facility) that ran in one
    settled month, and the GPU-seconds they were charged: the report's job-size table."""

    allocation = models.ForeignKey(
        "allocations.Allocation", on_delete=models.CASCADE, related_name="job_month_sizes"
    )
    month = models.DateField()  # the first day of the month
    gpus = models.PositiveSmallIntegerField()
    jobs = models.PositiveIntegerField(default=0)
    gpu_seconds = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["allocation", "month", "gpus"], name="job_month_size_unique"
            )
        ]
        indexes = [models.Index(fields=["month", "allocation"], name="job_month_size_month")]

    def __str__(self) -> str:
        return f"allocation {self.allocation_id} {self.month:%Y-%m} {self.gpus} GPUs: {self.jobs}"


class RolledMonth(models.Model):
    """A month whose jobs `JobMonth` holds, and when they were rolled up: the report reads which
    months to take from the rollups here (one small row a month), not from its rows."""

    month = models.DateField(primary_key=True)
    rolled_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.month:%Y-%m} rolled at {self.rolled_at:%Y-%m-%d %H:%M}"
