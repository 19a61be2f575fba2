"""Placement without a cluster (docs/placement.md): POST placements/ answers for every allocation
Rosalind may launch on, eligible or why not, ranked by finish or cost with reasons; Charlie's
allocations never appear; bad input is a 400 naming its field; `"allocation": "auto"` launches
on the first-ranked and the job keeps the ranking, which its page shows; the calibration API
and page show placement's error per facility."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import Allocation, Dataset
from launcher.cloud.models import Cluster, Interruption, Node
from launcher.cloud.starts import DEFAULT_READY_SECONDS, cloud_start_estimate
from launcher.models import Job
from tests.factories import FacilityFactory, open_job

pytestmark = [pytest.mark.django_db]

URL = "/api/v1/placements/"
JOB = {"gpus": 1, "wall_time_minutes": 30, "params": {"model": "resnet18", "epochs": 1}}


def allocate(project, facility, **fields) -> Allocation:
    today = timezone.localdate()
    values = dict(
        project=project,
        facility=facility,
        gpu_hours=Decimal(20),
        start_date=today,
        end_date=today + dt.timedelta(days=30),
        status="active",
        account_name=f"{facility.slug}-a",
    )
    return Allocation.objects.create(**{**values, **fields})


@pytest.fixture
def local_jobs(settings, tmp_path):
    settings.LOCAL_JOBS_DIR = tmp_path / "local-jobs"
    return settings.LOCAL_JOBS_DIR


@pytest.fixture
def dear(project, local_jobs):
    """Two slots at 2.00 a GPU-hour."""
    facility = FacilityFactory(
        slug="dear-local", backend="local", gpu_hour_rate=Decimal("2.00"),
        backend_settings={"slots": 2}, allowed_sensitivity=["public"],
    )  # fmt: skip
    return allocate(project, facility)


@pytest.fixture
def cheap(project, local_jobs):
    """One slot at 0.50 a GPU-hour."""
    facility = FacilityFactory(
        slug="cheap-local", backend="local", gpu_hour_rate=Decimal("0.50"),
        backend_settings={"slots": 1},
    )  # fmt: skip
    return allocate(project, facility)


@pytest.fixture
def theirs(other_project, local_jobs):
    facility = FacilityFactory(slug="charlies-local", backend="local")
    return allocate(other_project, facility)


def place(api, user, **body):
    return api.as_user(user).post(URL, {**JOB, **body}, format="json")


def by_facility(body):
    return {o["facility"]: o for o in body["options"]}


def busy(allocation, user, minutes=25):
    """A job running on the allocation's facility, holding a slot for `minutes` more."""
    return open_job(
        allocation=allocation,
        created_by=user,
        token=f"portal-job-busy{allocation.pk}",
        state="running",
        wall_time_minutes=minutes,
        started_at=timezone.now(),
        estimate_gpu_hours=Decimal(minutes) / 60,
    )


def test_every_allocation_is_answered_with_its_prediction_wait_finish_and_charge(
    api, researcher, dear, cheap
):
    response = place(api, researcher)

    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["prefer"] == "finish" and body["chosen"] == cheap.pk
    option = by_facility(body)["cheap-local"]
    assert option["eligible"] is True and option["rank"] == 1 and option["refusals"] == []
    assert option["wait"]["source"] == "slots" and option["wait"]["seconds"] == 0
    assert option["run"]["seconds"] == 30 * 60 and option["run"]["source"] == "wall-time"
    assert option["finish_at"] and option["start_at"] and option["wall_time_minutes"] == 30
    # Hours are numbers, money decimal strings (docs/api.md, "Figures").
    assert (option["gpu_hours"], option["cost"]) == (0.5, "0.2500")
    assert option["left_gpu_hours"] == 19.5 and option["reserve_cost"] == "0.2500"
    # A minute apart is a tie: the cheaper goes first, and both say so in words.
    assert option["reason"].startswith("Finishes first: finish predicted")
    assert "which costs less" in by_facility(body)["dear-local"]["reason"]
    assert body["summary"].startswith("placed on cheap-local: finish predicted")


def test_the_earliest_finish_wins_when_the_cheap_one_is_full(api, researcher, dear, cheap):
    busy(cheap, researcher, minutes=25)

    body = place(api, researcher).json()

    assert [o["facility"] for o in body["options"]] == ["dear-local", "cheap-local"]
    waiting = by_facility(body)["cheap-local"]
    assert 24 * 60 < waiting["wait"]["seconds"] <= 25 * 60
    assert "1 of 1 slot in use" in waiting["wait"]["basis"]
    assert waiting["reason"].startswith("Finishes 25 min after dear-local")
    assert "cheap-local" in body["summary"] and "(queue 25 min)" in body["summary"]


