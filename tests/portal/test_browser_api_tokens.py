"""The tokens page in chromium, on a phone's width: a person makes a token (the key shown once
works against the API), sees it listed, revokes it, and the key stops working."""

from __future__ import annotations

import httpx
import pytest

from tests.browser import login

pytestmark = pytest.mark.django_db(transaction=True)


def test_make_list_and_revoke_a_token_at_390_px(page, live_server, researcher):
    page.set_viewport_size({"width": 390, "height": 900})
    login(page, live_server, "rosalind")
    page.get_by_title("Your settings: notifications, API tokens").click()
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("laptop")
    page.get_by_label("Expires after").select_option("30")
    page.get_by_role("button", name="Make token").click()
    key = page.get_by_label("The new token's key").input_value()
    assert key.startswith("pat_")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390

    api = f"{live_server.url}/api/v1/projects/"
    assert httpx.get(api, headers={"Authorization": f"Token {key}"}).status_code == 200
    page.goto(f"{live_server.url}/account/tokens/")
    row = page.get_by_role("row", name="laptop")
    assert "active" in row.inner_text() and key not in page.content()
    row.get_by_role("button", name="Revoke laptop").click()
    assert "Revoked “laptop”" in page.get_by_role("status").inner_text()
    assert "revoked" in page.get_by_role("row", name="laptop").inner_text()
    refused = httpx.get(api, headers={"Authorization": f"Token {key}"})
    assert refused.status_code == 401 and "revoked" in refused.json()["detail"]
