"""The hub (launcher/notebooks/hub/) against the portal, all real: JupyterHub 6 with its
configurable-http-proxy, the portal's OpenID Connect provider on the live server, JupyterLab
in chromium. One hub for the module (tests/notebooks/hubfixture.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from tests.browser import login
from tests.factories import UserFactory
from tests.notebooks.hubfixture import WAIT
from tests.waiting import wait_for

LAB_READY = "#jp-main-dock-panel"  # JupyterLab's main area: the lab answered and rendered


def options(tmp_path, *, hours: float = 1.0, gpus: int = 0, cuda="") -> dict:
    data = tmp_path / "data" / "mnist"
    data.mkdir(parents=True)
    (data / "train.csv").write_text("label,pixel0\n5,0\n")
    return {
        "session": 1,
        "backend": "local",
        "gpus": gpus,
        "hours": hours,
        "workdir": str(tmp_path / "work"),
        "datasets": {"mnist": str(data)},
        "run_dir": str(tmp_path / "run"),
        "backend_options": {"cuda_visible_devices": cuda},
    }


def server_process(tmp_path) -> tuple[dict[str, str], Path]:
    """The running server's environment and working directory, read from /proc."""
    pid = record(tmp_path)["server_pid"]
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    environ = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return environ, Path(os.readlink(f"/proc/{pid}/cwd"))


def record(tmp_path) -> dict:
    path = tmp_path / "run" / "record.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_a_portal_user_lands_in_their_lab_with_one_sign_on_and_nobody_else_does(
    live_server, hub, page, chromium, pi, tmp_path
):
    # A username as the portal has it, capitals and all: the hub must not make a stranger of it.
    researcher = UserFactory(username="Rosalind.F")
    login(page, live_server, researcher.username)
    # The hub's login sends the browser to the portal's provider, which knows the user already:
    # back at the hub, signed in, with no second password asked for.
    page.goto(f"{hub.url}/hub/login")
    page.wait_for_url(re.compile(re.escape(f"{hub.url}/hub/home")))
    assert page.locator("input[type=password]").count() == 0
    # The hub's home offers no start button (users hold no `servers` scope) but the way back.
    assert page.locator("#start").count() == 0
    assert live_server.url in page.locator("#portal-note").inner_text()
    assert hub.api("GET", f"/users/{researcher.username}").json()["name"] == researcher.username

    # A user's own hub token (asked for in their signed-in browser, as the hub's token page
    # does) cannot start a server: only the portal service can.
    page.goto(f"{hub.url}/hub/token")
    cookies = page.context.cookies(f"{hub.url}/hub/token")
    xsrf = next(c["value"] for c in cookies if c["name"] == "_xsrf")
    own = page.request.post(
        f"{hub.url}/hub/api/users/{researcher.username}/tokens",
        data={"note": "mine"},
        headers={"X-XSRFToken": xsrf},
    )
    assert own.status == 201, own.text()
    refused = hub.api(
        "POST",
        f"/users/{researcher.username}/servers/mine",
        token=own.json()["token"],
        json={"backend": "local"},
    )
    assert refused.status_code == 403

    # The portal starts a named server with the session's user_options.
    started = hub.start_server(researcher.username, "nb-1", options(tmp_path, gpus=2, cuda="0,1"))
    assert started.status_code in (201, 202), started.text
    server = hub.wait_ready(researcher.username, "nb-1")
    assert server["url"] == f"/user/{researcher.username}/nb-1/"
    workdir = tmp_path / "work"
    assert (workdir / "datasets" / "mnist" / "train.csv").read_text().startswith("label")
    assert record(tmp_path)["ended"] is None
    environ, cwd = server_process(tmp_path)
    assert (environ["CUDA_VISIBLE_DEVICES"], cwd) == ("0,1", workdir)
    assert environ["PORTAL_NOTEBOOK_SESSION"] == "1"

    lab = f"{hub.url}/user/{researcher.username}/nb-1/lab"
    page.goto(lab)
    page.locator(LAB_READY).wait_for(timeout=90_000)
    assert page.url.startswith(lab)

    # Another portal user, signed on to the hub as themselves (starting at the hub this time:
    # the portal's login form sends them on to the hub), is refused the session.
    other = chromium.new_context()
    try:
        other_page = other.new_page()
        other_page.set_default_timeout(30_000)
        other_page.goto(f"{hub.url}/hub/login")
        other_page.get_by_label("Username").fill(pi.username)
        other_page.get_by_label("Password").fill("pw-for-tests")
        other_page.get_by_role("button", name="Log in").click()
        other_page.wait_for_url(re.compile(re.escape(f"{hub.url}/hub/home")))
        response = other_page.goto(lab)
        assert response.status == 403
        assert other_page.locator(LAB_READY).count() == 0
    finally:
        other.close()

    # Stopped by the portal: the supervisor's record has the start and the end.
    hub.stop_server(researcher.username, "nb-1")
    done = wait_for(
        lambda: record(tmp_path).get("ended") and record(tmp_path),
        timeout=WAIT,
        every=0.2,
        what="the record's end",
    )
    assert done["reason"] == "stopped"
    assert done["started"] < done["ended"]
    assert hub.server(researcher.username, "nb-1") is None


def test_the_server_is_stopped_at_its_hours(hub, researcher, tmp_path):
    # 0.004 h = 14.4 s: long enough to start, then the supervisor's hard stop ends it.
    started = hub.start_server(researcher.username, "nb-2", options(tmp_path, hours=0.004))
    assert started.status_code in (201, 202, 500), started.text
    # No GPU: CUDA_VISIBLE_DEVICES is set, and empty (nothing visible), not left unset.
    wait_for(
        lambda: record(tmp_path).get("server_pid"),
        timeout=WAIT,
        every=0.2,
        what="the server's start",
    )
    environ, _ = server_process(tmp_path)
    assert environ["CUDA_VISIBLE_DEVICES"] == ""
    done = wait_for(
        lambda: record(tmp_path).get("ended") and record(tmp_path),
        timeout=WAIT,
        every=0.2,
        what="the hard stop",
    )
    assert done["reason"] == "time limit"
    assert done["ended"] - done["started"] >= 0.004 * 3600


def test_an_unknown_backend_is_refused_before_anything_starts(hub, researcher, tmp_path):
    response = hub.start_server(
        researcher.username, "nb-3", {**options(tmp_path), "backend": "quantum"}
    )
    assert response.status_code == 400
    assert "unknown notebook backend 'quantum'" in response.json()["message"]
    assert not (tmp_path / "run").exists()
