"""GET /api/v1/balances/ood.json: the balance file Open OnDemand's dashboard reads
(allocations/ondemand.py, allocations/api/balances.py, docs/ondemand.md).

"Done" is that OnDemand reads it: the file is checked against the shape of OnDemand's own test
fixture, and read by `ondemand_find`, a line-by-line Python reading of OnDemand's parser, which
is itself checked against what OnDemand's own tests expect of that fixture."""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from allocations.models import ProjectMembership
from allocations.selectors import allocation_ledger
from tests.factories import (
    AllocationFactory,
    FacilityFactory,
    ProjectFactory,
    UserFactory,
    charge,
    open_job,
)

pytestmark = pytest.mark.django_db

URL = "/api/v1/balances/ood.json"
SITE_KEY = "ood-site-key-" + "0123456789abcdef" * 2

# OnDemand's own fixture, verbatim: OSC/ondemand at e5bbaf1d7c4b518685c5d11c5e3a932b32fe1f93,
# apps/dashboard/test/fixtures/balance.json (read by apps/dashboard/test/models/balance_test.rb).
ONDEMAND_FIXTURE = """
{
    "balances": [
        {"project": "PZS0708", "user": "tdockendorf", "value": 0},
        {"project": "PZS0708", "user": "djohnson", "value": 20},
        {"project": "PZS0714", "user": "efranz", "value": 0}
    ],
    "config": {"unit": "RU", "project_type": "project"},
    "timestamp": 1567190705,
    "version": 1
}
"""


# --- OnDemand's reading, in Python -----------------------------------------------------------
# apps/dashboard/app/models/balance.rb at the same commit: `Balance.find(path, user)` parses the
# file, keeps the rows whose `user` is the dashboard's unix login, and turns any error (no
# `balances` array, a row of the user's without `value`, a value with no `to_i`) into no
# balances at all for that user, silently but for a log line.


class RubyError(Exception):
    """What `rescue StandardError` in `Balance.find` catches: the user then sees nothing."""


