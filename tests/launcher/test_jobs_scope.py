"""A member's jobs and sweeps lists scoped by their projects' allocation ids
(allocations.selectors.member_allocation_ids): every allocation of every project they belong to,
nothing else, and the rows filtered on the job's own column, not joined to each allocation."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from launcher import selectors
from launcher.models import Job
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
    page = [q["sql"] for q in queries.captured_queries if 'FROM "launcher_job"' in q["sql"]][-1]
    where = page.split(" WHERE ", 1)[1]
    assert '"launcher_job"."allocation_id" IN' in where
    assert '"allocations_allocation"."project_id"' not in where
    assert {s.allocation_id for s in selectors.visible_jobs(outsider)} == {theirs.pk}


def test_someone_in_no_project_lists_no_job(api, project, facility, researcher, outsider):
    Job.objects.bulk_create(
        [_job(AllocationFactory(project=project, facility=facility), researcher, 0)]
    )
    assert api.as_user(outsider).get("/api/v1/jobs/").json()["count"] == 0
    assert not selectors.visible_sweeps(outsider).exists()
