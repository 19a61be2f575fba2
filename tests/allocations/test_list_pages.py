"""The list pages /requests/ and /allocations/: the rows the user may see (never another
project's), newest first, filtered by status, 50 a page in a bounded number of queries, and
linked from the header for signed-in users."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from allocations.models import Allocation, AllocationRequest
from tests.factories import AllocationFactory, RequestFactory, charge

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def request_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<a href="/requests/(\d+)/">#\1</a>', html)]


def allocation_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'<a href="/allocations/(\d+)/">#\1</a>', html)]


def requests_of(project, facility, n, **fields) -> list[AllocationRequest]:
    return [RequestFactory(project=project, facility=facility, **fields) for _ in range(n)]


def test_the_requests_page_lists_the_members_requests_newest_first_and_no_one_elses(
    researcher, project, other_project, facility
):
    draft, submitted = requests_of(project, facility, 2)
    AllocationRequest.objects.filter(pk=submitted.pk).update(
        status="submitted", granted_gpu_hours=None
    )
    others = requests_of(other_project, facility, 2)
    response = signed_in(researcher).get("/requests/")
    html = response.content.decode()
    assert response.status_code == 200
    assert request_ids(html) == [submitted.pk, draft.pk]
    assert all(f"/requests/{r.pk}/" not in html for r in others)
    assert project.code in html and other_project.code not in html
    assert '<span class="status status-submitted">Submitted</span>' in html
    assert '1,000 <span class="muted">GPU-hours asked</span>' in html
    assert " ago</time>" in html


def test_a_granted_request_shows_what_was_granted_of_what_was_asked(researcher, project, facility):
    RequestFactory(
        project=project, facility=facility, status="approved", gpu_hours=1000, granted_gpu_hours=600
    )
    html = signed_in(researcher).get("/requests/").content.decode()
    assert '600 <span class="muted">of 1,000 GPU-hours asked</span>' in html


def test_reviewers_see_the_requests_the_selectors_let_them_see(
    reviewer, project, other_project, facility
):
    mine, theirs = RequestFactory(project=project), RequestFactory(project=other_project)
    assert sorted(request_ids(signed_in(reviewer).get("/requests/").content.decode())) == sorted(
        [mine.pk, theirs.pk]
    )


def test_the_status_filter_shows_one_status_and_an_unknown_one_is_said_not_a_500(
    researcher, project, facility
):
    (draft,) = requests_of(project, facility, 1)
    (submitted,) = requests_of(project, facility, 1, status="submitted")
    client = signed_in(researcher)
    html = client.get("/requests/?status=submitted").content.decode()
    assert request_ids(html) == [submitted.pk]
    assert '<option value="submitted" selected>' in html
    assert "1 submitted request," in html
    html = client.get("/requests/?status=rejected").content.decode()
    assert request_ids(html) == [] and "No rejected requests." in html
    response = client.get("/requests/?status=<b>lost</b>")
    html = response.content.decode()
    assert response.status_code == 200
    assert "There is no status &quot;&lt;b&gt;lost&lt;/b&gt;&quot;: showing every status." in html
    assert sorted(request_ids(html)) == sorted([draft.pk, submitted.pk])


def test_the_allocations_page_lists_the_members_allocations_with_usage_and_no_one_elses(
    researcher, project, other_project, facility
):
    active = AllocationFactory(project=project, facility=facility, gpu_hours=100)
    charge(allocation=active, source="local", external_id="u1", gpu_seconds=3 * 3600)
    expired = AllocationFactory(project=project, facility=facility, status="expired")
    theirs = AllocationFactory(project=other_project, facility=facility)
    client = signed_in(researcher)
    html = client.get("/allocations/").content.decode()
    assert sorted(allocation_ids(html)) == sorted([active.pk, expired.pk])
    assert f"/allocations/{theirs.pk}/" not in html and other_project.code not in html
    # The usage bar the project and staff pages show (includes/usage_bar.html).
    assert 'title="3 (exact)">3.00</span> used · 100 GPU-hours granted' in html
    assert active.end_date.strftime("%d %b %Y") in html
    html = client.get("/allocations/?status=expired").content.decode()
    assert allocation_ids(html) == [expired.pk]
    html = client.get("/allocations/?status=nonsense").content.decode()
    assert 'There is no status "nonsense"' in html.replace("&quot;", '"')
    assert len(allocation_ids(html)) == 2


def test_empty_pages_say_so_and_offer_a_new_request(outsider):
    client = signed_in(outsider)
    html = client.get("/requests/").content.decode()
    assert "No requests yet." in html
    assert f'<a class="button primary" href="{reverse("request-new")}">New request</a>' in html
    assert "No allocations yet." in client.get("/allocations/").content.decode()


def test_the_pages_are_50_rows_a_page_and_keep_the_filter_across_pages(
    researcher, project, facility
):
    rows = requests_of(project, facility, 55, status="submitted")
    requests_of(project, facility, 3)  # drafts: filtered out
    client = signed_in(researcher)
    first = client.get("/requests/?status=submitted").content.decode()
    assert len(request_ids(first)) == 50 and "Page 1 of 2" in first
    assert 'href="?status=submitted&amp;page=2"' in first
    second = client.get("/requests/?status=submitted&page=2").content.decode()
    assert set(request_ids(second)) == {r.pk for r in rows[:5]}  # the oldest five
    assert client.get("/requests/?page=zzz").status_code == 200


def count_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


@pytest.mark.parametrize("who", ["researcher", "reviewer"])
def test_the_query_count_does_not_grow_with_rows(request, who, project, facility):
    client = signed_in(request.getfixturevalue(who))
    requests_of(project, facility, 5)
    for _ in range(5):
        AllocationFactory(project=project, facility=facility)
    few = {url: count_queries(client, url) for url in ("/requests/", "/allocations/")}
    requests_of(project, facility, 55)
    for _ in range(55):
        AllocationFactory(project=project, facility=facility)
    many = {url: count_queries(client, url) for url in ("/requests/", "/allocations/")}
    assert many == few
    assert Allocation.objects.count() == 60


def test_anonymous_visitors_are_sent_to_log_in(client):
    for url in ("/requests/", "/allocations/"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"] == f"{reverse('login')}?next={url}"


def test_the_header_links_the_lists_for_members(researcher, reviewer, client):
    html = signed_in(researcher).get("/requests/").content.decode()
    assert '<a href="/requests/" aria-current="page">Requests</a>' in html
    assert re.search(r'<a href="/allocations/"\s*>Allocations</a>', html)
    anonymous = client.get(reverse("login")).content.decode()
    assert 'href="/requests/"' not in anonymous and 'href="/allocations/"' not in anonymous
    # Reviewers' and staff's header is their tools (its one line at 1280 px is full:
    # tests/portal/test_layout.py); the pages answer them all the same.
    html = signed_in(reviewer).get("/allocations/").content.decode()
    assert 'href="/allocations/"' not in html.split("</header>")[0]


def test_requests_of_any_age_show_how_long_ago_they_changed(researcher, project, facility):
    req = RequestFactory(project=project, facility=facility)
    AllocationRequest.objects.filter(pk=req.pk).update(
        updated_at=timezone.now() - dt.timedelta(days=3, hours=2)
    )
    html = signed_in(researcher).get("/requests/").content.decode()
    assert ">3 d 2 h ago</time>" in html


def test_a_cpu_facilitys_rows_count_cpu_hours_in_the_same_query(
    researcher, reviewer, project, facility
):
    """Issue 39: the lists and the dashboard said "GPU-hours" over the CPU workstation's rows.
    Each row says its facility's unit, read in the rows' own query (no query per row)."""
    from tests.factories import FacilityFactory, NodeTypeFactory

    workstation = FacilityFactory(slug="workstation", name="Workstation", backend="local")
    NodeTypeFactory(facility=workstation, name="local-cpu", device="cpu", cpu_cores=2)
    AllocationFactory(project=project, facility=workstation, gpu_hours=40)
    AllocationFactory(project=project, facility=facility, gpu_hours=100)  # GPUs: no node types
    RequestFactory(
        project=project,
        facility=workstation,
        requested_by=researcher,
        gpu_hours=40,
        status="submitted",
        submitted_at=timezone.now(),
    )
    client = Client()
    client.force_login(researcher)

    allocations = client.get("/allocations/").content.decode()
    assert "40 CPU-hours granted" in allocations and "100 GPU-hours granted" in allocations
    assert '<span class="muted">CPU-hours asked</span>' in client.get("/requests/").content.decode()
    dashboard = client.get("/").content.decode()
    assert "40 CPU-hours granted" in dashboard and "100 GPU-hours granted" in dashboard
    project_page = client.get(f"/projects/{project.pk}/").content.decode()
    assert "40 CPU-hours granted" in project_page and "100 GPU-hours granted" in project_page
    assert "40 CPU-hours asked" in project_page  # its requests too
    client.force_login(reviewer)
    queue = client.get("/review/").content.decode()
    staff_home = client.get("/").content.decode()
    for page in (queue, staff_home):
        assert '40 <span class="muted">CPU-hours</span>' in page
    client.force_login(researcher)
    with CaptureQueriesContext(connection) as one:
        client.get("/allocations/")
    AllocationFactory(project=project, facility=workstation, gpu_hours=10)
    with CaptureQueriesContext(connection) as two:
        client.get("/allocations/")
    assert len(two) == len(one)
