"""`/onboarding/?version=<id>` (staff preview) parsed by Django: "²" passes `isdigit()` and fails
`int()`, and an id past 64 bits overflows SQLite; either was a 500 (issue 21)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.django_db]


@pytest.mark.parametrize("version", ["\u00b2", "99999999999999999999", "-1", "abc"])
def test_a_preview_version_that_is_no_id_shows_the_published_chart(client, admin, chart, version):
    client.force_login(admin)
    response = client.get("/onboarding/", {"version": version})
    assert response.status_code == 200
    assert response.context["chart"].flowchart.pk == chart.pk
