"""Per question and outcome: how many walks reached it and where walks stopped. Anonymous
walks are tied together by a random token only."""

from __future__ import annotations

from django.test import Client

from portal.onboarding.models import Walk
from portal.onboarding.selectors import funnel


def walk(*paths: str) -> Client:
    """One visitor (one session) opening each path in turn, as the plain form does."""
    visitor = Client()
    for path in paths:
        assert visitor.get("/onboarding/", {"path": path}).status_code == 200
    return visitor


def counts(chart) -> dict[str, tuple[int, int]]:
    data = funnel(chart)
    return {row.ref: (row.reached, row.left_here) for row in data["questions"] + data["outcomes"]}


def test_walks_are_counted_per_node_with_drop_off(chart):
    walk("")  # left at the first question
    walk("", "cloud-no", "cloud-no,data-public")  # left at "notebooks?"
    walk("cloud-no,data-public,notebooks-yes")  # a shared link to an outcome
    walk("cloud-yes", "cloud-yes,payer-core", "cloud-yes")  # went back to "who pays?"
    walk("cloud-maybe", "cloud-maybe")  # reloads count once
    got = counts(chart)
    assert got["q:cloud"] == (5, 1)
    assert got["q:sensitivity"] == (2, 0)
    assert got["q:notebooks"] == (2, 1)
    assert got["q:payer"] == (1, 1)
    assert got["q:v100"] == (0, 0)
    assert got["o:baskerville-notebooks"] == (1, 0)
    assert got["o:azure-full"] == (1, 0)
    assert got["o:azure-trial"] == (1, 0)
    assert funnel(chart)["walks"] == 5
    assert funnel(chart)["completed"] == 2


def test_a_step_taken_in_the_page_script_is_recorded(chart):
    visitor = walk("")
    token = visitor.session["onboarding_walk"]
    response = visitor.post("/onboarding/track/", {"path": "cloud-no,data-special"})
    assert response.status_code == 204
    walk_row = Walk.objects.get(token=token)
    assert walk_row.current_outcome.key == "azure-tre"
    assert counts(chart)["q:sensitivity"] == (1, 0)


def test_no_personal_data_is_stored_for_a_walk(chart):
    walk("cloud-no")
    fields = {f.name for f in Walk._meta.get_fields()}
    assert not fields & {"user", "ip", "ip_address", "user_agent", "session_key"}
    assert len(Walk.objects.get().token) >= 20


def test_admins_see_the_counts_and_others_do_not(chart, client, admin, researcher):
    walk("", "cloud-no")
    client.force_login(researcher)
    assert client.get("/onboarding/stats/").status_code == 302  # to the admin login
    client.force_login(admin)
    page = client.get("/onboarding/stats/").content.decode()
    assert (
        '<tr data-node="q:sensitivity"><th scope="row">How sensitive is the data?</th>'
        '<td class="num">1</td><td class="num">1</td><td class="num">100%</td>' in page
    )
