"""POST /api/v1/recommendations/ against the seeded database: fit, rank, eligibility, refusals."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest

from allocations.demo import seed_catalogue
from benchmarks.demo import seed

pytestmark = pytest.mark.django_db
URL = "/api/v1/recommendations/"


@pytest.fixture
def seeded():
    seed_catalogue()
    seed()


def workload(**overrides):
    body = dict(
        model="densenet121",
        dims=2,
        image_size=224,
        dataset_samples=100_000,
        epochs=10,
        precision="fp32",
        gpus=1,
        batch_size=32,
        data_sensitivity="public",
    )
    body.update(overrides)
    return body


def by_node(answer):
    return {(r["facility"], r["node_type"]): r for r in answer["results"]}


def test_a_27b_gpt2_does_not_fit_a_32gb_v100_and_the_reason_says_why(seeded, api, researcher):
    answer = api.as_user(researcher).post(
        URL,
        workload(model="gpt2-xxl", dims=1, image_size=128, precision="fp32", batch_size=1),
        format="json",
    )
    assert answer.status_code == 200, answer.data
    v100 = by_node(answer.json())[("jade2", "J-V100-32")]
    assert v100["fits_memory"] is False
    reasons = " ".join(v100["reasons"])
    assert "39.6 GB of weights, gradients and Adam state" in reasons and "32 GB" in reasons
    assert by_node(answer.json())[("baskerville", "B-A100-80")]["fits_memory"] is True


def test_densenet121_on_224_slices_fits_a_v100(seeded, api, researcher):
    answer = api.as_user(researcher).post(URL, workload(), format="json").json()
    v100 = by_node(answer)[("jade2", "J-V100-32")]
    assert v100["fits_memory"] is True and v100["eligible"] is True
    assert v100["predicted_hours"] > 0 and v100["gpu_hours"] == v100["predicted_hours"]
    # JADE2's rate; money is a decimal string to 4 places.
    assert re.fullmatch(r"\d+\.\d{4}", v100["cost"])
    assert float(v100["cost"]) == pytest.approx(0.60 * v100["gpu_hours"], rel=1e-2)


def test_options_are_ranked_usable_first_then_fastest(seeded, api, researcher):
    answer = api.as_user(researcher).post(URL, workload(precision="fp16"), format="json").json()
    results = answer["results"]
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    usable = [r["eligible"] and r["fits_memory"] for r in results]
    assert usable == sorted(usable, reverse=True) and any(usable) and not all(usable)
    hours = [r["predicted_hours"] for r in results if r["eligible"] and r["fits_memory"]]
    assert hours == sorted(hours)
    for r in results:
        assert {
            "facility",
            "node_type",
            "rank",
            "fits_memory",
            "eligible",
            "predicted_hours",
            "gpu_hours",
            "cost",
            "confidence",
            "reasons",
            "request_url",
        } <= set(r)
    front = {(p["facility"], p["node_type"]) for p in answer["pareto"]}
    assert front == {(r["facility"], r["node_type"]) for r in results if r["pareto"]} != set()
    assert answer["request"]["model"] == "densenet121" and answer["request"]["needs"] == []


def test_each_option_links_to_the_prefilled_request_form(seeded, api, researcher):
    answer = (
        api.as_user(researcher)
        .post(URL, workload(dataset_samples=5_000_000, epochs=20), format="json")
        .json()
    )
    a100 = by_node(answer)[("baskerville", "B-A100-80")]
    url = urlsplit(a100["request_url"])
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert url.path == "/requests/new/"
    assert query["facility"] == "baskerville" and query["node_type"] == "B-A100-80"
    assert int(query["gpu_hours"]) == math.ceil(a100["gpu_hours"])
    assert query["kind"] == ("trial" if int(query["gpu_hours"]) <= 400 else "full")
    assert query["data_sensitivity"] == "public"


def test_special_category_data_only_where_the_facility_accepts_it(seeded, api, researcher):
    answer = (
        api.as_user(researcher)
        .post(URL, workload(data_sensitivity="special"), format="json")
        .json()
    )
    eligible = {r["facility"] for r in answer["results"] if r["eligible"]}
    assert eligible and eligible <= {"azure", "local", "local-slurm", "local-cloud"}
    jade = by_node(answer)[("jade2", "J-V100-32")]
    assert not jade["eligible"]
    assert any("does not accept special data" in reason for reason in jade["reasons"])


def test_needs_and_budget_are_policy(seeded, api, researcher):
    answer = (
        api.as_user(researcher)
        .post(URL, workload(needs=["root"], budget=0.01), format="json")
        .json()
    )
    for r in answer["results"]:
        if r["facility"] in ("jade2", "baskerville"):
            assert not r["eligible"]
            assert any("does not offer root access" in x for x in r["reasons"])
    assert not any(
        r["eligible"]
        for r in answer["results"]
        if r["cost"] and Decimal(r["cost"]) > Decimal("0.01")
    )


@pytest.mark.parametrize(
    "body, field, says",
    [
        (workload(model="alexnet"), "model", "allowed: densenet121, densenet169"),
        (workload(gpus=-2), "gpus", "between 1 and 4096"),
        (workload(epochs="lots"), "epochs", "Must be a number"),
        (workload(precision="fp8"), "precision", "allowed: auto, fp32, tf32, fp16, bf16"),
        (workload(model="gpt2", dims=2), "dims", "gpt2 is available with dims 1"),
        (workload(data_sensitivity="secret"), "data_sensitivity", "allowed: public, internal"),
        (workload(needs=["gpus"]), "needs", "allowed items: notebooks, root, public_web_service"),
    ],
)
def test_nonsense_is_a_400_that_says_what_is_allowed(seeded, api, researcher, body, field, says):
    answer = api.as_user(researcher).post(URL, body, format="json")
    assert answer.status_code == 400
    assert says in " ".join(answer.json()[field])


def test_a_body_that_is_not_an_object_is_a_400(seeded, api, researcher):
    answer = api.as_user(researcher).post(URL, [1, 2], format="json")
    assert answer.status_code == 400 and "non_field_errors" in answer.json()


def test_anonymous_callers_are_refused(seeded, api):
    assert api.post(URL, workload(), format="json").status_code == 401
