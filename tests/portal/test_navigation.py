"""The site header's links, reversed once per script prefix (portal/context_processors.py)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import get_script_prefix, reverse, set_script_prefix

from portal.context_processors import NAV_ROUTES, nav_urls

pytestmark = pytest.mark.django_db


def test_every_link_is_its_routes_url_under_the_current_script_prefix():
    assert nav_urls() == {n.replace("-", "_").replace(":", "_"): reverse(n) for n in NAV_ROUTES}
    before = get_script_prefix()
    set_script_prefix("/portal/")
    try:
        assert nav_urls()["dashboard"] == "/portal/" and nav_urls()["logout"] == reverse("logout")
        assert nav_urls()["logout"].startswith("/portal/")
    finally:
        set_script_prefix(before)
    assert nav_urls()["dashboard"] == "/"


def test_the_header_links_for_a_member_and_for_a_reviewer(researcher, reviewer):
    client = Client()
    client.force_login(researcher)
    html = client.get("/").content.decode()
    assert f'<a href="{reverse("dashboard")}" aria-current="page">Dashboard</a>' in html
    assert f'href="{reverse("request-new")}"' in html and f'action="{reverse("logout")}"' in html
    assert f'href="{reverse("review-queue")}"' not in html
    client.force_login(reviewer)
    html = client.get("/review/").content.decode()
    assert f'<a href="{reverse("review-queue")}" aria-current="page">Review</a>' in html
    assert f'href="{reverse("usage-report")}"' in html
    anonymous = Client().get(reverse("login")).content.decode()
    assert f'<a href="{reverse("login")}">Log in</a>' in anonymous


def test_every_page_names_its_icon_and_the_icon_is_served(client):
    """Without it, browsers ask for /favicon.ico and log a 404 on the first page they load."""
    html = client.get(reverse("login")).content.decode()
    assert '<link rel="icon" href="/static/img/favicon.svg" type="image/svg+xml">' in html
    icon = client.get("/static/img/favicon.svg")
    assert icon.status_code == 200 and b"<svg" in b"".join(icon.streaming_content)
