"""Playwright in Debian's chromium against Django's live server (REFERENCE.md: never
`playwright install`; no network). Use the `page` fixture from tests/conftest.py."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def login(page, live_server, username: str, password: str = "pw-for-tests") -> None:
    """Log in through the real login form."""
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
