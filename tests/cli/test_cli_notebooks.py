"""`portal notebooks` against a live portal and a real JupyterHub: start (and wait until it
runs, as --open does, with the browser command replaced by `true`), list, show, stop (charged
what the supervisor's record says), a stop of a stopped session and a start that does not fit
exit 3 with the reason. A thread runs the sync beat task while the command line waits."""

from __future__ import annotations

from pathlib import Path

import pytest

from launcher.notebooks.models import NotebookSession
from portal.tokens.services import account_token_create
from tests.notebooks.fixtures import hub_sync, nb_allocation, nb_dirs, nb_facility  # noqa: F401
from tests.notebooks.hubfixture import WAIT, hub, hub_extra_env, hub_process, provider_key  # noqa: F401
from tests.waiting import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]
CLI = str(Path(__file__).resolve().parents[2] / "cli")  # this tree's portal_cli


def test_start_open_list_show_and_stop_a_notebook(cli, hub_sync, researcher, nb_allocation):  # noqa: F811
    _, key = account_token_create(user=researcher)
    env = {"PORTAL_URL": cli.url, "PORTAL_TOKEN": key, "PYTHONPATH": CLI, "BROWSER": "true"}
    allocation = str(nb_allocation.pk)

    started = cli(
        "notebooks",
        "start",
        "--allocation",
        allocation,
        "--gpus",
        "2",
        "--hours",
        "1",
        "--open",
        "--json",
        **env,
    )
    assert started.code == 0, started.err + started.out
    nb = started.json()
    assert nb["state"] == "running" and nb["url"].endswith(f"/nb-{nb['id']}/lab")

    listed = cli("notebooks", "list", "--allocation", allocation, **env)
    assert listed.code == 0 and "running" in listed.out and str(nb["id"]) in listed.out
    shown = cli("notebooks", "show", str(nb["id"]), **env)
    assert shown.code == 0 and "JupyterLab: " + nb["url"] in shown.out

    refused = cli(
        "notebooks", "start", "--allocation", allocation, "--gpus", "2", "--hours", "5", **env
    )
    assert refused.code == 3 and "GPU-hours short" in refused.err

    stopped = cli("notebooks", "stop", str(nb["id"]), "--json", **env)
    assert stopped.code == 0 and stopped.json()["state"] in ("stopping", "stopped")
    session = wait_for(
        lambda: (s := NotebookSession.objects.get(pk=nb["id"])).charged_at and s,
        timeout=WAIT,
        every=0.2,
        what="the charge",
    )
    assert session.gpu_seconds > 0
    again = cli("notebooks", "stop", str(nb["id"]), "--json", **env)
    assert again.code == 3 and again.json()["error"]["from"] == "stopped"
    shown = cli("notebooks", "show", str(nb["id"]), **env)
    assert f"charged {session.gpu_seconds} GPU-seconds" in shown.out
