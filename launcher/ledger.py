"""Reservations of unfinished jobs, in SQL, for the allocation ledger (allocations/ledger.py).

A job reserves, while it is not final, what it may still use: its estimate less what has
already been charged for it; a final job reserves nothing (its charges are the truth):

    reserved(job) = max(estimate - charged(job), 0)   while job.state not in Job.FINAL

charged(job) is the larger of the job's own `gpu_seconds` (what its backend copied onto it:
sacct for Slurm, including earlier attempts of a resumed job; the process wall time for local
runs) and the usage records attributed to it (`UsageRecord.job_id`: the instance time of the
cloud workers that ran it). So a running cloud job's reservation shrinks as its instance time
is charged instead of being counted twice. Money works the same way with `estimate_cost`.

Registered from LauncherConfig.ready(): the ledger's write paths measure a job's reservation
before and after each change with it, and its recomputation sums it per allocation
(allocations/services/ledger.py); the columns they keep are what every read sees.
"""
from __future__ import annotations

from collections.abc import Collection
from decimal import Decimal

from django.db.models import Case, F, OuterRef, Q, QuerySet, Subquery, Sum, Value, When
from django.db.models.functions import Coalesce, Greatest

from allocations.ledger import MONEY, SECONDS
from allocations.models import UsageRecord

from .models import Job


def _charged(field: str, output) -> Subquery:
    rows = (UsageRecord.objects.filter(job_id=OuterRef("pk")).order_by().values("job_id")
            .annotate(total=Sum(field)).values("total"))
    return Coalesce(Subquery(rows, output_field=output), Value(Decimal(0)), output_field=output)


def with_reservation(jobs: QuerySet[Job]) -> QuerySet[Job]:
    """Annotate each job with what has been charged for it (`charged_seconds`, `charged_cost`)
    and what it still reserves (`reserved_seconds`, `reserved_cost`: 0 once it is final), so a
    job's page can show its estimate, reservation and charge side by side."""
    open_ = ~Q(state__in=Job.FINAL)
    return (jobs.annotate(charged_seconds=Greatest(F("gpu_seconds"),
                                                   _charged("gpu_seconds", SECONDS),
                                                   output_field=SECONDS),
                          charged_cost=_charged("cost", MONEY))
            .annotate(reserved_seconds=Case(When(open_, then=Greatest(
                          F("estimate_gpu_hours") * Value(3600) - F("charged_seconds"),
                          Value(Decimal(0)), output_field=SECONDS)),
                          default=Value(Decimal(0)), output_field=SECONDS),
                      reserved_cost=Case(When(open_, then=Greatest(
                          F("estimate_cost") - F("charged_cost"), Value(Decimal(0)),
                          output_field=MONEY)), default=Value(Decimal(0)), output_field=MONEY)))


def job_reservations(*, allocation_ids: Collection[int] | None = None,
                     job_ids: Collection[int] | None = None) -> dict[int, tuple[Decimal, Decimal]]:
    """{allocation id: (GPU-seconds, money)} reserved by the selected unfinished jobs (one
    query): the provider the ledger's write paths and its recomputation ask."""
    jobs = Job.objects.exclude(state__in=Job.FINAL).order_by()
    if allocation_ids is not None:
        jobs = jobs.filter(allocation_id__in=allocation_ids)
    if job_ids is not None:
        jobs = jobs.filter(pk__in=job_ids)
    rows = (with_reservation(jobs).values("allocation_id")
            .annotate(seconds=Sum("reserved_seconds"), cost=Sum("reserved_cost"))
            .values_list("allocation_id", "seconds", "cost"))
    return {pk: (Decimal(seconds or 0), Decimal(cost or 0)) for pk, seconds, cost in rows}
