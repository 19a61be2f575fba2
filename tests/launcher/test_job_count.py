"""The total of jobs PostgreSQL keeps (launcher/models/job_count.py, migration 0014), and the
staff's unfiltered jobs list paged by it rather than by a COUNT of every row."""

from __future__ import annotations

import threading

from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from launcher.models import Job, JobCount
from tests.factories import AllocationFactory


def _job(allocation, user, n: int) -> Job:
    return Job(
        allocation=allocation,
        created_by=user,
        token=f"portal-job-count{n}",
        state="succeeded",
        params={"model": "densenet121", "epochs": 1},
    )


def _kept_equals_rows() -> int:
    total = JobCount.objects.total()
    assert total == Job.objects.count()
    return total


def test_the_kept_total_follows_every_way_jobs_are_written(postgres, project, facility, admin):
    allocation = AllocationFactory(project=project, facility=facility)
    assert _kept_equals_rows() == 0
    first = _job(allocation, admin, 0)
    first.save()
    assert _kept_equals_rows() == 1
    Job.objects.bulk_create([_job(allocation, admin, n) for n in range(1, 8)])  # one statement
    assert _kept_equals_rows() == 8
    first.delete()
    assert _kept_equals_rows() == 7
    Job.objects.filter(token__in=["portal-job-count1", "portal-job-count2"]).delete()
    assert _kept_equals_rows() == 5
    with connection.cursor() as cursor:  # what an operator's bulk tidy-up would do
        cursor.execute("TRUNCATE launcher_job CASCADE")
    assert _kept_equals_rows() == 0


def test_concurrent_writers_each_add_to_their_own_shard(postgres, project, facility, admin):
    allocation = AllocationFactory(project=project, facility=facility)
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for n in range(10):
                Job.objects.bulk_create([_job(allocation, admin, 1000 * worker + n)])
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert _kept_equals_rows() == 40
    assert JobCount.objects.filter(jobs__gt=0).count() >= 2  # several backends, several shards


def test_the_staffs_unfiltered_list_reads_the_total_and_every_other_list_counts(
    postgres, api, project, other_project, facility, admin, researcher
):
    mine = AllocationFactory(project=project, facility=facility)
    theirs = AllocationFactory(project=other_project, facility=facility)
    Job.objects.bulk_create(
        [_job(mine, researcher, n) for n in range(3)]
        + [_job(theirs, admin, n) for n in range(3, 8)]
    )

    def listed(user, query: str = "") -> tuple[int, list[str]]:
        api.as_user(user)
        with CaptureQueriesContext(connection) as queries:
            response = api.get(f"/api/v1/jobs/{query}")
        assert response.status_code == 200, response.content
        counts = [
            q["sql"] for q in queries if "COUNT(*)" in q["sql"] and "launcher_job" in q["sql"]
        ]
        return response.json()["count"], counts

    count, counts = listed(admin)
    assert count == 8 and counts == []  # the kept total, no COUNT
    count, counts = listed(admin, f"?allocation={theirs.pk}")
    assert count == 5 and len(counts) == 1  # a filtered list counts its rows
    count, counts = listed(researcher)
    assert count == 3 and len(counts) == 1  # a member's list is theirs, counted


def test_the_hourly_check_rewrites_a_total_left_wrong_by_writes_with_triggers_off(
    postgres, project, facility, admin, caplog
):
    from launcher.job_count import job_count_check

    allocation = AllocationFactory(project=project, facility=facility)
    Job.objects.bulk_create([_job(allocation, admin, n) for n in range(4)])
    assert job_count_check() == 0  # nothing to correct
    with connection.cursor() as cursor:  # a restore that bypassed the triggers
        cursor.execute("ALTER TABLE launcher_job DISABLE TRIGGER launcher_job_count_insert")
        Job.objects.bulk_create([_job(allocation, admin, n) for n in range(4, 7)])
        cursor.execute("ALTER TABLE launcher_job ENABLE TRIGGER launcher_job_count_insert")
    assert JobCount.objects.total() == 4 and Job.objects.count() == 7
    assert job_count_check() == 3
    assert _kept_equals_rows() == 7
    assert "kept 4, rows 7" in caplog.text
    assert job_count_check() == 0
