"""Sign-in with the institution, in chromium, against the real OpenID Connect provider that
`make services` starts (oidc-provider on 127.0.0.1:9090, accounts in
scripts/services/oidc/accounts.json): alice is in portal-reviewers, bob in no portal group,
erin in portal-reviewers and portal-staff, carol's username is taken by a local account here,
dave's email is not verified."""

from __future__ import annotations

import logging
import re
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.models import ContentType

from allocations.models import AllocationRequest, Event
from allocations.services import project_member_add
from portal.identity.models import ExternalIdentity
from tests.factories import UserFactory
from tests.portal.oidc_provider import (
    PROVIDER_NAME,
    enable_oidc,
    groups_changed,
    sign_in_at_provider,
)

pytestmark = pytest.mark.django_db(transaction=True)
User = get_user_model()


@pytest.fixture
def provider(settings, monkeypatch):
    return enable_oidc(settings, monkeypatch)


def events(user) -> list[str]:
    return list(
        Event.objects.filter(
            content_type=ContentType.objects.get_for_model(User), object_id=user.pk
        ).values_list("to_state", flat=True)
    )


def test_a_new_user_signs_in_lands_on_the_dashboard_and_can_ask_for_a_trial(
    live_server, page, provider, project, pi, node_type
):
    sign_in_at_provider(page, live_server, "bob")

    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("heading", name="Hello, Bob").wait_for()
    bob = User.objects.get(username="bob")
    assert (bob.email, bob.first_name, bob.last_name) == ("bob@uni.example", "Bob", "Okafor")
    assert not bob.has_usable_password() and not bob.is_staff
    identity = ExternalIdentity.objects.get(user=bob)
    assert (identity.issuer, identity.subject) == (provider["OIDC_ISSUER"], "bob")
    assert events(bob) == ["created"]
    assert page.get_by_role("link", name="Review").count() == 0
    # The username is the cluster login the membership rules give a new member.
    membership = project_member_add(project=project, by=pi, user=bob)
    assert membership.cluster_username == "bob"

    page.goto(f"{live_server.url}/requests/new/?facility=baskerville&node_type=B-A100-40")
    page.get_by_label("Trial").check()
    page.get_by_label("GPU-hours requested").fill("100")
    page.get_by_label("Platform justification").fill("Trying CT classification on A100s.")
    page.get_by_role("button", name="Submit request").click()
    page.get_by_text("Your trial was approved automatically").wait_for()
    assert AllocationRequest.objects.get(requested_by=bob).status == "approved"


def test_roles_come_from_the_groups_claim_and_go_when_the_group_does(live_server, page, provider):
    sign_in_at_provider(page, live_server, "erin")
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("link", name="Review").click()
    page.get_by_role("heading", name=re.compile("Review queue")).wait_for()
    erin = User.objects.get(username="erin")
    assert erin.is_staff and erin.groups.filter(name="reviewers").exists()

    with groups_changed(provider, "erin", ["physics"]):
        page.get_by_role("button", name="Log out").click()
        page.get_by_role("button", name="Yes, sign me out").click()
        page.wait_for_url(f"{live_server.url}/accounts/login/")
        sign_in_at_provider(page, live_server, "erin")
        page.wait_for_url(f"{live_server.url}/")

    assert page.get_by_role("link", name="Review").count() == 0
    assert page.goto(f"{live_server.url}/review/").status == 403
    erin.refresh_from_db()
    assert not erin.is_staff and not erin.groups.filter(name="reviewers").exists()
    assert events(erin) == [
        "created",
        "reviewer granted",
        "staff granted",
        "reviewer removed",
        "staff removed",
    ]


def test_a_username_taken_by_a_local_account_gets_a_clear_page_and_an_audit_event(
    live_server, page, provider
):
    carol = UserFactory(username="carol", email="carol@elsewhere.example")

    sign_in_at_provider(page, live_server, "carol")

    page.get_by_role("heading", name="An account with your username already exists").wait_for()
    assert "/oidc/callback/" in page.url
    assert events(carol) == ["sign-in refused"]
    assert not ExternalIdentity.objects.exists()
    assert User.objects.filter(username__iexact="carol").count() == 1
    assert page.goto(f"{live_server.url}/").url.startswith(f"{live_server.url}/accounts/login/")


def test_an_unverified_email_is_refused_and_no_account_is_made(live_server, page, provider):
    sign_in_at_provider(page, live_server, "dave")

    page.get_by_role("heading", name="Your email address is not verified").wait_for()
    assert not User.objects.filter(username="dave").exists()


def _with_state(url: str, state: str) -> str:
    parts = urlsplit(url)
    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
    return urlunsplit(parts._replace(query=urlencode({**query, "state": state})))


def test_a_tampered_state_is_refused_with_a_clear_page_and_logged(
    live_server, page, provider, caplog
):
    caplog.set_level(logging.WARNING, logger="portal.identity.views")

    def tamper(route):  # change `state` on its way to the provider; it comes back changed
        response = route.fetch(max_redirects=0)
        headers = {
            **response.headers,
            "location": _with_state(response.headers["location"], "x" * 32),
        }
        route.fulfill(response=response, headers=headers)

    page.route("**/oidc/authenticate/**", tamper)
    with page.expect_response("**/oidc/callback/**") as answer:
        sign_in_at_provider(page, live_server, "bob")

    assert answer.value.status == 400
    page.get_by_role("heading", name="This sign-in could not be completed").wait_for()
    assert not User.objects.filter(username="bob").exists()
    assert page.goto(f"{live_server.url}/").url.startswith(f"{live_server.url}/accounts/login/")
    assert any("refused (tampered)" in r.getMessage() for r in caplog.records)


def test_a_replayed_callback_is_refused_with_a_clear_page(live_server, page, provider):
    with page.expect_request("**/oidc/callback/**") as held:
        sign_in_at_provider(page, live_server, "bob")
    page.wait_for_url(f"{live_server.url}/")

    replayed = page.goto(held.value.url)

    assert replayed.status == 400
    page.get_by_role("heading", name="This sign-in could not be completed").wait_for()
    assert ExternalIdentity.objects.filter(subject="bob").count() == 1


def test_logout_ends_the_provider_session_too(live_server, page, provider):
    sign_in_at_provider(page, live_server, "alice")
    page.wait_for_url(f"{live_server.url}/")

    page.get_by_role("button", name="Log out").click()
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(f"{live_server.url}/accounts/login/")
    page.get_by_role("link", name=f"Sign in with {PROVIDER_NAME}").click()

    # No provider session left: it asks for credentials again instead of signing straight in.
    page.get_by_role("heading", name="Sign in to the test provider").wait_for()
    assert page.url.startswith(provider["OIDC_ISSUER"])
