"""Take the onboarding screenshots for docs/onboarding.md from a running portal with the demo
data (`make run`, or `manage.py seed_demo` + `runserver`), in Debian's chromium.

    .venv/bin/python docs/screenshots/make_screenshots.py [http://127.0.0.1:8000]
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(base: str) -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        page.goto(f"{base}/onboarding/?path=cloud-no,data-internal")
        page.get_by_label("No, batch jobs").check()
        page.screenshot(path=HERE / "onboarding-question.png", full_page=True)
        page.get_by_role("button", name="Next").click()
        page.get_by_label("No, I need more").check()
        page.get_by_role("button", name="Next").click()
        page.get_by_role("heading", name="Request time on Baskerville (A100 80 GB)").wait_for()
        page.screenshot(path=HERE / "onboarding-outcome.png", full_page=True)
        page.locator(".onb-diagram").screenshot(path=HERE / "onboarding-diagram.png")
        page.goto(f"{base}/knowledge/")
        page.screenshot(path=HERE / "knowledge-matrix.png", full_page=True)
        browser.close()


if __name__ == "__main__":
    main(sys.argv[1].rstrip("/") if len(sys.argv) > 1 else "http://127.0.0.1:8000")
