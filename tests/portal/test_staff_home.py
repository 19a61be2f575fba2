"""The staff home lists what waits for staff (the waiting request with its age, the failed
allocation and the one waiting for manual activation, allocations near their end, failing jobs,
facilities with no backend), each with its action; `/` shows it to reviewers; others get 403.
Its query count does not grow with the rows."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import Allocation
from launcher.models import Job
from tests.factories import AllocationFactory, FacilityFactory, charge

pytestmark = pytest.mark.django_db


@pytest.fixture
def queues(project, researcher, full_request, facility):
    manual = FacilityFactory(slug="azure-sub", name="Azure subscription", backend="manual")
    FacilityFactory(slug="bare-slurm", name="Bare Slurm", backend="slurm", backend_settings={})
    failed = AllocationFactory(
        project=project,
        facility=facility,
        status="failed",
        status_reason="Slurm account could not be set up: refused",
    )
    waiting = AllocationFactory(project=project, facility=manual, status="provisioning")
    near = AllocationFactory(
        project=project,
        facility=facility,
        gpu_hours=Decimal("10"),
        end_date=timezone.localdate() + dt.timedelta(days=100),
    )
    charge(
        allocation=near,
        source="local",
        external_id="u1",
        period_start=timezone.now(),
        period_end=timezone.now(),
        gpu_seconds=9 * 3600,
    )
    ending = AllocationFactory(
        project=project, facility=facility, end_date=timezone.localdate() + dt.timedelta(days=3)
    )
    calm = AllocationFactory(
        project=project, facility=facility, end_date=timezone.localdate() + dt.timedelta(days=100)
    )
    job = Job.objects.create(
        allocation=calm,
        created_by=researcher,
        token="portal-job-x1",
        state="failed",
        state_reason="exit code 1",
        finished_at=timezone.now() - dt.timedelta(hours=2),
    )
    return {
        "failed": failed,
        "waiting": waiting,
        "near": near,
        "ending": ending,
        "calm": calm,
        "job": job,
    }


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_reviewer_home_lists_what_waits_with_actions(reviewer, full_request, queues):
    html = _client(reviewer).get("/staff/").content.decode()
    decide = f'aria-label="Decide on request #{full_request.pk}"'
    assert f'href="/requests/{full_request.pk}/" {decide}' in html
    assert f'data-allocation="{queues["failed"].pk}"' in html and "refused" in html
    assert f'data-allocation="{queues["waiting"].pk}"' in html
    assert f"/allocations/{queues['near'].pk}/" in html
    assert f"/allocations/{queues['ending'].pk}/" in html
    assert f'/allocations/{queues["calm"].pk}/"' not in html.split('id="h-failing"')[0]
    assert f"/jobs/{queues['job'].pk}/" in html and "exit code 1" in html
    assert "Azure subscription" in html and "Bare Slurm" in html
    assert "Baskerville</a>" not in html.split('id="h-facilities"')[1]
    counts = html.split('aria-label="Counts">')[1].split("</ul>")[0]
    assert "<strong>1</strong> request waiting" in counts  # one of each, in the singular
    assert "<strong>1</strong> job failed in 7 days" in counts
    assert "<strong>2</strong> allocations near their end</a>" in counts


def test_slash_shows_the_staff_home_to_reviewers_and_the_dashboard_to_others(
    reviewer, researcher, queues
):
    assert "Staff home" in _client(reviewer).get("/").content.decode()
    assert "Hello" in _client(reviewer).get("/?view=mine").content.decode()
    assert "Staff home" not in _client(researcher).get("/").content.decode()
    assert _client(researcher).get("/staff/").status_code == 403


def test_an_admin_retries_the_failed_and_activates_the_manual_in_one_click(
    admin, reviewer, queues, django_capture_on_commit_callbacks
):
    client = _client(admin)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"/staff/allocations/{queues['waiting'].pk}/activate/")
    assert Allocation.objects.get(pk=queues["waiting"].pk).status == "active"
    with django_capture_on_commit_callbacks(execute=False):
        client.post(f"/staff/allocations/{queues['failed'].pk}/retry/")
    assert Allocation.objects.get(pk=queues["failed"].pk).status == "provisioning"
    # A reviewer who is not an admin is refused by the service, with a message.
    other = AllocationFactory(project=queues["failed"].project, status="failed")
    response = _client(reviewer).post(f"/staff/allocations/{other.pk}/retry/", follow=True)
    assert "Only admins" in response.content.decode()
    assert Allocation.objects.get(pk=other.pk).status == "failed"


def test_staff_home_queries_are_bounded(reviewer, queues, project, facility, researcher):
    client = _client(reviewer)
    with CaptureQueriesContext(connection) as before:
        client.get("/staff/")
    for n in range(15):
        a = AllocationFactory(project=project, facility=facility, status="failed")
        Job.objects.create(
            allocation=a,
            created_by=researcher,
            token=f"portal-job-n{n}",
            state="failed",
            finished_at=timezone.now(),
        )
    with CaptureQueriesContext(connection) as after:
        client.get("/staff/")
    assert len(after) == len(before)


def test_jobs_and_sweeps_are_in_the_admin_with_filters(admin, queues):
    client = _client(admin)
    jobs = client.get("/admin/launcher/job/?state__exact=failed&q=ABC")
    assert jobs.status_code == 200 and "portal-job-x1" not in jobs.content.decode()
    assert f"/admin/launcher/job/{queues['job'].pk}/change/" in jobs.content.decode()
    assert client.get("/admin/launcher/sweep/").status_code == 200
    allocations = client.get("/admin/allocations/allocation/").content.decode()
    headers = allocations.split("<thead>")[1].split("</thead>")[0]
    assert headers.index("column-status") < headers.index("column-facility")


def test_the_home_shows_the_soonest_near_their_end_and_links_to_all_of_them(
    reviewer, researcher, project, facility
):
    """The staff home lists the LIMIT allocations near their end that end soonest and links
    to the allocations list filtered to every one of them, in the same order, which a member
    sees for their own projects only."""
    from allocations.list_selectors import NEAR_END
    from portal.staff.selectors import LIMIT

    today = timezone.localdate()
    near = [  # within 14 days, ties among them (the soonest end, then the oldest)
        AllocationFactory(
            project=project, facility=facility, end_date=today + dt.timedelta(days=12 - n % 12)
        )
        for n in range(LIMIT + 5)
    ]
    AllocationFactory(project=project, facility=facility, end_date=today + dt.timedelta(days=90))
    AllocationFactory(
        project=project, facility=facility, end_date=today + dt.timedelta(days=2), status="expired"
    )
    soonest = sorted(near, key=lambda a: (a.end_date, a.pk))
    html = _client(reviewer).get("/staff/").content.decode()
    card = html.split('id="h-near"')[1].split("</section>")[0]
    shown = [int(pk) for pk in re.findall(r'href="/allocations/(\d+)/"', card)]
    assert shown == [a.pk for a in soonest[:LIMIT]]
    link = f'href="/allocations/?status={NEAR_END}">All {LIMIT + 5} near their end</a>'
    assert link in card
    kpi = f'href="/allocations/?status={NEAR_END}"><strong>{LIMIT + 5}</strong> allocations near'
    assert kpi in html
    listed = _client(reviewer).get(f"/allocations/?status={NEAR_END}").content.decode()
    assert f"{LIMIT + 5} allocations near their end" in listed
    rows = [int(pk) for pk in re.findall(r'<td><a href="/allocations/(\d+)/">', listed)]
    assert rows == [a.pk for a in soonest]
    assert "Near their end</option>" in listed
    outsider_view = _client(researcher).get(f"/allocations/?status={NEAR_END}").content.decode()
    assert re.findall(r'<td><a href="/allocations/(\d+)/">', outsider_view) == [
        str(a.pk) for a in soonest
    ]  # the researcher is a member of the project


def test_the_list_near_their_end_is_empty_in_words(researcher):
    from allocations.list_selectors import NEAR_END

    page = _client(researcher).get(f"/allocations/?status={NEAR_END}").content.decode()
    assert "No allocation is near its end." in page
