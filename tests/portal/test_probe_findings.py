"""The probe's other findings (issue 34), each a 500, a wrong answer or a silence before:

1. a JSON number past a float (`1e400`) or a body nested thousands deep was a 500 (OverflowError,
   RecursionError) on every JSON POST: now a 400 from the parser;
2. `{"allocation": 1.5}` was taken as allocation 1: ids and whole numbers refuse non-integral
   values (1.5, "1.5", true) with a per-field 400;
3. `jobs/estimate/` said `fits: true` for a launch `jobs/` refuses (more GPUs than the
   facility's slots): both ask the same check;
4. `GET /o/logout/` was a 500 (RP-initiated logout was not enabled): a page now;
5. a full request could end in 9999 where a facility sets no latest end date: a site-wide
   longest allocation (PORTAL_MAX_ALLOCATION_DAYS);
6. a retried launch made a second job: `Idempotency-Key` on jobs/, sweeps/ and notebooks/;
7. a job queued while no worker runs said nothing: the job page and the API say so.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from django.utils import timezone
from oauth2_provider.models import get_application_model

from allocations.models import Allocation, AllocationRequest
from launcher import heartbeat, idempotency
from launcher.models import IdempotencyKey, Job, Sweep, WorkerHeartbeat
from launcher.notebooks.models import NotebookSession
from tests.factories import JUSTIFICATION, FacilityFactory
from tests.notebooks.fixtures import nb_allocation, nb_dirs, nb_facility  # noqa: F401 (fixtures)

pytestmark = [pytest.mark.django_db]
GRID = {
    "models": ["resnet18"],
    "lrs": [0.001],
    "lr_steps": [5],
    "weight_decays": [0.0001],
    "folds": 2,
    "fixed": {"epochs": 1, "size": 32},
}


@pytest.fixture
def allocation(project, tmp_path, settings):
    """An active allocation on a local facility that runs one run at a time."""
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    facility = FacilityFactory(
        slug="probe-local",
        name="Workstation",
        backend="local",
        kind="local",
        backend_settings={"slots": 1},
        gpu_hour_rate=Decimal("1.00"),
    )
    today = timezone.localdate()
    return Allocation.objects.create(
        project=project,
        facility=facility,
        gpu_hours=Decimal(100),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name="probe-a1",
    )


def post_raw(api, user, path: str, body: str):
    return api.as_user(user).post(path, data=body, content_type="application/json")


# 1. Numbers past a float, NaN and Infinity, bodies nested too deep: 400 from the parser ------

JSON_POSTS = [
    "/api/v1/jobs/",
    "/api/v1/jobs/estimate/",
    "/api/v1/sweeps/",
    "/api/v1/notebooks/",
    "/api/v1/requests/",
    "/api/v1/projects/",
    "/api/v1/recommendations/",
]


@pytest.mark.parametrize("path", JSON_POSTS)
@pytest.mark.parametrize(
    "body",
    [
        '{"allocation": 1e400}',
        '{"allocation": -1e400, "gpus": 1}',
        '{"project": 1e999}',
        '{"allocation": NaN}',
        '{"allocation": Infinity}',
        '{"gpus": -Infinity}',
        "[" * 3000 + "]" * 3000,
        '{"allocation": ' + "[" * 3000 + "]" * 3000 + "}",
        '{"a": ' * 3000 + "1" + "}" * 3000,
    ],
)
def test_numbers_past_a_float_and_deep_bodies_are_a_400(api, researcher, allocation, path, body):
    response = post_raw(api, researcher, path, body)
    assert response.status_code == 400, response.content[:300]
    assert "detail" in response.json()
    assert not Job.objects.exists() and not AllocationRequest.objects.exists()


def test_a_body_nested_within_the_limit_is_read(api, researcher, allocation):
    nested = {"allocation": allocation.pk, "gpus": 1, "name": "x"}
    response = post_raw(api, researcher, "/api/v1/jobs/estimate/", json.dumps(nested))
    assert response.status_code == 200, response.json()
    # 20 levels where a string belongs is that field's error, not the parser's.
    deep = {**nested, "params": {"dataset": json.loads("[" * 20 + "]" * 20)}}
    response = post_raw(api, researcher, "/api/v1/jobs/estimate/", json.dumps(deep))
    assert response.status_code == 400 and set(response.json()) == {"params"}


@pytest.mark.parametrize("value", ["1e300", "-1e300", "1e19", "9.99e307"])
def test_a_huge_finite_number_is_a_per_field_400(api, researcher, allocation, value):
    body = f'{{"allocation": {allocation.pk}, "gpus": {value}}}'
    response = post_raw(api, researcher, "/api/v1/jobs/", body)
    assert response.status_code == 400 and set(response.json()) == {"gpus"}
    response = post_raw(api, researcher, "/api/v1/jobs/", f'{{"allocation": {value}}}')
    assert response.status_code == 400 and "allocation" in response.json()
    assert not Job.objects.exists()


# 2. Ids and whole numbers refuse what is not a whole number ---------------------------------


@pytest.mark.parametrize("value", [1.5, "1.5", True, "1e0", " ", [1], {"id": 1}])
def test_an_id_that_is_no_whole_number_is_a_400_on_its_field(
    api, researcher, project, allocation, facility, dates, value
):
    client = api.as_user(researcher)
    at = allocation.pk + 0.5 if value == 1.5 else value  # 1.5 exactly would be no id here
    for path, body, field in [
        ("/api/v1/jobs/", {"allocation": at, "gpus": 1}, "allocation"),
        ("/api/v1/jobs/estimate/", {"allocation": at, "gpus": 1}, "allocation"),
        ("/api/v1/sweeps/", {"allocation": at, "gpus": 1, "grid": GRID}, "allocation"),
        ("/api/v1/notebooks/", {"allocation": at, "gpus": 1, "hours": 1}, "allocation"),
        (
            "/api/v1/datasets/",
            {
                "project": project.pk + 0.5 if value == 1.5 else value,
                "name": "scans",
                "location": "scans",
            },
            "project",
        ),
        (
            "/api/v1/requests/",
            {
                "project": project.pk + 0.5 if value == 1.5 else value,
                "facility": facility.slug,
                "gpu_hours": 10,
                "justification": JUSTIFICATION,
                **dates,
            },
            "project",
        ),
    ]:
        response = client.post(path, body, format="json")
        assert response.status_code == 400, (path, response.content)
        assert field in response.json(), (path, response.json())
    assert not Job.objects.exists() and not AllocationRequest.objects.exists()


def test_allocation_one_and_a_half_is_not_allocation_one(api, researcher, allocation):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {"allocation": allocation.pk + 0.5, "gpus": 1}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["allocation"] == ["A whole number is required."]
    # An integral number still names it (JSON has one number type: 7.0 is 7).
    response = post_raw(
        api, researcher, "/api/v1/jobs/estimate/", f'{{"allocation": {allocation.pk}.0, "gpus": 1}}'
    )
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("value", [1.5, "1.5", True])
def test_whole_number_fields_refuse_fractions_and_booleans(api, researcher, allocation, value):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": value, "params": {"epochs": value}},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()) == {"gpus", "params"}


# 3. The estimate asks the launch's own check ---------------------------------------------


def test_the_estimate_refuses_more_gpus_than_the_slots_as_the_launch_does(
    api, researcher, allocation
):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 2, "wall_time_minutes": 30}
    launch = client.post("/api/v1/jobs/", body, format="json")
    estimate = client.post("/api/v1/jobs/estimate/", body, format="json")
    sweep = client.post("/api/v1/sweeps/", {**body, "grid": GRID}, format="json")
    sweep_estimate = client.post("/api/v1/sweeps/estimate/", {**body, "grid": GRID}, format="json")

    assert launch.status_code == estimate.status_code == 400
    assert sweep.status_code == sweep_estimate.status_code == 400
    assert estimate.json() == launch.json() == sweep_estimate.json() == sweep.json()
    assert "runs at most 1 GPU" in estimate.json()["gpus"][0]
    assert not Job.objects.exists() and not Sweep.objects.exists()
    one = client.post("/api/v1/jobs/estimate/", {**body, "gpus": 1}, format="json")
    assert one.status_code == 200 and one.json()["fits"] is True


def test_the_sweep_form_estimate_shows_the_refusal_under_gpus(client, researcher, allocation):
    client.force_login(researcher)
    response = client.post(
        f"/allocations/{allocation.pk}/sweep/",
        {
            "name": "two",
            "models": ["resnet18"],
            "lrs": "1e-3",
            "lr_steps": "5",
            "weight_decays": "0.0001",
            "folds": "2",
            "epochs": "1",
            "patience": "",
            "size": "32",
            "batch_size": "16",
            "dataset": "synthetic-ct",
            "synthetic_n": "300",
            "gpus": "2",
            "wall_time_minutes": "30",
            "concurrency": "1",
            "estimate": "1",
        },
    )
    page = response.content.decode()
    assert response.status_code == 400, page[:2000]
    assert "runs at most 1 GPU" in page
    assert not Sweep.objects.exists()


# 4. The provider's logout is a page -------------------------------------------------------


@pytest.mark.parametrize("debug", [False, True])
def test_the_provider_logout_is_a_page_never_a_500(client, researcher, settings, debug):
    settings.DEBUG = debug
    anonymous = client.get("/o/logout/")
    assert anonymous.status_code == 302 and anonymous["Location"] == "http://testserver/"

    client.force_login(researcher)
    confirm = client.get("/o/logout/")
    assert confirm.status_code == 200
    page = confirm.content.decode()
    assert "Sign out of the portal" in page and 'name="allow"' in page
    assert client.get("/o/logout/", {"client_id": "nobody"}).status_code == 400
    assert client.get("/o/logout/", {"id_token_hint": "not.a.token"}).status_code == 400
    assert (
        client.get("/o/logout/", {"post_logout_redirect_uri": "https://evil.example/"}).status_code
        == 400
    )
    assert client.get("/").status_code == 200  # still signed in after the refusals

    done = client.post("/o/logout/", {"allow": "Sign out"})
    assert done.status_code == 302
    assert client.get("/").status_code == 302  # signed out


def test_the_hubs_logout_with_its_registered_return_is_honoured(client, researcher):
    document = client.get("/o/.well-known/openid-configuration").json()
    assert document["end_session_endpoint"] == "http://testserver/o/logout/"
    Application = get_application_model()
    Application.objects.create(
        client_id="hub",
        name="JupyterHub",
        client_type="confidential",
        authorization_grant_type="authorization-code",
        redirect_uris="http://hub.test/cb",
        post_logout_redirect_uris="http://hub.test/hub/logout",
        algorithm="RS256",
    )
    client.force_login(researcher)
    response = client.post(
        "/o/logout/",
        {
            "allow": "Sign out",
            "client_id": "hub",
            "post_logout_redirect_uri": "http://hub.test/hub/logout",
        },
    )
    assert response.status_code == 302 and response["Location"] == "http://hub.test/hub/logout"


# 5. The longest allocation, site-wide -------------------------------------------------------


@pytest.fixture
def open_facility(db):
    return FacilityFactory(slug="no-end", name="No End", latest_end_date=None)


def full_body(project, facility, *, days: int, **extra):
    today = timezone.localdate()
    return {
        "project": project.pk,
        "facility": facility.slug,
        "gpu_hours": 100,
        "justification": JUSTIFICATION,
        "start_date": today.isoformat(),
        "end_date": (today + dt.timedelta(days=days)).isoformat(),
        **extra,
    }


def test_a_full_request_cannot_end_in_9999(api, researcher, project, open_facility, settings):
    assert settings.PORTAL_MAX_ALLOCATION_DAYS == 1826
    client = api.as_user(researcher)
    body = {**full_body(project, open_facility, days=10), "end_date": "9999-12-31"}
    response = client.post("/api/v1/requests/", body, format="json")
    assert response.status_code == 400
    assert list(response.json()) == ["end_date"]
    assert "1826 days" in response.json()["end_date"][0]
    assert not AllocationRequest.objects.exists()


def test_the_longest_allocation_is_a_setting_for_create_and_update(
    api, researcher, project, open_facility, settings
):
    settings.PORTAL_MAX_ALLOCATION_DAYS = 100
    client = api.as_user(researcher)
    ok = client.post(
        "/api/v1/requests/", full_body(project, open_facility, days=100), format="json"
    )
    assert ok.status_code == 201, ok.json()
    too_long = client.post(
        "/api/v1/requests/", full_body(project, open_facility, days=101), format="json"
    )
    assert too_long.status_code == 400 and list(too_long.json()) == ["end_date"]

    end = (timezone.localdate() + dt.timedelta(days=101)).isoformat()
    edit = client.patch(f"/api/v1/requests/{ok.json()['id']}/", {"end_date": end}, format="json")
    assert edit.status_code == 400 and list(edit.json()) == ["end_date"]
    assert AllocationRequest.objects.get().end_date == timezone.localdate() + dt.timedelta(days=100)


def test_the_request_form_says_so_under_the_end_date(client, researcher, project, open_facility):
    client.force_login(researcher)
    today = timezone.localdate()
    response = client.post(
        "/requests/new/",
        {
            "project": project.pk,
            "facility": open_facility.slug,
            "kind": "full",
            "purpose": "new",
            "gpu_hours": 100,
            "cpu_hours": 0,
            "start_date": today.isoformat(),
            "end_date": "9999-12-31",
            "data_sensitivity": "public",
            "justification": JUSTIFICATION,
        },
    )
    assert response.status_code in (200, 400)
    assert "1826 days" in str(response.context["form"].errors.get("end_date"))
    assert not AllocationRequest.objects.exists()


# 6. Idempotency keys -----------------------------------------------------------------------


def test_the_same_key_returns_the_first_job_instead_of_a_second(api, researcher, allocation):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30}
    first = client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="launch-1")
    again = client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="launch-1")

    assert first.status_code == again.status_code == 201, again.json()
    assert again.json()["id"] == first.json()["id"] and again["Idempotent-Replayed"] == "true"
    assert Job.objects.count() == 1
    row = IdempotencyKey.objects.get()
    assert (row.user, row.key, row.kind, row.object_id) == (
        researcher,
        "launch-1",
        "job",
        first.json()["id"],
    )
    other = client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="launch-2")
    assert other.status_code == 201 and other.json()["id"] != first.json()["id"]


def test_the_same_key_with_another_body_is_a_409_and_changes_nothing(api, researcher, allocation):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30}
    assert (
        client.post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="k").status_code
        == 201
    )
    changed = client.post(
        "/api/v1/jobs/", {**body, "wall_time_minutes": 31}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert changed.status_code == 409
    assert "Idempotency-Key" in changed.json()["detail"]
    elsewhere = client.post(
        "/api/v1/sweeps/", {**body, "grid": GRID}, format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert elsewhere.status_code == 409
    assert Job.objects.count() == 1 and not Sweep.objects.exists()


def test_keys_are_per_user_and_expire_after_a_day(api, researcher, pi, allocation):
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30}
    mine = api.as_user(researcher).post(
        "/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="same"
    )
    theirs = api.as_user(pi).post("/api/v1/jobs/", body, format="json", HTTP_IDEMPOTENCY_KEY="same")
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]

    IdempotencyKey.objects.update(created_at=timezone.now() - dt.timedelta(hours=25))
    later = api.as_user(researcher).post(
        "/api/v1/jobs/", {**body, "name": ""}, format="json", HTTP_IDEMPOTENCY_KEY="same"
    )  # another body: new key
    assert later.status_code == 201 and Job.objects.count() == 3
    assert idempotency.prune() == 1 and IdempotencyKey.objects.get().object_id == later.json()["id"]


def test_a_refused_launch_keeps_no_key(api, researcher, allocation):
    client = api.as_user(researcher)
    refused = client.post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 2},
        format="json",
        HTTP_IDEMPOTENCY_KEY="retry-me",
    )
    assert refused.status_code == 400 and not IdempotencyKey.objects.exists()
    fixed = client.post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY="retry-me",
    )
    assert fixed.status_code == 201


@pytest.mark.parametrize("key", ["", " ", "x" * 256, "caf\u00e9"])
def test_a_malformed_key_is_a_400(api, researcher, allocation, key):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/",
        {"allocation": allocation.pk, "gpus": 1},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    assert response.status_code == 400 and "Idempotency-Key" in response.json()
    assert not Job.objects.exists()


def test_sweeps_and_notebooks_take_a_key_too(api, researcher, allocation, nb_allocation):
    client = api.as_user(researcher)
    body = {"allocation": allocation.pk, "gpus": 1, "wall_time_minutes": 30, "grid": GRID}
    first = client.post("/api/v1/sweeps/", body, format="json", HTTP_IDEMPOTENCY_KEY="s")
    again = client.post("/api/v1/sweeps/", body, format="json", HTTP_IDEMPOTENCY_KEY="s")
    assert first.status_code == again.status_code == 201
    assert first.json()["id"] == again.json()["id"] and Sweep.objects.count() == 1

    as_job = client.post(
        "/api/v1/jobs/", {**body, "workload": "sweep"}, format="json", HTTP_IDEMPOTENCY_KEY="js"
    )
    as_job_again = client.post(
        "/api/v1/jobs/", {**body, "workload": "sweep"}, format="json", HTTP_IDEMPOTENCY_KEY="js"
    )
    assert as_job.json()["id"] == as_job_again.json()["id"] and Sweep.objects.count() == 2

    nb = {"allocation": nb_allocation.pk, "gpus": 1, "hours": 1}
    first = client.post("/api/v1/notebooks/", nb, format="json", HTTP_IDEMPOTENCY_KEY="n")
    again = client.post("/api/v1/notebooks/", nb, format="json", HTTP_IDEMPOTENCY_KEY="n")
    assert first.status_code == again.status_code == 201, again.json()
    assert first.json()["id"] == again.json()["id"] and NotebookSession.objects.count() == 1
    assert again["Idempotent-Replayed"] == "true"


def test_the_schema_declares_the_header(api, researcher):
    schema = api.as_user(researcher).get("/api/v1/schema/", {"format": "json"}).json()
    for path in ("/api/v1/jobs/", "/api/v1/sweeps/", "/api/v1/notebooks/"):
        params = schema["paths"][path]["post"].get("parameters", [])
        header = [p for p in params if p["name"] == "Idempotency-Key"]
        assert header and header[0]["in"] == "header" and not header[0].get("required"), path
        assert "409" in schema["paths"][path]["post"]["responses"], path
    job = schema["components"]["schemas"]["JobOut"]["properties"]
    assert "queue_notice" in job


# 7. A queued job says when nobody serves the queue ---------------------------------------


def queued_job(allocation, researcher, *, seconds_ago: int) -> Job:
    job = Job.objects.create(
        allocation=allocation,
        created_by=researcher,
        gpus=1,
        wall_time_minutes=10,
        params={"model": "resnet18", "epochs": 2},
        token=f"portal-job-probe-{seconds_ago}",
    )
    Job.objects.filter(pk=job.pk).update(
        created_at=timezone.now() - dt.timedelta(seconds=seconds_ago)
    )
    return job


def test_a_job_queued_with_no_worker_says_so(api, client, researcher, allocation, settings):
    WorkerHeartbeat.objects.all().delete()
    job = queued_job(allocation, researcher, seconds_ago=600)
    body = api.as_user(researcher).get(f"/api/v1/jobs/{job.pk}/").json()
    assert "not being served" in body["queue_notice"]
    client.force_login(researcher)
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "not being served" in page

    heartbeat.beat()  # a worker is alive: nothing to say
    assert api.as_user(researcher).get(f"/api/v1/jobs/{job.pk}/").json()["queue_notice"] is None
    assert "not being served" not in client.get(f"/jobs/{job.pk}/").content.decode()


def test_a_fresh_job_or_a_stale_beat_long_ago_is_judged_by_age(
    api, researcher, allocation, settings
):
    WorkerHeartbeat.objects.all().delete()
    fresh = queued_job(allocation, researcher, seconds_ago=5)
    assert api.as_user(researcher).get(f"/api/v1/jobs/{fresh.pk}/").json()["queue_notice"] is None
    heartbeat.beat(
        at=timezone.now() - dt.timedelta(seconds=settings.PORTAL_WORKER_STALE_SECONDS + 5)
    )
    old = queued_job(allocation, researcher, seconds_ago=600)
    assert (
        "not being served"
        in api.as_user(researcher).get(f"/api/v1/jobs/{old.pk}/").json()["queue_notice"]
    )
    Job.objects.filter(pk=old.pk).update(state="running")
    assert api.as_user(researcher).get(f"/api/v1/jobs/{old.pk}/").json()["queue_notice"] is None


def test_the_heartbeat_task_is_on_the_beat_and_marks_the_worker_alive(settings):
    from launcher import tasks

    WorkerHeartbeat.objects.all().delete()
    assert heartbeat.last_beat() is None
    schedule = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "launcher.heartbeat" in schedule
    tasks.heartbeat.delay()
    assert heartbeat.worker_alive()
