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


def test_a_phone_gets_the_chart_as_numbered_steps(page, live_server, chart):
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{live_server.url}/onboarding/?path=cloud-no")
    wide, steps = (
        page.locator(".flow-diagram.flow-wide"),
        page.locator(".flow-diagram.flow-vertical"),
    )
    assert not wide.is_visible() and steps.is_visible()
    assert steps.bounding_box()["width"] <= 390
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    # One step per question, numbered in the order asked; each answer says where it leads.
    assert steps.locator(":scope > li .flow-question").all_inner_texts() == [
        "1 Do I need cloud?",
        "2 Who pays for it?",
        "3 How sensitive is the data?",
        "4 Am I using notebooks?",
        "5 Are V100s sufficient?",
    ]
    no = steps.locator('[data-edge="cloud:cloud-no"]')
    assert "on-path" in no.get_attribute("class")
    assert no.locator(".flow-next").inner_text() == "3 How sensitive is the data?"
    maybe = steps.locator('[data-edge="cloud:cloud-maybe"] [data-node="o:azure-trial"]')
    assert maybe.inner_text() == "Get an Azure trial credit"
    # The highlight follows the walk on the phone's layout too.
    page.get_by_label("Internal", exact=True).check()
    page.get_by_role("button", name="Next").click()
    page.get_by_role("heading", name="Am I using notebooks?").wait_for()
    assert "current" in steps.locator('[data-node="q:notebooks"]').get_attribute("class")
    assert "on-path" in steps.locator('[data-edge="sensitivity:data-internal"]').get_attribute(
        "class"
    )
    page.set_viewport_size({"width": 1280, "height": 800})
    assert wide.is_visible() and not steps.is_visible()