def test_a_facility_whose_waits_came_in_at_a_tenth_gets_its_next_wait_corrected(
    api, researcher, dear, cheap
):
    now = timezone.now()
    for i, (raw, real) in enumerate([(1500, 140), (1200, 130), (900, 85), (600, 60), (300, 30)]):
        launched = now - dt.timedelta(hours=2, minutes=i)
        open_job(
            allocation=cheap, created_by=researcher, token=f"portal-job-past{i}",
            state="succeeded", created_at=launched, predicted_wait_seconds=raw // 2,
            placement={"options": [{"allocation": cheap.pk, "wait": {"raw_seconds": raw}}]},
            started_at=launched + dt.timedelta(seconds=real), finished_at=now,
        )  # fmt: skip
    busy(cheap, researcher, minutes=25)

    waiting = by_facility(place(api, researcher).json())["cheap-local"]

    # Learnt from the raw estimates (1500 s ...), not the corrected ones each job kept.
    assert 24 * 60 < waiting["wait"]["raw_seconds"] <= 25 * 60
    assert waiting["wait"]["seconds"] == pytest.approx(
        waiting["wait"]["raw_seconds"] * 0.1, rel=0.01
    )
    assert "x 0.10, the median real / predicted wait of the last 5" in waiting["wait"]["basis"]
    untaught = by_facility(place(api, researcher).json())["dear-local"]["wait"]
    assert untaught["raw_seconds"] == untaught["seconds"] == 0


def test_prefer_cost_puts_the_cheapest_first_even_when_it_finishes_later(
    api, researcher, dear, cheap
):
    busy(cheap, researcher, minutes=25)

    body = place(api, researcher, prefer="cost").json()

    assert body["chosen"] == cheap.pk
    assert by_facility(body)["dear-local"]["reason"].startswith("Costs $0.75 more than cheap-local")


def test_ineligible_allocations_are_listed_with_the_reason(api, researcher, project, dear, cheap):
    cheap.status = "suspended"
    cheap.save(update_fields=["status"])
    manual = allocate(project, FacilityFactory(slug="by-hand", backend="manual"))
    allocate(project, FacilityFactory(slug="small-local", backend="local"), gpu_hours=0)
    Dataset.objects.create(
        project=project, name="ward-scans", location="scans", modality="ct",
        sensitivity="internal", created_by=researcher,
    )  # fmt: skip

    body = place(api, researcher, params={"dataset": "ward-scans"}).json()

    options = by_facility(body)
    assert set(options) == {"dear-local", "cheap-local", "by-hand", "small-local"}
    assert all(not o["eligible"] and o["rank"] is None for o in options.values())
    assert body["chosen"] is None and body["summary"] == "No allocation could take it."
    assert "suspended" in options["cheap-local"]["refusals"][0]
    assert "not connected" in options["by-hand"]["refusals"][0]
    assert "GPU-hours" in options["small-local"]["refusals"][-1]
    assert "ward-scans cannot be used here" in options["dear-local"]["refusals"][0]
    assert options["dear-local"]["reason"].startswith("Not eligible: ward-scans")
    assert manual.pk in {o["allocation"] for o in body["options"]}


def test_a_job_larger_than_the_facility_is_ineligible_not_an_error(api, researcher, dear, cheap):
    body = place(api, researcher, gpus=2).json()

    options = by_facility(body)
    assert options["dear-local"]["eligible"] is True
    assert "runs at most 1 GPU" in options["cheap-local"]["refusals"][0]


def test_others_allocations_are_never_considered_or_revealed(
    api, researcher, outsider, dear, theirs, other_project
):
    mine = place(api, researcher).json()
    assert {o["allocation"] for o in mine["options"]} == {dear.pk}

    theirs_only = place(api, outsider).json()
    assert {o["allocation"] for o in theirs_only["options"]} == {theirs.pk}

    response = place(api, researcher, project=other_project.pk)
    assert response.status_code == 400 and list(response.json()) == ["project"]
    again = place(api, researcher, project=987654)
    assert again.json() == response.json()  # another's project reads as one that is not there


