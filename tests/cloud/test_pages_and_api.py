"""What people see: clusters on the API (others' are 404), the cluster page, the allocation's
cost per day stacked by instance type, and the admin's price refresh."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.test import Client

from allocations.selectors import allocation_ledger
from core.figures import exact as exact_figure
from launcher import services, tasks
from launcher.cloud import clock
from launcher.cloud.models import PriceCatalogueEntry
from launcher.cloud.pages import allocation_sections
from launcher.cloud.services import cluster_sync, price_catalogue_refresh_spot, task_launch
from launcher.cloud.workload import TINY, ctxray_argv

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def charged(allocation, cluster, researcher):
    """Two workers of different types ran for 90 minutes and were charged."""
    for itype in ("g5.xlarge", "g5.12xlarge"):
        task_launch(
            allocation=allocation,
            by=researcher,
            instance_type=itype,
            argv=ctxray_argv({**TINY, "epochs": 1}),
            data_prefix="x/",
            hours=Decimal("1"),
        )
    cluster_sync(cluster_id=cluster.pk)
    clock.advance(90 * 60)
    cluster_sync(cluster_id=cluster.pk)
    return cluster


def test_clusters_are_listed_for_members_and_hidden_from_others(api, charged, researcher, outsider):
    body = api.as_user(researcher).get("/api/v1/clusters/").json()
    assert [c["id"] for c in body["results"]] == [charged.pk]
    detail = api.get(f"/api/v1/clusters/{charged.pk}/").json()
    assert {n["role"] for n in detail["nodes"]} == {"worker"}  # no head node
    assert "head_instance_type" not in detail and detail["idle_seconds"] == charged.idle_seconds
    assert {n["market"] for n in detail["nodes"] if n["role"] == "worker"} == {"spot"}
    assert all(
        n["image_id"].startswith("ami-") and n["image_source"].startswith("ssm:")
        for n in detail["nodes"]
    )
    assert detail["instance_profile"] == charged.instance_profile != ""
    assert api.as_user(outsider).get(f"/api/v1/clusters/{charged.pk}/").status_code == 404
    assert api.get("/api/v1/clusters/").json()["results"] == []


def test_the_cost_per_day_is_stacked_by_instance_type(charged, allocation, researcher, outsider):
    sections = allocation_sections(allocation, researcher)
    figure = sections[0]["data"]["cost"]["figure"]
    assert figure["layout"]["barmode"] == "stack" and figure["layout"]["showlegend"] is True
    names = {trace["name"] for trace in figure["data"]}
    assert names == {"g5.xlarge", "g5.12xlarge"}  # the workers only: no head's t3.large
    quad = next(t for t in figure["data"] if t["name"] == "g5.12xlarge")
    # Charged per whole minute as it accrues: 89 or 90 minutes of the catalogue's spot price,
    # depending on where the launch fell within its first minute.
    assert sum(quad["y"]) == pytest.approx(2.105 * 1.5, abs=2.105 / 60 + 0.005)
    # One tick per day, each labelled once, the bars' days whole inside the axis: left to
    # itself plotly ticked every 12 hours and wrote "26 Nov, 26 Nov, 27 Nov" under one bar.
    axis = figure["layout"]["xaxis"]
    days = sorted({dt.date.fromisoformat(x) for trace in figure["data"] for x in trace["x"]})
    assert axis["dtick"] == 86_400_000 and axis["tickformat"] == "%d %b"
    low, high = (dt.datetime.fromisoformat(edge) for edge in axis["range"])
    half_bar = dt.timedelta(days=0.4)  # each bar is 0.8 of a day wide, centred on its day
    assert low < dt.datetime.combine(days[0], dt.time()) - half_bar
    assert high > dt.datetime.combine(days[-1], dt.time()) + half_bar
    assert all(trace["width"] == [86_400_000 * 0.8] * len(trace["x"]) for trace in figure["data"])
    assert allocation_sections(allocation, outsider) == []


def test_an_allocation_off_the_cloud_is_not_asked_for_a_cluster(
    charged, allocation, researcher, django_assert_num_queries
):
    """Only the cloud backend makes clusters: an allocation of another backend's facility gets
    no cost section and its page runs no query for one."""
    allocation.facility.backend = "local"
    with django_assert_num_queries(0):
        assert allocation_sections(allocation, researcher) == []


def test_the_cluster_page_shows_nodes_and_spend(charged, researcher, outsider):
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/clusters/{charged.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "g5.12xlarge" in html and 'id="chart-cluster-cost"' in html
    worker = charged.nodes.filter(role="worker").first()
    assert worker.image_id in html and charged.instance_profile in html
    assert "<td>head</td>" not in html and html.count("<td>worker</td>") == 2
    client.force_login(outsider)
    assert client.get(f"/clusters/{charged.pk}/").status_code == 404


def test_spot_refresh_keeps_real_prices_when_the_endpoint_answers_dummies(cloud_facility):
    before = PriceCatalogueEntry.objects.get(instance_type="g5.xlarge", market="spot")
    result = price_catalogue_refresh_spot(facility=cloud_facility)
    assert result == {"updated": 0, "skipped_implausible": 2}  # moto's 0.00001
    after = PriceCatalogueEntry.objects.get(instance_type="g5.xlarge", market="spot")
    assert after.price_per_hour == before.price_per_hour == Decimal("0.362")
    assert "aws.amazon.com" in after.source_url and after.as_of.isoformat() == "2024-06-01"


@pytest.mark.parametrize("page", ["launch", "sweep"])
def test_more_gpus_than_any_instance_has_is_a_form_error_not_a_500(allocation, researcher, page):
    """No instance type offers 64 GPUs: the API's 400 on `gpus`, saying what the facility
    offers, under the form's field (it was a 500 on both pages, then a price error for the
    whole form)."""
    client = Client()
    client.force_login(researcher)
    form = {
        "model": "resnet18",
        "dataset": "synthetic-ct",
        "epochs": "1",
        "gpus": "64",
        "wall_time_minutes": "30",
        "lr": "0.001",
        "batch_size": "2",
        "synthetic_n": "2000",
    }
    if page == "sweep":
        form = {
            "name": "big",
            "models": ["resnet18"],
            "lrs": "1e-3",
            "lr_steps": "5",
            "weight_decays": "0.0001",
            "folds": "2",
            "epochs": "1",
            "patience": "",
            "size": "64",
            "batch_size": "2",
            "dataset": "synthetic-ct",
            "synthetic_n": "2000",
            "gpus": "64",
            "wall_time_minutes": "30",
            "concurrency": "1",
            "launch": "1",
        }
    response = client.post(f"/allocations/{allocation.pk}/{page}/", form)
    assert response.status_code == 400
    facility = allocation.facility.name
    assert response.context["form"].errors == {
        "gpus": [
            f"{facility} offers at most 4 GPUs per job (a job runs on one node, and its largest, "
            "g5.12xlarge, has 4), so a run needing 64 could never start there: ask for at most 4."
        ]
    }
    assert not allocation.jobs.exists()


def test_the_cost_sections_left_is_the_ledgers_with_reservations(
    charged, allocation, researcher, monkeypatch
):
    """The cloud section and the cluster page say the same "left" as the ledger's Budget line
    beside them: charges and the reservation of an unfinished job both subtracted."""
    monkeypatch.setattr(tasks.submit_job, "delay", lambda job_id: None)
    services.job_launch(
        by=researcher,
        allocation=allocation,
        gpus=1,
        wall_time_minutes=60,
        params={"model": "resnet18", "epochs": 1, "dataset": "synthetic-ct", "synthetic_n": 24},
    )
    ledger = allocation_ledger(allocation.pk)
    assert ledger.cost_reserved > 0 and ledger.spend > 0
    left = ledger.budget - ledger.spend - ledger.cost_reserved
    assert ledger.budget_remaining == left
    client = Client()
    client.force_login(researcher)
    html = client.get(f"/allocations/{allocation.pk}/").content.decode()
    exact = re.compile(r'title="([0-9.]+) \(exact\)"')
    budget_line = re.search(r'<dd id="budget">(.*?)</dd>', html, re.S).group(1)
    cloud_left = re.search(r'<span id="cloud-left">(.*?)</span> left', html, re.S).group(1)
    assert (
        Decimal(exact.findall(budget_line)[-1])
        == Decimal(exact.search(cloud_left).group(1))
        == left
    )
    cloud_reserved = re.search(r'<span id="cloud-reserved">(.*?)</span>', html, re.S).group(1)
    assert Decimal(exact.search(cloud_reserved).group(1)) == ledger.cost_reserved
    cluster_html = client.get(f"/clusters/{charged.pk}/").content.decode()
    assert f'title="{exact_figure(left)} (exact)"' in cluster_html
