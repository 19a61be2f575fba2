"""A member's notebook cell runs as the member, never as the portal (docs/security.md, "Users'
code"): through the real hub, a kernel of the session runs a cell that tries what an attacker
would (the hub's state, the portal's records, another project's data, another member's home,
the portal's secrets in its environment, a process that escapes with setsid), and Stop ends
every process it started."""

from __future__ import annotations

import json
import os
import pwd
import time
from pathlib import Path

import pytest

from allocations.models import ProjectMembership
from launcher.local import identity
from launcher.notebooks.models import NotebookSession
from tests.factories import ProjectFactory
from tests.notebooks.fixtures import nb_allocation, nb_dirs, nb_facility  # noqa: F401  (fixtures)
from tests.notebooks.kernel import run_cell, server_token
from tests.notebooks.test_hub_e2e import portal_hub, synced_until  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True)]

CELL = """
import json, os, subprocess
tried = {}
def attempt(name, act):
    try:
        act()
        tried[name] = "done"
    except PermissionError:
        tried[name] = "refused"
for name, path in %(reads)s.items():
    attempt("read " + name, lambda p=path: os.listdir(p) if os.path.isdir(p) else open(p).read(1))
attempt("write the record", lambda: open(%(record)r, "w").write("{}"))
attempt("write its own folder", lambda: open("mine.txt", "w").write("mine"))
escaped = subprocess.Popen(["setsid", "sleep", "300"])
print(json.dumps({"uid": os.getuid(), "gid": os.getgid(), "groups": sorted(os.getgroups()),
                  "env": sorted(os.environ), "hub_token": os.environ.get("JUPYTERHUB_API_TOKEN"),
                  "tried": tried, "escaped": escaped.pid}))
"""


def test_a_notebook_cell_runs_as_the_member_reaches_only_its_own_and_dies_at_stop(
    api, portal_hub, researcher, outsider, nb_allocation, nb_dirs, settings
):
    # What a cell must not reach: another project's data, another member's home, the hub's
    # state (written privately, as under make run), and the portal's own records.
    other = ProjectFactory(code="OTHER-001", pi=outsider)
    ProjectMembership.objects.get_or_create(project=other, user=outsider, defaults={"role": "pi"})
    theirs = nb_dirs / "project-data" / other.code
    identity.project_dir(theirs, project_id=other.pk)
    (theirs / "scans.csv").write_text("secret")
    their_home = Path(identity.ensure_account(outsider.pk).home)
    client = api.as_user(researcher)
    response = client.post(
        "/api/v1/notebooks/", {"allocation": nb_allocation.pk, "gpus": 1, "hours": 1}, format="json"
    )
    assert response.status_code == 201, response.json()
    pk = response.json()["id"]
    session = synced_until(pk, lambda s: s.state == "running", "the session running")
    record = Path(session.run_dir) / "record.json"
    reads = {
        "hub db": str(portal_hub.state_dir / "jupyterhub.sqlite"),
        "hub cookie secret": str(portal_hub.state_dir / "jupyterhub_cookie_secret"),
        "other project": str(theirs),
        "other home": str(their_home),
        "the sessions": str(Path(settings.NOTEBOOKS_DIR)),
    }
    assert all(Path(p).exists() for p in reads.values())

    token = server_token(record)
    out = run_cell(
        f"{portal_hub.url}/user/{researcher.username}/nb-{pk}/",
        token,
        CELL % {"reads": reads, "record": str(record)},
    )
    seen = json.loads(out.strip().splitlines()[-1])

    account = pwd.getpwnam(identity.account_name(researcher.pk))
    assert (seen["uid"], seen["gid"]) == (account.pw_uid, account.pw_gid) != (0, 0)
    project_gid = identity.ensure_group(nb_allocation.project_id)
    assert seen["groups"] == [project_gid]  # its one supplementary group: the project's
    assert seen["tried"] == {
        "read hub db": "refused",
        "read hub cookie secret": "refused",
        "read other project": "refused",
        "read other home": "refused",
        "read the sessions": "refused",
        "write the record": "refused",
        "write its own folder": "done",
    }
    for secret in ("SECRET_KEY", "DATABASE_URL", "JUPYTERHUB_CLIENT_SECRET", "CELERY_BROKER_URL"):
        assert secret in os.environ or secret in portal_hub.env  # the portal's, or the hub's
        assert secret not in seen["env"]
    assert seen["hub_token"] not in (
        None,
        portal_hub.api_token,
    )  # its server's own, not the portal's
    escaped = seen["escaped"]
    assert Path(f"/proc/{escaped}").exists()

    stopped = client.post(f"/api/v1/notebooks/{pk}/stop/")
    assert stopped.status_code == 200
    synced_until(pk, lambda s: s.charged_at is not None, "the session stopped and charged")
    deadline = time.monotonic() + 10
    while Path(f"/proc/{escaped}").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not Path(f"/proc/{escaped}").exists(), "the setsid process outlived Stop by 10 s"
    assert NotebookSession.objects.get(pk=pk).gpu_seconds > 0