def ruby_to_i(value: Any) -> int:
    """Ruby's `to_i` on a value JSON.parse made."""
    if value is None:  # nil.to_i
        return 0
    if isinstance(value, bool) or isinstance(value, (list, dict)):
        raise RubyError(f"undefined method `to_i' for {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RubyError("FloatDomainError")
        return int(value)  # Float#to_i truncates toward zero
    match = re.match(r"\s*([+-]?\d+)", value)  # String#to_i: the leading integer, else 0
    return int(match.group(1)) if match else 0


def ruby_to_s(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else str(value)


def ruby_to_h(value: Any) -> dict[str, Any]:
    if value is None or value == []:
        return {}
    if not isinstance(value, dict):
        raise RubyError(f"undefined method `to_h' for {value!r}")
    return {k: v for k, v in value.items() if v is not None}  # .compact


def ondemand_find(raw: str, user: str) -> list[dict[str, Any]]:
    """`Balance.find(path, user)`: the balances the dashboard of `user` shows, each as the
    attributes of OnDemand's `Balance` (`updated_at` as Unix seconds)."""
    try:
        if not raw:
            raise RubyError("No content returned when attempting to read balance file")

        def no_constants(name: str) -> Any:
            raise RubyError(f"unexpected token {name}")  # JSON.parse refuses NaN, Infinity

        data = json.loads(raw, parse_constant=no_constants)
        if not isinstance(data, dict) or not isinstance(data.get("balances"), list):
            raise RubyError("Balance file expected to be a JSON object with balances array")
        config = data.get("config")
        config = ruby_to_h({} if config is None or config is False else config)
        found = []
        for row in data["balances"]:
            row = ruby_to_h(row)
            if user != row.get("user"):
                continue
            if "value" not in row:
                raise RubyError("key not found: :value")
            found.append(
                {
                    "user": ruby_to_s(row["user"]),
                    "project": ruby_to_s(row.get("project")),
                    "value": ruby_to_i(row["value"]),
                    "project_type": ruby_to_s(config.get("project_type")),
                    "unit": ruby_to_s(config.get("unit")),
                    "updated_at": ruby_to_i(data.get("timestamp")),
                }
            )
        return found
    except (RubyError, ValueError):
        return []


def assert_the_reading_answers_as_ondemands_own_tests_do() -> None:
    """apps/dashboard/test/models/balance_test.rb, its assertions on the fixture and on bad
    files, against `ondemand_find`: the reading is OnDemand's before it judges our file."""
    tdockendorf = ondemand_find(ONDEMAND_FIXTURE, "tdockendorf")
    assert len(tdockendorf) == 1 and tdockendorf[0]["value"] == 0
    assert ondemand_find(ONDEMAND_FIXTURE, "djohnson")[0]["updated_at"] == 1_567_190_705
    assert ondemand_find(ONDEMAND_FIXTURE, "efranz")[0]["updated_at"] == 1_567_190_705
    assert ondemand_find(ONDEMAND_FIXTURE, "djohnson")[0] == {
        "user": "djohnson",
        "project": "PZS0708",
        "value": 20,
        "project_type": "project",
        "unit": "RU",
        "updated_at": 1_567_190_705,
    }
    for bad in ('{"version": 2000}', "{}", '{"version": 1}', "[]", ""):
        assert ondemand_find(bad, "ood") == []
    assert ondemand_find('{"version": 1, "balances": [ { "user":"ood" }]}', "ood") == []


# --- The world: who is in which project, and what is left --------------------------------


def login(user, project, name: str) -> None:
    ProjectMembership.objects.filter(user=user, project=project).update(cluster_username=name)


@pytest.fixture
def site_key(settings):
    settings.PORTAL_OOD_BALANCE_KEY = SITE_KEY
    return SITE_KEY


@pytest.fixture
def world(project, other_project, pi, researcher, outsider, facility):
    """`project` (ABC-DEF-001): Paula (pi) and Rosalind (member), with an active allocation on
    Baskerville (100 GPU-hours: 30.5 charged, 4 reserved by a running job: 65.5 left) and one
    on a cloud facility (10 left): 75.5 in all. `other_project` (XYZ-OTH-002): Charlie, whose
    one allocation is exhausted (0). An expired allocation's project and a member without a
    cluster login have no row."""
    login(pi, project, "paula")
    login(researcher, project, "rosalind")
    login(outsider, other_project, "charlie")
    hpc = AllocationFactory(project=project, facility=facility, gpu_hours=Decimal(100))
    charge(allocation=hpc, source="local", external_id="run-1", gpu_seconds=int(30.5 * 3600))
    open_job(
        allocation=hpc,
        created_by=researcher,
        state="running",
        token=f"portal-job-{secrets.token_hex(6)}",
        params={"model": "resnet18"},
        estimate_gpu_hours=Decimal(4),
    )
    cloud = FacilityFactory(slug="cloudy", kind="cloud")
    AllocationFactory(project=project, facility=cloud, gpu_hours=Decimal(10))
    AllocationFactory(project=other_project, facility=facility, status="exhausted")
    ended = ProjectFactory(code="OLD-END-003")
    login(ended.pi, ended, "olga")
    AllocationFactory(project=ended, facility=facility, status="expired")
    nologin = UserFactory(username="Not A Login")
    ProjectMembership.objects.create(project=project, user=nologin, role="member")
    return {"hpc": hpc, "cloud": cloud}


def with_key(api, key: str = SITE_KEY):
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return api


def rows(response) -> set[tuple[str, str, int]]:
    assert response.status_code == 200, response.content
    return {(b["user"], b["project"], b["value"]) for b in response.json()["balances"]}


# --- The shape, and OnDemand reading it ------------------------------------------------------


def test_the_file_has_the_shape_of_ondemands_own_fixture(api, site_key, world):
    ours = with_key(api).get(URL).json()
    theirs = json.loads(ONDEMAND_FIXTURE)

    def shape(value: Any) -> Any:
        """Keys and JSON types, all the way down (a list: the shapes of its items)."""
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items()}
        if isinstance(value, list):
            return sorted({json.dumps(shape(v), sort_keys=True) for v in value})
        return type(value).__name__

    assert shape(ours) == shape(theirs)
    assert ours["version"] == theirs["version"] == 1
    assert abs(ours["timestamp"] - timezone.now().timestamp()) < 60
    assert ours["config"] == {"unit": "GPU-hour", "project_type": "project"}


def test_ondemand_shows_each_member_their_own_balances(api, site_key, world):
    assert_the_reading_answers_as_ondemands_own_tests_do()
    raw = with_key(api).get(URL).content.decode()
    stamp = json.loads(raw)["timestamp"]
    common = {"unit": "GPU-hour", "project_type": "project", "updated_at": stamp}
    assert ondemand_find(raw, "rosalind") == [
        {"user": "rosalind", "project": "ABC-DEF-001", "value": 75, **common}
    ]
    assert ondemand_find(raw, "paula") == [
        {"user": "paula", "project": "ABC-DEF-001", "value": 75, **common}
    ]
    assert ondemand_find(raw, "charlie") == [
        {"user": "charlie", "project": "XYZ-OTH-002", "value": 0, **common}
    ]
    assert ondemand_find(raw, "olga") == []  # expired: no live allocation, no row
    assert ondemand_find(raw, "Not A Login") == ondemand_find(raw, "") == []


def test_values_are_the_ledgers_remaining_hours_rounded_down(api, site_key, world):
    ledgers = [allocation_ledger(a.pk) for a in world["hpc"].project.allocations.all()]
    left = sum((ledger.gpu_seconds_remaining for ledger in ledgers), Decimal(0)) / 3600
    assert left == Decimal("75.5")  # 100 - 30.5 charged - 4 reserved, + 10 on the cloud
    assert rows(with_key(api).get(URL)) >= {("rosalind", "ABC-DEF-001", math.floor(left))}

    charge(allocation=world["hpc"], source="local", external_id="run-2", gpu_seconds=3 * 3600)
    assert ("rosalind", "ABC-DEF-001", 72) in rows(with_key(api).get(URL))


def test_a_project_overspent_on_one_allocation_keeps_the_others_hours(api, site_key, world):
    charge(allocation=world["hpc"], source="local", external_id="big", gpu_seconds=500 * 3600)
    assert ("rosalind", "ABC-DEF-001", 10) in rows(with_key(api).get(URL))


def test_facility_keeps_that_facilitys_allocations_only(api, site_key, world):
    assert rows(with_key(api).get(URL, {"facility": "baskerville"})) == {
        ("charlie", "XYZ-OTH-002", 0),
        ("paula", "ABC-DEF-001", 65),
        ("rosalind", "ABC-DEF-001", 65),
    }
    assert rows(with_key(api).get(URL, {"facility": "cloudy"})) == {
        ("paula", "ABC-DEF-001", 10),
        ("rosalind", "ABC-DEF-001", 10),
    }
    for unknown in ("nowhere", "no such/slug", "x" * 500):
        response = with_key(api).get(URL, {"facility": unknown})
        assert response.status_code == 404 and "detail" in response.json()


# --- Who sees what ---------------------------------------------------------------------------


def test_the_site_key_sees_every_member(api, site_key, world):
    everyone = {
        ("charlie", "XYZ-OTH-002", 0),
        ("paula", "ABC-DEF-001", 75),
        ("rosalind", "ABC-DEF-001", 75),
    }
    assert rows(with_key(api).get(URL)) == everyone
    api.credentials()
    assert rows(api.get(URL, {"key": SITE_KEY})) == everyone


def test_a_researchers_token_sees_only_their_own_rows(api, site_key, world, researcher, outsider):
    assert rows(api.as_user(researcher).get(URL)) == {("rosalind", "ABC-DEF-001", 75)}
    assert rows(api.as_user(outsider).get(URL)) == {("charlie", "XYZ-OTH-002", 0)}


def test_a_reviewers_token_sees_only_their_own_rows_too(api, site_key, world, reviewer):
    assert rows(api.as_user(reviewer).get(URL)) == set()


def test_staff_see_every_member(api, world, admin):
    assert {user for user, _, _ in rows(api.as_user(admin).get(URL))} == {
        "charlie",
        "paula",
        "rosalind",
    }


def test_a_members_login_is_their_own_in_each_project(api, world, researcher, other_project):
    ProjectMembership.objects.create(
        project=other_project, user=researcher, cluster_username="rf123"
    )
    assert rows(api.as_user(researcher).get(URL)) == {
        ("rosalind", "ABC-DEF-001", 75),
        ("rf123", "XYZ-OTH-002", 0),
    }


def test_a_deactivated_member_has_no_row(api, site_key, world, researcher):
    researcher.is_active = False
    researcher.save()
    assert "rosalind" not in {user for user, _, _ in rows(with_key(api).get(URL))}


@pytest.mark.parametrize(
    "authorization,query",
    [
        (None, {}),  # nobody
        ("Bearer " + "x" * len(SITE_KEY), {}),  # a wrong key
        ("Bearer " + SITE_KEY[:-1], {}),
        ("Bearer", {}),  # no key at all
        ("Bearer " + SITE_KEY + " extra", {}),
        (None, {"key": "wrong"}),
        ("Token not-a-token", {}),
    ],
)
def test_wrong_or_missing_credentials_are_a_401(api, site_key, world, authorization, query):
    if authorization:
        api.credentials(HTTP_AUTHORIZATION=authorization)
    response = api.get(URL, query)
    assert response.status_code == 401 and "detail" in response.json()
    assert response.headers["WWW-Authenticate"]


def test_a_wrong_key_is_a_401_even_beside_a_good_token(api, site_key, world, researcher):
    response = api.as_user(researcher).get(URL, {"key": "wrong"})
    assert response.status_code == 401


def test_no_key_opens_it_where_the_site_has_none(api, settings, world):
    settings.PORTAL_OOD_BALANCE_KEY = ""
    assert with_key(api).get(URL).status_code == 401
    assert with_key(api, "").get(URL).status_code == 401


def test_a_short_key_stops_the_portal_at_start_up():
    env = {**os.environ, "PORTAL_OOD_BALANCE_KEY": "too-short"}
    result = subprocess.run(
        [sys.executable, "-c", "import portal.settings"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0 and "PORTAL_OOD_BALANCE_KEY" in result.stderr


# --- Cost ------------------------------------------------------------------------------------


def grow(facility, n: int) -> None:
    """n more projects, each with an active allocation (charged) and three members."""
    for _ in range(n):
        project = ProjectFactory()
        login(project.pi, project, f"pi{project.pk}")
        for i in range(2):
            member = UserFactory()
            ProjectMembership.objects.create(
                project=project, user=member, cluster_username=f"m{project.pk}x{i}"
            )
        allocation = AllocationFactory(project=project, facility=facility)
        charge(
            allocation=allocation, source="local", external_id=f"u{allocation.pk}", gpu_seconds=60
        )


def queries(client, query=None) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(URL, query or {})
    assert response.status_code == 200
    return len(ctx.captured_queries), len(response.json()["balances"])


def test_the_site_keys_file_costs_two_queries_whatever_its_size(api, site_key, world, facility):
    grow(facility, 2)
    small, few = queries(with_key(api))
    grow(facility, 20)
    large, many = queries(with_key(api))
    assert many == few + 60
    assert small == large == 2
    assert queries(with_key(api), {"facility": "baskerville"})[0] == 3


def test_a_members_file_costs_the_same_whatever_their_projects(api, world, researcher, facility):
    client = api.as_user(researcher)
    small, _ = queries(client)
    for _ in range(10):
        project = ProjectFactory()
        ProjectMembership.objects.create(
            project=project, user=researcher, cluster_username="rosalind"
        )
        AllocationFactory(project=project, facility=facility)
    large, mine = queries(client)
    assert mine == 11 and large == small


# --- The contract ----------------------------------------------------------------------------


def test_the_openapi_document_says_so(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/?format=json").json()
    operation = schema["paths"][URL]["get"]
    assert operation["operationId"] == "ood_balances"
    assert {"200", "401", "404"} <= set(operation["responses"])
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    out = schema["components"]["schemas"][body.rsplit("/", 1)[1]]
    assert set(out["properties"]) == {"version", "timestamp", "config", "balances"}
    assert out["properties"]["timestamp"]["type"] == "integer"
    assert {"siteKey": []} in operation["security"]
    assert schema["components"]["securitySchemes"]["siteKey"]["scheme"] == "bearer"
    assert {p["name"] for p in operation["parameters"]} == {"facility", "key"}
