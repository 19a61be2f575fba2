"""More than one of everything: two web processes (gunicorn) and two real Celery workers on one
queue, against one PostgreSQL, one Redis and the real Slurm cluster; the test plays the beat and
hands every tick to both workers at once (what a beat tick does when it reaches a second worker
while the first still runs the task). Jobs are launched through the API, each sent to both web
processes at the same moment with one Idempotency-Key (a client retrying on another process),
then run and charged; an allocation expires; a weekly digest falls due. Nothing is done twice:
one job a key, one Slurm job a job, one audit event a move, each charge once in the ledger (its
columns and months equal the records), one expiry, one digest email (docs/operations.md, "More
than one of everything")."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from decimal import Decimal

import pytest
import requests
from django.contrib.contenttypes.models import ContentType
from django.utils import timezone

from allocations.ledger import ledger_recomputed, ledger_stored
from allocations.models import Allocation, Event, NotificationPreference, UsageAlert, UsageRecord
from allocations.rollups import rollup_drifted
from allocations.tasks import expire_allocations, send_usage_digests
from allocations.transitions import record_event
from launcher import tasks
from launcher.models import Job
from launcher.slurm import backend as slurm_backend
from portal.tokens.services import account_token_create
from tests.factories import AllocationFactory
from tests.launcher.slurm_fixtures import TINY, slurm_allocation, slurm_facility  # noqa: F401
from tests.launcher.test_slurm_jobs import jobs_named
from tests.waiting import wait_for
from tests.web import running_web

pytestmark = pytest.mark.django_db(transaction=True)
PARAMS = {k: v for k, v in TINY.items() if k != "wall_time_minutes"}


def _both(task, *args) -> None:
    """One beat tick, reaching both workers at the same moment."""
    task.delay(*args)
    task.delay(*args)


def _due_digest(pi, project) -> Allocation:
    """An alert on one of the PI's allocations, and the PI's weekly digest a week overdue."""
    allocation = AllocationFactory(project=project, gpu_hours=Decimal(10))
    event = record_event(
        allocation, actor=None, from_state="active", to_state="active", comment="50% used"
    )
    UsageAlert.objects.create(allocation=allocation, kind="threshold", thresholds=[50], event=event)
    NotificationPreference.objects.update_or_create(
        user=pi,
        defaults={
            "usage_alerts": NotificationPreference.Usage.WEEKLY,
            "digest_sent_until": timezone.now() - dt.timedelta(days=8),
        },
    )
    return allocation


def _launch_on_both(urls: list[str], token: str, body: dict) -> list[requests.Response]:
    """The same launch, with one Idempotency-Key, sent to every web process at the same moment."""
    headers = {"Authorization": f"Token {token}", "Idempotency-Key": str(uuid.uuid4())}
    start, replies = threading.Barrier(len(urls)), [None] * len(urls)

    def post(n: int) -> None:
        start.wait()
        replies[n] = requests.post(
            f"{urls[n]}/api/v1/jobs/", json=body, headers=headers, timeout=60
        )

    threads = [threading.Thread(target=post, args=(n,)) for n in range(len(urls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return replies  # type: ignore[return-value]


def test_two_web_processes_two_workers_and_a_beat_do_nothing_twice(
    real_worker, slurm_allocation, researcher, pi, project
):
    overdue = AllocationFactory(
        project=project,
        status="active",
        start_date=timezone.localdate() - dt.timedelta(days=40),
        end_date=timezone.localdate() - dt.timedelta(days=1),
    )
    _due_digest(pi, project)
    queue = f"two-{uuid.uuid4().hex[:8]}"
    token = account_token_create(user=researcher)[1]
    body = {"allocation": slurm_allocation.pk, "gpus": 1, "wall_time_minutes": 5, "params": PARAMS}
    with (
        running_web(queue=queue) as web_a,
        running_web(queue=queue) as web_b,
        real_worker({"EMAIL_URL": "console://"}, queue=queue) as first,
        real_worker({"EMAIL_URL": "console://"}, queue=queue) as second,
    ):
        launched = []
        for _ in range(3):  # each enqueues its submission on commit
            replies = _launch_on_both([web_a, web_b], token, body)
            assert [r.status_code for r in replies] == [201, 201], [r.text for r in replies]
            ids = {r.json()["id"] for r in replies}
            assert len(ids) == 1, ids  # one job for the key: the other reply replays it
            replayed = sorted(r.headers.get("Idempotent-Replayed", "") for r in replies)
            assert replayed == ["", "true"], replayed
            launched += ids
        jobs = list(Job.objects.filter(pk__in=launched))
        assert Job.objects.filter(allocation=slurm_allocation).count() == len(jobs) == 3
        for job in jobs:
            tasks.submit_job.delay(job.pk)  # and a second copy reaches the other worker
        _both(expire_allocations)
        _both(send_usage_digests)

        def settled() -> bool:
            _both(tasks.poll_jobs)
            _both(tasks.ingest_usage)
            time.sleep(2)
            done = Job.objects.filter(pk__in=[j.pk for j in jobs], state="succeeded")
            return done.filter(gpu_seconds__gt=0).count() == len(jobs)

        wait_for(settled, timeout=300, every=0, what="the jobs to run and be charged")
        _both(tasks.ingest_usage)  # the same sacct rows, offered twice more
        time.sleep(5)
        logs = [first.log_path, second.log_path]

    backend = slurm_backend.slurm_client(slurm_allocation.facility)
    job_type = ContentType.objects.get_for_model(Job)
    for job in Job.objects.filter(pk__in=[j.pk for j in jobs]):
        assert jobs_named(backend, job.token) == [job.scheduler_id]  # submitted once
        moves = list(
            Event.objects.filter(content_type=job_type, object_id=job.pk).values_list(
                "to_state", flat=True
            )
        )
        assert len(moves) == len(set(moves)), moves  # each move audited once
        records = UsageRecord.objects.filter(job_id=job.pk)
        assert job.gpu_seconds == sum(r.gpu_seconds for r in records)

    ids = [slurm_allocation.pk]
    assert ledger_stored(allocation_ids=ids) == ledger_recomputed(allocation_ids=ids)
    assert rollup_drifted(allocation_ids=ids) == set()

    allocation_type = ContentType.objects.get_for_model(Allocation)
    expiries = Event.objects.filter(
        content_type=allocation_type, object_id=overdue.pk, to_state="expired"
    )
    assert expiries.count() == 1

    text = "".join(log.read_text() for log in logs)
    assert text.count("Subject: Weekly usage digest") == 1
