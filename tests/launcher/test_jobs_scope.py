"""A member's jobs and sweeps lists scoped by their projects' allocation ids
(allocations.selectors.member_allocation_ids): every allocation of every project they belong to,
nothing else, and the rows filtered on the job's own column, not joined to each allocation."""

from __future__ import annotations

import datetime as dt

from django.db import connection
from django.test.utils import CaptureQueriesContext

from launcher import selectors
from launcher.models import Job
from portal.apiconf import Pagination
from tests.factories import AllocationFactory, ProjectFactory
from tests.launcher.test_job_count import _job


def test_a_member_lists_the_jobs_of_every_allocation_of_their_projects_only(
    api, project, other_project, facility, researcher, outsider
):
    second = ProjectFactory(code="ABC-SEC-003", pi=researcher)  # a PI is a member too
    mine = [AllocationFactory(project=p, facility=facility) for p in (project, project, second)]
    theirs = AllocationFactory(project=other_project, facility=facility)
    jobs = [_job(a, researcher, n) for n, a in enumerate(mine)] + [_job(theirs, outsider, 9)]
    Job.objects.bulk_create(jobs)

    with CaptureQueriesContext(connection) as queries:
        body = api.as_user(researcher).get("/api/v1/jobs/").json()

    listed = {row["id"] for row in body["results"]}
    assert listed == set(Job.objects.exclude(allocation=theirs).values_list("pk", flat=True))
    assert body["count"] == 3
    read = [q["sql"] for q in queries.captured_queries if 'FROM "launcher_job"' in q["sql"]]
    wheres = [sql.split(" WHERE ", 1)[1] for sql in read]
    assert all('"launcher_job"."allocation_id" IN' in where for where in wheres[:2])  # count, ids
    assert not [where for where in wheres if '"allocations_allocation"."project_id"' in where]
    assert {s.allocation_id for s in selectors.visible_jobs(outsider)} == {theirs.pk}


def test_someone_in_no_project_lists_no_job(api, project, facility, researcher, outsider):
    Job.objects.bulk_create(
        [_job(AllocationFactory(project=project, facility=facility), researcher, 0)]
    )
    assert api.as_user(outsider).get("/api/v1/jobs/").json()["count"] == 0
    assert not selectors.visible_sweeps(outsider).exists()


def test_a_page_is_picked_by_ids_then_read_with_its_joins_in_the_lists_order(
    api, project, facility, researcher, monkeypatch
):
    """portal.apiconf.Pagination with `pages_by_id`: the page's ids from the job rows alone
    (ordered, offset), then those rows with their joins; every page in the list's order."""
    allocations = [AllocationFactory(project=project, facility=facility) for _ in range(3)]
    Job.objects.bulk_create([_job(allocations[n % 3], researcher, n) for n in range(7)])
    Job.objects.filter(token="portal-job-count4").update(
        created_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    )
    expected = list(Job.objects.order_by("-created_at", "-id").values_list("pk", flat=True))
    monkeypatch.setattr(Pagination, "page_size", 3)
    client = api.as_user(researcher)
    listed = []
    for page in (1, 2, 3):
        with CaptureQueriesContext(connection) as queries:
            body = client.get(f"/api/v1/jobs/?page={page}").json()
        listed += [row["id"] for row in body["results"]]
        ids, rows = [
            q["sql"] for q in queries.captured_queries if 'FROM "launcher_job"' in q["sql"]
        ][1:]
        assert ids.startswith('SELECT "launcher_job"."id" AS "pk" FROM "launcher_job" WHERE')
        assert " JOIN " not in ids
        assert ("OFFSET" in ids) == (page > 1)
        assert '"launcher_job"."id" IN' in rows and '"allocations_project"' in rows
        assert body["results"][0]["allocation"] is not None
    assert listed == expected and body["count"] == 7