@pytest.mark.parametrize(
    "body,field",
    [
        ({"gpus": 0}, "gpus"),
        ({"gpus": "two"}, "gpus"),
        ({"prefer": "fastest"}, "prefer"),
        ({"project": "abc"}, "project"),
        ({"wall_time_minutes": 0}, "wall_time_minutes"),
        ({"params": {"epochs": "many"}}, "params"),
        ({"workload": "sweep"}, "grid"),
        ({"workload": "sweep", "grid": {"models": []}}, "grid"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, researcher, dear, body, field):
    response = place(api, researcher, **body)

    assert response.status_code == 400
    assert field in response.json(), response.json()


def test_a_sweep_is_placed_in_rounds_of_what_runs_at_once(api, researcher, dear):
    grid = {"models": ["resnet18"], "lrs": [1e-3, 1e-4], "lr_steps": [5], "weight_decays": [0]}

    body = place(api, researcher, workload="sweep", grid=grid, concurrency=4).json()

    option = by_facility(body)["dear-local"]
    assert option["runs"] == 2 and option["rounds"] == 1  # two slots: both at once
    assert option["reserve_gpu_hours"] == 1.0


def test_auto_launches_on_the_first_ranked_and_the_job_keeps_the_ranking(
    api, researcher, dear, cheap
):
    busy(cheap, researcher, minutes=25)

    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {**JOB, "allocation": "auto"}, format="json"
    )

    assert response.status_code == 201, response.json()
    job = Job.objects.get(pk=response.json()["id"])
    assert job.allocation_id == dear.pk and job.wall_time_minutes == 30
    assert job.placement["chosen"] == dear.pk and job.placement["prefer"] == "finish"
    assert [o["facility"] for o in job.placement["options"]] == ["dear-local", "cheap-local"]
    assert job.predicted_wait_seconds == 0
    assert abs((job.predicted_finish_at - job.created_at).total_seconds() - 30 * 60) < 60
    assert response.json()["placement"]["summary"].startswith("placed on dear-local")


def test_auto_with_nothing_eligible_is_a_409_that_says_why(api, researcher, dear):
    dear.status = "exhausted"
    dear.save(update_fields=["status"])

    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {**JOB, "allocation": "auto"}, format="json"
    )

    assert response.status_code == 409
    assert "dear-local" in response.json()["detail"] and "exhausted" in response.json()["detail"]
    assert not Job.objects.exists()


def test_auto_on_sweeps_launches_there_and_every_cell_keeps_the_placement(api, researcher, dear):
    grid = {"models": ["resnet18"], "lrs": [1e-3, 1e-4], "lr_steps": [5], "weight_decays": [0]}

    response = api.as_user(researcher).post(
        "/api/v1/sweeps/",
        {"allocation": "auto", "gpus": 1, "wall_time_minutes": 30, "grid": grid},
        format="json",
    )

    assert response.status_code == 201, response.json()
    assert response.json()["allocation"] == dear.pk
    cells = Job.objects.filter(sweep_id=response.json()["id"])
    assert cells.count() == 2
    assert all(c.placement["chosen"] == dear.pk for c in cells)
    assert all(c.predicted_wait_seconds == 0 for c in cells)


def test_a_named_allocation_does_not_take_a_project(api, researcher, dear, project):
    response = api.as_user(researcher).post(
        "/api/v1/jobs/", {**JOB, "allocation": dear.pk, "project": project.pk}, format="json"
    )

    assert response.status_code == 400 and list(response.json()) == ["project"]


def test_the_job_page_shows_where_it_was_placed_and_the_alternatives(
    client, api, researcher, dear, cheap
):
    busy(cheap, researcher, minutes=25)
    job_id = (
        api.as_user(researcher)
        .post("/api/v1/jobs/", {**JOB, "allocation": "auto"}, format="json")
        .json()["id"]
    )
    client.force_login(researcher)

    page = client.get(f"/jobs/{job_id}/").content.decode()

    assert 'id="job-placement"' in page
    assert "Placed on dear-local: finish predicted" in page
    assert "cheap-local" in page and "(queue 25 min)" in page


def test_the_calibration_api_shows_the_placement_error_per_facility(api, researcher, dear, cheap):
    now = timezone.now()
    for i, (predicted, real) in enumerate([(0, 10), (60, 30), (120, 300)]):
        open_job(
            allocation=dear, created_by=researcher, token=f"portal-job-cal{i}", state="succeeded",
            created_at=now - dt.timedelta(hours=1), predicted_wait_seconds=predicted,
            started_at=now - dt.timedelta(hours=1) + dt.timedelta(seconds=real),
            predicted_finish_at=now - dt.timedelta(minutes=30), finished_at=now - dt.timedelta(minutes=29),
        )  # fmt: skip
    open_job(allocation=cheap, created_by=researcher, token="portal-job-unplaced", state="running",
             started_at=now)  # fmt: skip

    body = api.as_user(researcher).get(URL + "calibration/").json()

    assert [row["facility"] for row in body["facilities"]] == ["dear-local"]
    row = body["facilities"][0]
    assert row["jobs"] == 3 and row["wait_median"] == 30.0  # |0-10|, |60-30|, |120-300|
    assert row["wait_p90"] == pytest.approx(150.0)  # between 30 and 180
    assert row["finished"] == 3 and row["finish_median"] == 60.0

    page = api.as_user(researcher).get("/benchmarks/").content.decode()
    assert 'id="placement-errors"' in page and "dear-local" in page


