"""The launcher's and the cloud's pages and API lists run a bounded number of queries, whatever
the number of jobs, sweep cells, nodes and usage rows behind them."""

from __future__ import annotations

import datetime as dt
import re
import secrets
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import UsageRecord
from launcher.cloud.models import Cluster, Node
from launcher.models import Job, Sweep
from tests.factories import AllocationFactory, charge

pytestmark = pytest.mark.django_db


@pytest.fixture
def allocation(project, facility):
    return AllocationFactory(project=project, facility=facility, gpu_hours=Decimal("500"))


@pytest.fixture
def sweep(allocation, researcher):
    return Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        size=0,
        token=f"portal-sweep-{secrets.token_hex(6)}",
        grid={
            "models": ["densenet121"],
            "lrs": [1e-4],
            "lr_steps": [10],
            "weight_decays": [1e-4],
            "folds": 5,
        },
    )


@pytest.fixture
def cluster(allocation, facility):
    return Cluster.objects.create(
        allocation=allocation,
        facility=facility,
        region="eu-west-2",
        bucket="bucket",
        prefix=f"alloc-{allocation.pk}",
        state="ready",
    )


def grow(allocation, researcher, sweep, cluster, n):
    """n more standalone jobs, sweep cells, worker nodes and days of usage."""
    now = timezone.now()
    for _ in range(n):
        done = {"accuracy": 0.9, "auc": 0.95}
        Job.objects.create(
            allocation=allocation,
            created_by=researcher,
            state="succeeded",
            token=f"portal-job-{secrets.token_hex(6)}",
            metrics=done,
            params={"model": "densenet121", "epochs": 3},
            progress={"epoch": 3, "epochs": 3, "loss": 0.2},
        )
        sweep.size += 1
        Job.objects.create(
            allocation=allocation,
            sweep=sweep,
            created_by=researcher,
            state="succeeded",
            token=sweep.token,
            array_index=sweep.size,
            params={
                "model": "densenet121",
                "lr": 1e-4,
                "lr_step": 10,
                "weight_decay": 1e-4,
                "fold": sweep.size % 5,
                "epochs": 3,
            },
            metrics={"accuracy": {"value": 0.9}},
        )
        Node.objects.create(
            cluster=cluster,
            role="worker",
            token=secrets.token_hex(8),
            instance_id=f"i-{secrets.token_hex(8)}",
            instance_type="g5.xlarge",
            market="spot",
            gpus=1,
            state="running",
            running_at=now,
        )
        day = now - dt.timedelta(days=UsageRecord.objects.count())
        charge(
            allocation=allocation,
            source="cloud",
            external_id=secrets.token_hex(8),
            period_start=day,
            period_end=day,
            gpu_seconds=3600,
            cost=Decimal("1.2"),
            detail={"instance_type": "g5.xlarge"},
        )
    sweep.save(update_fields=["size"])


def count(client, url):
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200, url
    return len(ctx.captured_queries)


@pytest.mark.parametrize(
    "url",
    [
        "/allocations/{allocation}/",
        "/jobs/{job}/",
        "/sweeps/{sweep}/",
        "/clusters/{cluster}/",
        "/api/v1/jobs/",
        "/api/v1/sweeps/{sweep}/",
        "/api/v1/clusters/",
    ],
)
def test_query_count_does_not_grow_with_rows(researcher, allocation, sweep, cluster, api, url):
    grow(allocation, researcher, sweep, cluster, 1)
    job = Job.objects.filter(sweep__isnull=True).first()
    path = url.format(allocation=allocation.pk, job=job.pk, sweep=sweep.pk, cluster=cluster.pk)
    if path.startswith("/api/"):
        client = api.as_user(researcher)
    else:
        client = Client()
        client.force_login(researcher)
    client.get(path)  # warm the per-process caches (content types, the session) first
    # More rows after the warm-up, as before the second count: both counts are of a page whose
    # cached usage charts were made stale by the new charges (allocations.charts).
    grow(allocation, researcher, sweep, cluster, 1)
    small = count(client, path)
    grow(allocation, researcher, sweep, cluster, 12)
    large = count(client, path)
    assert large == small, f"{path}: {small} queries with few rows, {large} with many"


