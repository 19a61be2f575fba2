"""The new-request form is sent once: its one-time token (core/form_tokens.py) makes a second
POST of the same form (Back and Submit again, a double click) go to the request the first one
made, with a message, instead of filing an identical second request. A fresh form can."""

from __future__ import annotations

import datetime as dt
import re
import threading

import pytest
from django.conf import settings
from django.contrib.messages import get_messages
from django.db import connection
from django.test import Client
from django.utils import timezone

from allocations.models import AllocationRequest
from core import form_tokens
from core.tasks import task_named
from tests.factories import JUSTIFICATION

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def opened_form(client: Client) -> str:
    """The token of a freshly rendered new-request form, read from its hidden field."""
    html = client.get("/requests/new/").content.decode()
    (token,) = re.findall(r'<input type="hidden" name="form_token" value="([^"]+)"', html)
    return token


def body(project, facility, token: str, **overrides) -> dict:
    today = timezone.localdate()
    return {
        "project": project.pk,
        "facility": facility.slug,
        "kind": "full",
        "purpose": "new",
        "cpu_hours": 0,
        "gpu_hours": 1000,
        "start_date": today.isoformat(),
        "end_date": (today + dt.timedelta(days=30)).isoformat(),
        "data_sensitivity": "public",
        "justification": JUSTIFICATION,
        "form_token": token,
        **overrides,
    }


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_the_same_form_sent_twice_files_one_request_and_goes_to_it(researcher, project, facility):
    client = signed_in(researcher)
    sent = body(project, facility, opened_form(client))
    first = client.post("/requests/new/", sent)
    req = AllocationRequest.objects.get()
    assert first.status_code == 302 and first["Location"] == f"/requests/{req.pk}/"
    again = client.post("/requests/new/", sent)
    assert AllocationRequest.objects.count() == 1
    assert again.status_code == 302 and again["Location"] == f"/requests/{req.pk}/"
    assert f"This request was already submitted (#{req.pk})." in messages_of(again)
    # A third press (a triple click) is answered the same way.
    assert client.post("/requests/new/", sent)["Location"] == f"/requests/{req.pk}/"
    assert AllocationRequest.objects.count() == 1


def test_a_draft_saved_twice_is_one_draft(researcher, project, facility):
    client = signed_in(researcher)
    sent = body(project, facility, opened_form(client), save_draft="1")
    client.post("/requests/new/", sent)
    client.post("/requests/new/", sent)
    assert list(AllocationRequest.objects.values_list("status", flat=True)) == ["draft"]


def test_a_fresh_form_files_a_second_request(researcher, project, facility):
    client = signed_in(researcher)
    client.post("/requests/new/", body(project, facility, opened_form(client)))
    second = client.post("/requests/new/", body(project, facility, opened_form(client)))
    first_pk, second_pk = AllocationRequest.objects.order_by("pk").values_list("pk", flat=True)
    assert second["Location"] == f"/requests/{second_pk}/" and second_pk != first_pk


def test_a_refused_form_keeps_its_token_for_the_corrected_one(researcher, project, facility):
    client = signed_in(researcher)
    token = opened_form(client)
    refused = client.post("/requests/new/", body(project, facility, token, justification=""))
    assert refused.status_code == 200 and AllocationRequest.objects.count() == 0
    assert f'name="form_token" value="{token}"' in refused.content.decode()
    corrected = client.post("/requests/new/", body(project, facility, token))
    req = AllocationRequest.objects.get()
    assert corrected["Location"] == f"/requests/{req.pk}/"


def test_another_users_token_names_nothing_and_files_nothing(researcher, pi, project, facility):
    """A token copied from someone else's page (or forged) is unknown in this session: no
    redirect to their request, nothing filed, and the form comes back with a token of its own."""
    owner = signed_in(researcher)
    token = opened_form(owner)
    owner.post("/requests/new/", body(project, facility, token))
    theirs = AllocationRequest.objects.get()
    response = signed_in(pi).post("/requests/new/", body(project, facility, token))
    html = response.content.decode()
    assert response.status_code == 200 and AllocationRequest.objects.count() == 1
    assert f"/requests/{theirs.pk}/" not in html
    assert "opened in another session or too long ago" in html
    (renewed,) = re.findall(r'name="form_token" value="([^"]+)"', html)
    assert renewed != token
    forged = signed_in(pi).post("/requests/new/", body(project, facility, "made-up"))
    assert forged.status_code == 200 and AllocationRequest.objects.count() == 1


def test_a_token_is_good_for_the_user_and_the_form_it_was_issued_to_only(
    researcher, pi, project, facility
):
    """A session holding a token issued to someone else, or to another form, files nothing
    with it; its own token for this form does."""
    client = signed_in(pi)
    session = client.session
    session[form_tokens.SESSION_KEY] = {
        "someone-elses": ["request-new", researcher.pk, None],
        "another-forms": ["job-new", pi.pk, None],
        "mine": ["request-new", pi.pk, None],
    }
    session.save()
    for token in ("someone-elses", "another-forms"):
        assert client.post("/requests/new/", body(project, facility, token)).status_code == 200
    assert AllocationRequest.objects.count() == 0
    assert client.post("/requests/new/", body(project, facility, "mine")).status_code == 302
    assert AllocationRequest.objects.count() == 1


def test_signing_in_as_someone_else_forgets_the_tokens(researcher, pi, project, facility):
    client = signed_in(researcher)
    token = opened_form(client)
    client.force_login(pi)
    client.post("/requests/new/", body(project, facility, token))
    assert AllocationRequest.objects.count() == 0


def test_the_session_forgets_old_tokens_and_an_old_one_files_nothing(researcher, project, facility):
    client = signed_in(researcher)
    oldest = opened_form(client)
    for _ in range(form_tokens.KEEP):
        opened_form(client)
    assert len(client.session[form_tokens.SESSION_KEY]) == form_tokens.KEEP
    client.post("/requests/new/", body(project, facility, oldest))
    assert AllocationRequest.objects.count() == 0


def test_a_post_without_a_token_still_files_a_request(researcher, project, facility):
    """Scripts that post the form's fields (and the older tests) are not guarded, as before."""
    sent = body(project, facility, "")
    del sent["form_token"]
    response = signed_in(researcher).post("/requests/new/", sent)
    assert response.status_code == 302 and AllocationRequest.objects.count() == 1


def test_two_posts_of_one_form_at_once_file_one_request(postgres, researcher, project, facility):
    """A double click: two POSTs of one form race. The first locks the session's row until it
    commits; the second then reads the spent token and goes to the first's request."""
    task_named("allocations.send_notification")  # the registry loaded once, not in the race
    client = signed_in(researcher)
    sent = body(project, facility, opened_form(client))
    cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
    barrier = threading.Barrier(2)
    locations: list[str] = []
    errors: list[BaseException] = []

    def press() -> None:
        try:
            browser = Client()
            browser.cookies[settings.SESSION_COOKIE_NAME] = cookie
            barrier.wait()
            locations.append(browser.post("/requests/new/", sent)["Location"])
        except BaseException as exc:  # surfaced below: a race must fail the test, not a thread
            errors.append(exc)
        finally:
            connection.close()

    presses = [threading.Thread(target=press) for _ in range(2)]
    for thread in presses:
        thread.start()
    for thread in presses:
        thread.join(timeout=120)
    assert not errors, errors
    req = AllocationRequest.objects.get()
    assert locations == [f"/requests/{req.pk}/"] * 2
