"""Walk every path of the seeded chart in Debian's chromium, to its outcome and on to the
request form, checking what the form was pre-filled with; once with JavaScript (instant, the
URL follows) and once without (plain GET forms)."""

from __future__ import annotations

import pytest

from allocations.models import NodeType
from portal.onboarding import selectors
from tests.browser import login
from tests.onboarding.conftest import all_paths

pytestmark = pytest.mark.django_db(transaction=True)


def expected_walks(chart) -> list[tuple[list[str], dict, dict]]:
    flow = selectors.flow_payload(selectors.chart_load(chart))
    labels = {c["key"]: c["label"] for q in flow["questions"] for c in q["choices"]}
    sets = {c["key"]: c["sets"] for q in flow["questions"] for c in q["choices"]}
    walks = []
    for path, outcome in all_paths(flow):
        facts = {k: v for key in path for k, v in sets[key].items()}
        walks.append(([labels[k] for k in path], outcome, facts | {"path": path}))
    return walks


def walk_every_path(page, live_server, chart, *, scripted: bool) -> int:
    walks = expected_walks(chart)
    for labels, outcome, facts in walks:
        page.goto(f"{live_server.url}/onboarding/")
        for label in labels:
            step = page.locator(".onb-step:not([hidden])")  # the one question shown
            step.get_by_label(label, exact=True).check()
            step.get_by_role("button", name="Next").click()
        page.get_by_role("heading", name=outcome["title"], exact=True).wait_for()
        assert page.url.endswith("?path=" + ",".join(facts["path"]))
        if scripted:  # the step moved focus to the new heading for keyboard users
            assert page.evaluate("document.activeElement.textContent") == outcome["title"]
        page.locator(".onb-step:not([hidden]) .onb-request").click()
        page.wait_for_url("**/requests/new/**")
        assert page.locator("#id_facility").input_value() == outcome["facility"]
        assert page.locator("input[name=kind]:checked").get_attribute("value") == outcome["kind"]
        node = NodeType.objects.get(facility__slug=outcome["facility"], name=outcome["node_type"])
        assert page.locator("#id_node_type").input_value() == str(node.pk)
        assert page.locator("#id_data_sensitivity").input_value() == facts.get(
            "data_sensitivity", "public"
        )
    return len(walks)


def test_every_path_with_javascript(page, live_server, chart, project, researcher):
    login(page, live_server, researcher.username)
    assert walk_every_path(page, live_server, chart, scripted=True) == 11


def test_every_path_without_javascript(page_no_js, live_server, chart, project, researcher):
    login(page_no_js, live_server, researcher.username)
    assert walk_every_path(page_no_js, live_server, chart, scripted=False) == 11


def test_back_restart_and_the_diagram_follow_the_path(page, live_server, chart):
    page.goto(f"{live_server.url}/onboarding/?path=cloud-no,data-internal")
    diagram = page.locator(".flow-diagram.flow-wide")
    assert (
        diagram.locator('[data-node="q:notebooks"]').get_attribute("class")
        == "node question on-path current"
    )
    page.get_by_role("link", name="Back").click()
    page.get_by_role("heading", name="How sensitive is the data?").wait_for()
    assert page.url.endswith("?path=cloud-no")
    assert "current" in diagram.locator('[data-node="q:sensitivity"]').get_attribute("class")
    assert "on-path" not in diagram.locator(
        'path[data-edge="sensitivity:data-internal"]'
    ).get_attribute("class")
    assert page.locator("#onb-live").text_content() == "Question 2: How sensitive is the data?"
    # The phone layout follows the same path (it is the one shown under 600 px).
    vertical = page.locator(".flow-diagram.flow-vertical")
    assert "current" in vertical.locator('[data-node="q:sensitivity"]').get_attribute("class")
    page.go_back()
    page.get_by_role("heading", name="Am I using notebooks?").wait_for()
    page.get_by_role("link", name="Restart").click()
    page.get_by_role("heading", name="Do I need cloud?").wait_for()
    assert page.url == f"{live_server.url}/onboarding/"


def test_a_phone_gets_the_one_column_chart(page, live_server, chart):
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{live_server.url}/onboarding/?path=cloud-no")
    wide, vertical = (
        page.locator(".flow-diagram.flow-wide"),
        page.locator(".flow-diagram.flow-vertical"),
    )
    assert not wide.is_visible() and vertical.is_visible()
    box = vertical.bounding_box()
    assert box["width"] <= 390
    # Drawn near its own scale (about 360 px of viewBox in the width): nodes stay readable.
    view_width = float(vertical.get_attribute("viewBox").split()[2])
    assert box["width"] / view_width >= 0.85
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.set_viewport_size({"width": 1280, "height": 800})
    assert wide.is_visible() and not vertical.is_visible()