@pytest.mark.parametrize("single_jobs", [0, 60])
def test_the_allocation_page_counts_each_sweeps_finished_and_running_cells(
    researcher, allocation, sweep, single_jobs
):
    """Each sweep gets its own counts (launcher.selectors.allocation_sweeps): taken from the
    latest jobs the page reads anyway while they are all of the allocation's (fewer than 50),
    from their own grouped query past that."""
    other = Sweep.objects.create(
        allocation=allocation,
        created_by=researcher,
        size=1,
        token=f"portal-sweep-{secrets.token_hex(6)}",
        grid=sweep.grid,
    )
    Job.objects.bulk_create(
        [
            Job(
                allocation=allocation,
                created_by=researcher,
                state="succeeded",
                token=f"portal-job-{secrets.token_hex(6)}",
                params={"model": "densenet121"},
            )
            for _ in range(single_jobs)
        ]
    )
    for index, state in enumerate(["succeeded", "failed", "running", "queued"], start=1):
        Job.objects.create(
            allocation=allocation,
            sweep=sweep,
            created_by=researcher,
            state=state,
            token=sweep.token,
            array_index=index,
            params={"model": "densenet121"},
        )
    Job.objects.create(
        allocation=allocation,
        sweep=other,
        created_by=researcher,
        state="running",
        token=other.token,
        array_index=1,
        params={},
    )
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    rows = {
        int(pk): cells
        for pk, cells in re.findall(
            r'<tr><td><a href="/sweeps/(\d+)/">.*?</a></td>((?:<td>[^<]*</td>){3})<td>', page
        )
    }
    assert rows[sweep.pk].startswith("<td>0</td><td>2</td><td>1</td>")  # size, done, running
    assert rows[other.pk].startswith("<td>1</td><td>0</td><td>1</td>")


def test_an_allocation_without_sweeps_reads_no_sweeps(researcher, allocation):
    """Its latest jobs, all of them, hold no sweep cell: there is no sweep to read."""
    Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        state="succeeded",
        token=f"portal-job-{secrets.token_hex(6)}",
        params={"model": "densenet121"},
    )
    client = Client()
    client.force_login(researcher)
    with CaptureQueriesContext(connection) as ctx:
        page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    assert "No sweeps yet." in page and 'href="/jobs/' in page
    assert not [q for q in ctx.captured_queries if '"launcher_sweep"' in q["sql"]]


@pytest.mark.parametrize("cells", [3, 60])
def test_the_jobs_table_lists_single_jobs_only_however_many_cells_are_newer(
    researcher, allocation, sweep, cells
):
    """The jobs table and the timeline of use share one read of the latest 50 jobs
    (launcher.selectors.latest_jobs); with 50 or more newer sweep cells the table reads its
    single jobs itself."""
    single = Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        state="succeeded",
        token=f"portal-job-{secrets.token_hex(6)}",
        params={"model": "densenet121"},
    )
    Job.objects.bulk_create(
        [
            Job(
                allocation=allocation,
                sweep=sweep,
                created_by=researcher,
                state="queued",
                token=sweep.token,
                array_index=i,
                params={},
                created_at=single.created_at + dt.timedelta(seconds=i),
            )
            for i in range(1, cells + 1)
        ]
    )
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/allocations/{allocation.pk}/").content.decode()
    table = re.search(r'<table id="allocation-jobs">(.*?)</table>', page, re.DOTALL).group(1)
    assert re.findall(r'href="/jobs/(\d+)/"', table) == [str(single.pk)]
    timeline = re.search(r'<table id="allocation-timeline">(.*?)</table>', page, re.DOTALL).group(1)
    assert len(re.findall(r'href="/jobs/\d+/"', timeline)) == min(cells + 1, 50)
