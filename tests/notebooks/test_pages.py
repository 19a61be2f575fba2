"""The notebook pages: the allocation page's "Open a notebook" form (estimate, idle limit), its
sessions (Open only for the owner, Stop), the one timeline of jobs and notebooks, refusals on
the form, the session page (404 for outsiders), and bounded queries whatever the rows."""

from __future__ import annotations

import secrets
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from launcher.models import Job
from launcher.notebooks import services
from launcher.notebooks.models import NotebookSession
from tests.factories import AllocationFactory, FacilityFactory
from tests.notebooks.fixtures import ago, colleague, nb_allocation, nb_dirs, nb_facility, set_state  # noqa: F401  (fixtures)

pytestmark = pytest.mark.django_db


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_allocation_page_offers_a_notebook_with_its_estimate_and_idle_limit(
    researcher, nb_allocation
):
    page = browser(researcher).get(f"/allocations/{nb_allocation.pk}/").content.decode()
    assert 'id="notebook-form"' in page and "Open a notebook" in page
    assert '<strong id="notebook-reserve">2 GPU-hours</strong>' in page  # 1 GPU x 2 h by default
    assert "after <strong>30 minutes</strong> idle" in page
    assert "Nothing has run on this allocation yet." in page


def test_opening_from_the_page_reserves_and_lands_on_the_session(researcher, nb_allocation):
    response = browser(researcher).post(
        f"/allocations/{nb_allocation.pk}/notebook/", {"gpus": 2, "hours": "1.5"}
    )
    session = NotebookSession.objects.get()
    assert response.status_code == 302 and response.url == f"/notebooks/{session.pk}/"
    assert session.reserved_gpu_seconds == 10800
    page = browser(researcher).get(response.url).content.decode()
    assert "2 GPUs for 1.5 h" in page and "Starting" in page


def test_a_refusal_is_on_the_form_with_its_status(researcher, nb_allocation):
    client = browser(researcher)
    response = client.post(f"/allocations/{nb_allocation.pk}/notebook/", {"gpus": 2, "hours": 8})
    assert response.status_code == 409
    assert "GPU-hours short" in response.content.decode()
    response = client.post(f"/allocations/{nb_allocation.pk}/notebook/", {"gpus": 5, "hours": 1})
    assert response.status_code == 400 and not NotebookSession.objects.exists()


def test_a_facility_without_notebooks_says_why(researcher, project):
    jade = FacilityFactory(slug="jade2", name="JADE2", backend="slurm")  # not configured
    allocation = AllocationFactory(project=project, facility=jade)
    page = browser(researcher).get(f"/allocations/{allocation.pk}/").content.decode()
    assert 'id="notebook-form"' not in page
    assert "JADE2 cannot run notebook sessions from the portal" in page


def test_only_the_owner_gets_open_and_others_cannot_see_the_session(
    researcher, colleague, outsider, nb_allocation
):
    session = set_state(
        services.notebook_start(actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1),
        "running",
        started_at=ago(minutes=3),
        last_activity=ago(minutes=2),
    )
    mine = browser(researcher).get(f"/allocations/{nb_allocation.pk}/").content.decode()
    assert f'id="open-{session.pk}"' in mine and session.url in mine
    assert f'id="stop-{session.pk}"' in mine and "2 min" in mine  # idle for
    theirs = browser(colleague).get(f"/allocations/{nb_allocation.pk}/").content.decode()
    assert f'id="notebook-{session.pk}"' in theirs and session.url not in theirs
    assert f'id="stop-{session.pk}"' not in theirs
    assert browser(outsider).get(f"/notebooks/{session.pk}/").status_code == 404
    response = browser(colleague).post(f"/notebooks/{session.pk}/stop/")
    assert response.status_code == 302
    assert NotebookSession.objects.get(pk=session.pk).state == "running"
    response = browser(researcher).post(f"/notebooks/{session.pk}/stop/")
    assert NotebookSession.objects.get(pk=session.pk).state == "stopping"


def test_jobs_and_notebooks_read_as_one_timeline(researcher, nb_allocation):
    Job.objects.create(
        allocation=nb_allocation,
        created_by=researcher,
        state="succeeded",
        token=f"portal-job-{secrets.token_hex(6)}",
        params={"model": "resnet18"},
        gpu_seconds=7200,
        created_at=ago(hours=2),
    )
    session = services.notebook_start(
        actor=researcher, allocation_id=nb_allocation.pk, gpus=1, hours=1
    )
    page = browser(researcher).get(f"/allocations/{nb_allocation.pk}/").content.decode()
    timeline = page[page.index('id="allocation-timeline"') :]
    assert timeline.index(f"notebook #{session.pk}") < timeline.index("resnet18")  # newest first


def test_the_pages_and_the_list_run_bounded_queries(api, researcher, nb_allocation):
    client = browser(researcher)

    def grow(n):
        for _ in range(n):
            NotebookSession.objects.create(
                allocation=nb_allocation,
                user=researcher,
                gpus=1,
                hours=Decimal(1),
                state="stopped",
                gpu_seconds=60,
                charged_at=ago(minutes=1),
                started_at=ago(minutes=5),
            )

    def count(c, path):
        with CaptureQueriesContext(connection) as ctx:
            assert c.get(path).status_code == 200
        return len(ctx.captured_queries)

    grow(2)
    paths = [
        (client, f"/allocations/{nb_allocation.pk}/"),
        (api.as_user(researcher), "/api/v1/notebooks/"),
    ]
    for c, path in paths:
        c.get(path)
    small = [count(c, path) for c, path in paths]
    grow(12)
    assert [count(c, path) for c, path in paths] == small
