"""Sane request limits, one rule each in allocations/policy.py, the same in the form and the
API: a full request asks for at most the facility's largest grant, and its justification has
at least 25 *different* words."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client
from django.utils import timezone

from allocations.models import AllocationRequest
from allocations.policy import distinct_words
from tests.factories import JUSTIFICATION

pytestmark = pytest.mark.django_db
PARROT = " ".join(["compute"] * 30)


def body(project, facility, **overrides):
    today = timezone.localdate()
    values = {
        "project": project.pk,
        "facility": facility.slug,
        "kind": "full",
        "purpose": "new",
        "gpu_hours": 1000,
        "cpu_hours": 0,
        "start_date": today.isoformat(),
        "end_date": (today + dt.timedelta(days=60)).isoformat(),
        "data_sensitivity": "public",
        "justification": JUSTIFICATION,
    }
    values.update(overrides)
    return values


def test_distinct_words_ignore_case_punctuation_and_repetition():
    assert distinct_words(PARROT) == 1
    assert distinct_words("GPU gpu, GPU-hours; it's it's 42 42") == 4


def test_the_api_refuses_a_full_request_beyond_the_facility_maximum(
    api, researcher, project, facility
):
    facility.full_gpu_hours_max = 50_000
    facility.save()
    response = api.as_user(researcher).post(
        "/api/v1/requests/",
        body(project, facility, gpu_hours=9_999_999, submit=True),
        format="json",
    )

    assert response.status_code == 400
    assert response.json()["gpu_hours"] == [
        "A full request on Baskerville can ask for at most 50,000 GPU-hours; you asked for "
        "9,999,999. Ask for 50,000 or fewer, or talk to the facility about a larger call."
    ]
    assert not AllocationRequest.objects.exists()
    at_limit = api.as_user(researcher).post(
        "/api/v1/requests/", body(project, facility, gpu_hours=50_000), format="json"
    )
    assert at_limit.status_code == 201, at_limit.json()


def test_the_facility_maximum_is_in_the_catalogue(api, researcher, facility):
    facility.full_gpu_hours_max = 20_000
    facility.save()
    listed = api.as_user(researcher).get(f"/api/v1/facilities/{facility.slug}/").json()
    assert listed["full_gpu_hours_max"] == 20_000


def test_the_api_refuses_thirty_repetitions_of_one_word(api, researcher, project, facility):
    response = api.as_user(researcher).post(
        "/api/v1/requests/", body(project, facility, justification=PARROT), format="json"
    )

    assert response.status_code == 400
    message = response.json()["justification"][0]
    assert "at least 25 different words" in message
    assert "you wrote 30 words, 1 different" in message
    assert not AllocationRequest.objects.exists()


def test_the_form_shows_the_same_two_messages_on_their_fields(researcher, project, facility):
    facility.full_gpu_hours_max = 5_000
    facility.save()
    client = Client()
    client.force_login(researcher)
    page = client.post(
        "/requests/new/", body(project, facility, gpu_hours=6_000, justification=PARROT)
    )

    errors = page.context["form"].errors
    assert "at most 5,000 GPU-hours" in errors["gpu_hours"][0]
    assert "1 different" in errors["justification"][0]
    assert not AllocationRequest.objects.exists()
