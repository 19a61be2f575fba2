"""/recommend/ in Debian's chromium: fill the form, get the ranked table and drawn charts."""

from __future__ import annotations

import pytest

from allocations.demo import seed_catalogue
from benchmarks.demo import seed
from tests.browser import login
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_researcher_compares_systems_and_follows_a_request_link(live_server, page):
    seed_catalogue()
    seed()
    UserFactory(username="rosalind")
    login(page, live_server, "rosalind")
    page.goto(f"{live_server.url}/recommend/?data_sensitivity=internal")
    page.get_by_label("Model").select_option("gpt2-xxl")
    page.get_by_label("Input").select_option("1")
    page.get_by_label("Image size (pixels per side) or tokens per sample").fill("128")
    page.get_by_label("Samples in the dataset").fill("200000")
    page.get_by_label("Epochs").fill("2")
    page.get_by_label("Precision").select_option("fp32")
    page.get_by_label("Batch size per GPU").fill("2")
    assert page.get_by_label("Data sensitivity").input_value() == "internal"
    page.get_by_role("button", name="Recommend systems").click()

    table = page.locator("#ranked")
    table.wait_for()
    first = table.locator("tbody tr").first
    assert "usable" in first.inner_text()
    v100 = table.locator('tbody[data-node-type="J-V100-32"]')
    assert "does not fit" in v100.inner_text() and "39.6 GB" in v100.inner_text()
    # plotly drew both charts from the locally served bundle.
    page.locator("#chart-time-cost .main-svg").first.wait_for()
    page.locator("#chart-precision .main-svg").first.wait_for()
    assert "Pareto front" in page.locator("#chart-time-cost").inner_text()

    first.get_by_role("link").click()
    page.wait_for_url("**/requests/new/**")
    assert "facility=" in page.url and "gpu_hours=" in page.url
