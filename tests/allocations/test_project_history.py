"""The project page's History is the project's whole story (issue 22): its requests (submitted,
decided, with the reviewer's words), its allocations' states and its members, newest first,
each naming what it is about; an empty "Add member" says what is missing."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from allocations import services
from allocations.models import Allocation, AllocationRequest

pytestmark = pytest.mark.django_db
JUSTIFICATION = (
    "We train DenseNet-121 and ResNet-50 classifiers on chest CT slices to detect "
    "COVID-19, sweeping learning rates, step sizes and weight decays over five folds "
    "as in the CLAIRE baseline, which needs A100 GPUs with bf16 for two months."
)


def test_history_tells_requests_decisions_allocations_and_members(
    client, pi, researcher, reviewer, project, facility, outsider
):
    today = timezone.localdate()
    request = services.request_create(
        by=researcher,
        project=project,
        facility=facility,
        kind="full",
        gpu_hours=100,
        submit=True,
        justification=JUSTIFICATION,
        start_date=today,
        end_date=today + dt.timedelta(days=60),
    )
    services.request_approve(request=request, by=reviewer, comment="Granted in full.")
    services.project_member_add(project=project, by=pi, user=outsider, role="member")
    allocation = Allocation.objects.get(project=project)

    client.force_login(pi)
    html = client.get(f"/projects/{project.pk}/").content.decode()
    history = html[html.index('id="h-history"') :]
    assert f'<a href="/requests/{request.pk}/">Request #{request.pk}</a>' in history
    assert "Granted in full." in history
    assert f'<a href="/allocations/{allocation.pk}/">Allocation #{allocation.pk}</a>' in history
    assert "Project:" in history  # the membership change
    assert AllocationRequest.objects.get(pk=request.pk).status == "approved"


def test_an_empty_add_member_says_what_is_missing(client, pi, project):
    client.force_login(pi)
    page = client.post(
        f"/projects/{project.pk}/members/add/", {"username": "  ", "role": "member"}, follow=True
    ).content.decode()
    assert "Give the username or email of the person to add." in page
    assert project.memberships.count() == 2
