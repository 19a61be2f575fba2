"""Screenshots of the core pages for the README, from a running portal with the demo data
(`make run`), in Debian's chromium. It files a full request as `researcher` and opens it as
`reviewer`, so run it on a throwaway database.

    .venv/bin/python docs/screenshots/make_core_screenshots.py [http://127.0.0.1:8000] [password]
"""

from __future__ import annotations

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

HERE = Path(__file__).resolve().parent
JUSTIFICATION = (
    "We train DenseNet-121 and ResNet-50 classifiers on chest CT slices to detect COVID-19, "
    "sweeping learning rates, step sizes and weight decays over five folds as in the CLAIRE "
    "baseline, which needs A100 GPUs with bf16 for about two months."
)


def login(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{base}/")


def main(base: str, password: str) -> None:
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1360, "height": 900})
        login(page, base, "researcher", password)
        page.goto(f"{base}/requests/new/?facility=baskerville&node_type=B-A100-80&kind=full")
        page.get_by_label("GPU hours requested").fill("2400")
        page.get_by_label("Platform justification").fill(JUSTIFICATION)
        page.screenshot(path=HERE / "request-form.png", full_page=True)
        page.get_by_role("button", name="Submit request").click()
        page.get_by_text("Request submitted").wait_for()
        page.goto(f"{base}/")
        page.screenshot(path=HERE / "dashboard.png", full_page=True)
        page.context.clear_cookies()
        login(page, base, "reviewer", password)
        page.goto(f"{base}/review/")
        page.screenshot(path=HERE / "review-queue.png", full_page=True)
        page.locator("table a").first.click()
        page.screenshot(path=HERE / "request-review.png", full_page=True)
        page.goto(
            f"{base}/recommend/?model=densenet121&dims=2&image_size=224&dataset_samples="
            "100000&epochs=50&precision=bf16&gpus=1&batch_size=64&data_sensitivity=internal"
        )
        page.wait_for_timeout(1500)
        page.screenshot(path=HERE / "recommend.png", full_page=True)
        browser.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        args[0].rstrip("/") if args else "http://127.0.0.1:8000",
        args[1] if len(args) > 1 else "demo",
    )
