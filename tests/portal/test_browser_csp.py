"""The Content-Security-Policy (scripts and styles from the portal's own origin only) breaks
nothing in a real browser: the Swagger UI and a plotly chart draw, and chromium reports no
violation."""

from __future__ import annotations

import pytest

from allocations.demo import seed_catalogue
from benchmarks.demo import seed
from tests.browser import login
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db(transaction=True)


def watch_csp(page) -> list[str]:
    """Collect chromium's CSP complaints (console errors and page errors)."""
    seen: list[str] = []
    page.on(
        "console", lambda m: seen.append(m.text) if "Content Security Policy" in m.text else None
    )
    page.on("pageerror", lambda e: seen.append(str(e)))
    return seen


def test_the_swagger_ui_draws_under_the_policy(live_server, page):
    UserFactory(username="rosalind")
    violations = watch_csp(page)
    login(page, live_server, "rosalind")

    response = page.goto(f"{live_server.url}/api/v1/docs/")

    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.locator(".swagger-ui .info .title").wait_for()
    assert (
        "Research compute allocation portal API" in page.locator(".swagger-ui .info").inner_text()
    )
    page.locator(".opblock-tag", has_text="jobs").first.wait_for()
    assert violations == [], "\n".join(violations)


def test_plotly_charts_draw_under_the_policy(live_server, page):
    seed_catalogue()
    seed()
    UserFactory(username="rosalind")
    violations = watch_csp(page)
    login(page, live_server, "rosalind")

    page.goto(
        f"{live_server.url}/recommend/?model=resnet50&dims=2&image_size=224"
        "&dataset_samples=100000&epochs=2&precision=fp16&gpus=1&batch_size=64"
        "&data_sensitivity=public"
    )

    page.locator("#chart-time-cost .main-svg").first.wait_for()
    assert "Pareto front" in page.locator("#chart-time-cost").inner_text()
    assert violations == [], "\n".join(violations)
