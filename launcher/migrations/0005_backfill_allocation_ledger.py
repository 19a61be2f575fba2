"""Fill the allocation's ledger columns (allocations 0009) from the records: charged seconds and
spend from the usage records, reservations from the unfinished jobs (docs/ledger.md). The same
figures as the beat task's recomputation (allocations/ledger.py)."""

from decimal import Decimal

from django.db import migrations
from django.db.models import Sum

FINAL = ("succeeded", "failed", "cancelled", "timeout")


def backfill(apps, schema_editor):
    Allocation = apps.get_model("allocations", "Allocation")
    UsageRecord = apps.get_model("allocations", "UsageRecord")
    Job = apps.get_model("launcher", "Job")
    charged = {
        row["allocation_id"]: row
        for row in UsageRecord.objects.values("allocation_id").annotate(
            seconds=Sum("gpu_seconds"), cost=Sum("cost")
        )
    }
    by_job = {
        row["job_id"]: row
        for row in UsageRecord.objects.exclude(job_id=None)
        .values("job_id")
        .annotate(seconds=Sum("gpu_seconds"), cost=Sum("cost"))
    }
    reserved: dict[int, list[Decimal]] = {}
    for job in Job.objects.exclude(state__in=FINAL).only(
        "pk", "allocation_id", "gpu_seconds", "estimate_gpu_hours", "estimate_cost"
    ):
        own = by_job.get(job.pk, {})
        seconds = max(Decimal(job.gpu_seconds), Decimal(own.get("seconds") or 0))
        cost = Decimal(own.get("cost") or 0)
        figures = reserved.setdefault(job.allocation_id, [Decimal(0), Decimal(0)])
        figures[0] += max(job.estimate_gpu_hours * 3600 - seconds, Decimal(0))
        figures[1] += max(job.estimate_cost - cost, Decimal(0))
    for pk in set(charged) | set(reserved):
        row = charged.get(pk, {})
        seconds, cost = reserved.get(pk, (Decimal(0), Decimal(0)))
        Allocation.objects.filter(pk=pk).update(
            gpu_seconds_used=row.get("seconds") or 0,
            spend=row.get("cost") or 0,
            gpu_seconds_reserved=seconds,
            cost_reserved=cost,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("allocations", "0009_allocation_ledger_columns"),
        ("launcher", "0004_merge_job_measurement_and_utilisation"),
    ]

    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