FORM = {"model": "resnet18", "dataset": "synthetic-ct", "epochs": "1", "gpus": "1",
        "wall_time_minutes": "30"}  # fmt: skip


def test_place_it_for_me_on_the_launch_form_goes_where_it_finishes_first(
    client, researcher, dear, cheap
):
    busy(cheap, researcher, minutes=25)
    client.force_login(researcher)

    page = client.get(f"/allocations/{cheap.pk}/").content.decode()
    assert "Place it for me" in page
    response = client.post(f"/allocations/{cheap.pk}/launch/", {**FORM, "place": "on"})

    job = Job.objects.get(created_by=researcher, placement__isnull=False)
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.allocation_id == dear.pk and job.placement["chosen"] == dear.pk

    plain = client.post(f"/allocations/{cheap.pk}/launch/", FORM)
    assert plain.status_code == 302
    assert (
        Job.objects.filter(allocation=cheap, placement__isnull=True)
        .exclude(token__startswith="portal-job-busy")
        .exists()
    )


SWEEP_FORM = {"name": "placed", "models": ["resnet18"], "lrs": "1e-3, 1e-4", "lr_steps": "5",
              "weight_decays": "0.0001", "folds": "1", "epochs": "1", "size": "64",
              "batch_size": "16", "dataset": "synthetic-ct", "synthetic_n": "300", "gpus": "1",
              "wall_time_minutes": "30", "concurrency": "2"}  # fmt: skip


def test_place_it_for_me_on_the_sweep_form_launches_every_cell_where_it_finishes_first(
    client, researcher, dear, cheap
):
    busy(cheap, researcher, minutes=25)
    client.force_login(researcher)

    form = client.get(f"/allocations/{cheap.pk}/sweep/").content.decode()
    assert 'name="place"' in form and "Place it for me" in form
    response = client.post(
        f"/allocations/{cheap.pk}/sweep/", {**SWEEP_FORM, "place": "on", "launch": "1"}
    )

    cells = Job.objects.filter(sweep__isnull=False)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert response["Location"] == f"/sweeps/{cells.first().sweep_id}/"
    assert cells.count() == 2 and {c.allocation_id for c in cells} == {dear.pk}
    assert all(c.placement["chosen"] == dear.pk for c in cells)

    plain = client.post(f"/allocations/{cheap.pk}/sweep/", {**SWEEP_FORM, "launch": "1"})
    assert plain.status_code == 302
    assert Job.objects.filter(sweep__isnull=False, allocation=cheap).count() == 2


def test_the_cloud_waits_for_a_ready_worker_as_measured_or_says_there_is_none(project):
    facility = FacilityFactory(slug="spot-cloud", kind="cloud", backend="aws")
    allocation = allocate(project, facility)
    nothing = cloud_start_estimate(allocation)
    assert nothing.wait_seconds == DEFAULT_READY_SECONDS
    assert nothing.basis.startswith("no measurement yet") and nothing.interruption_rate is None

    cluster = Cluster.objects.create(
        allocation=allocation, facility=facility, region="eu-west-2", bucket="b", prefix="p/"
    )
    now = timezone.now()
    for i, ready in enumerate((90, 120, 400, 150)):
        node = Node.objects.create(
            cluster=cluster, role="worker", token=f"n{i}", instance_type="g5.xlarge",
            market="spot", state="terminated", created_at=now - dt.timedelta(hours=i + 1),
            running_at=now - dt.timedelta(hours=i + 1) + dt.timedelta(seconds=ready),
        )  # fmt: skip
        if i == 0:
            Interruption.objects.create(node=node, source="notice")

    measured = cloud_start_estimate(allocation)

    assert measured.wait_seconds == 135  # the median of 90, 120, 150, 400
    assert "the median time to a ready worker over the last 4" in measured.basis
    assert measured.interruption_rate == 0.25 and "1 of the last 4 spot workers" in measured.basis
