"""Ranking, the Pareto front, eligibility and refusals, through `recommend`."""

from __future__ import annotations

import pytest

from benchmarks.catalogue import WORKLOADS, all_results
from benchmarks.recommender import Recommendation, pareto_front, recommend
from tests.benchmarks.helpers import make_node, make_request, make_result

OUTPUT_FIELDS = {
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
}


def _by_name(recs):
    return {r.node_type: r for r in recs}


def test_every_node_type_gets_the_documented_fields(workloads, seed_nodes):
    ranked = recommend(make_request(), workloads, seed_nodes.values(), all_results())
    assert [r.rank for r in ranked] == list(range(1, len(seed_nodes) + 1))
    for rec in ranked:
        d = rec.as_dict()
        assert OUTPUT_FIELDS <= set(d)
        assert d["reasons"] and all(isinstance(s, str) for s in d["reasons"])


def test_faster_ranks_first_and_equal_speed_is_broken_by_cost():
    fast = make_node("fast", gpu_hour_rate=5.0)
    slow = make_node("slow", gpu_hour_rate=0.1)
    twin = make_node("twin", accelerator="acc-fast", gpu_hour_rate=1.0)
    results = [make_result("fast", throughput=2000.0), make_result("slow", throughput=500.0)]
    ranked = recommend(make_request(), WORKLOADS, [slow, fast, twin], results)
    assert [r.node_type for r in ranked] == ["twin", "fast", "slow"]
    twin_rec, fast_rec = ranked[0], ranked[1]
    assert twin_rec.predicted_hours == pytest.approx(fast_rec.predicted_hours)
    assert twin_rec.cost < fast_rec.cost


def test_predicted_hours_gpu_hours_and_costs_follow_from_throughput():
    node = make_node("a", gpu_hour_rate=2.0)
    req = make_request(dataset_samples=36_000, epochs=10, gpus=2)
    (rec,) = recommend(
        req, WORKLOADS, [node], [make_result("a", gpus=2, throughput=100.0, strategy="ddp")]
    )
    assert rec.predicted_hours == pytest.approx(1.0)
    assert rec.gpu_hours == pytest.approx(2.0)
    assert rec.cost == pytest.approx(4.0)


def test_cloud_bills_whole_instances_at_spot_and_on_demand_prices():
    node = make_node(
        "p4",
        kind="cloud",
        accelerators_per_node=8,
        price_spot=10.0,
        price_on_demand=30.0,
        gpu_hour_rate=0.0,
    )
    req = make_request(dataset_samples=3_600_000, epochs=1)
    (rec,) = recommend(req, WORKLOADS, [node], [make_result("p4", throughput=1000.0)])
    assert rec.predicted_hours == pytest.approx(1.0)
    assert rec.cost == pytest.approx(10.0) and rec.cost_on_demand == pytest.approx(30.0)
    assert any("you pay for 8, use 1" in s for s in rec.reasons)


def test_non_fitting_and_ineligible_systems_rank_after_usable_ones():
    usable = make_node("ok")
    small = make_node("small", memory_gb=2)  # fastest, but densenet121 at batch 256 won't fit
    closed = make_node("closed", allowed_sensitivity=("public",))
    results = [
        make_result("ok", throughput=100.0),
        make_result("small", throughput=9000.0),
        make_result("closed", throughput=9000.0),
    ]
    req = make_request(batch_size=256, data_sensitivity="internal")
    ranked = recommend(req, WORKLOADS, [small, closed, usable], results)
    assert ranked[0].node_type == "ok"
    names = _by_name(ranked)
    assert not names["small"].fits_memory and names["small"].eligible
    assert names["closed"].fits_memory and not names["closed"].eligible


def test_pareto_front_keeps_only_undominated_time_cost_options():
    def rec(name, hours, cost, eligible=True):
        return Recommendation(
            facility="f",
            node_type=name,
            accelerator="x",
            kind="hpc",
            fits_memory=True,
            eligible=eligible,
            predicted_hours=hours,
            cost=cost,
        )

    recs = [
        rec("quick-dear", 1, 100),
        rec("slow-cheap", 10, 5),
        rec("dominated", 5, 200),
        rec("middle", 4, 50),
        rec("tie-later", 4, 50),
        rec("refused", 0.1, 0.1, False),
    ]
    assert [r.node_type for r in pareto_front(recs)] == ["quick-dear", "middle", "slow-cheap"]


def test_recommend_marks_the_pareto_front(workloads, seed_nodes):
    ranked = recommend(make_request(), workloads, seed_nodes.values(), all_results())
    front = [r for r in ranked if r.pareto]
    assert front and all(r.eligible and r.fits_memory for r in front)
    assert ranked[0].pareto  # the fastest usable option is never dominated


@pytest.mark.parametrize(
    "need, offering",
    [("root", "root"), ("notebooks", "notebooks"), ("public_web_service", "public_web_service")],
)
def test_needs_exclude_facilities_that_do_not_offer_them(need, offering):
    yes = make_node("yes", **{offering: True})
    no = make_node("no")
    results = [make_result("yes"), make_result("no")]
    ranked = _by_name(recommend(make_request(needs=(need,)), WORKLOADS, [yes, no], results))
    assert ranked["yes"].eligible
    assert not ranked["no"].eligible
    assert any("does not offer" in s for s in ranked["no"].reasons)


def test_personal_data_only_goes_where_the_facility_accepts_it(workloads, seed_nodes):
    ranked = _by_name(
        recommend(
            make_request(data_sensitivity="personal"), workloads, seed_nodes.values(), all_results()
        )
    )
    assert not ranked["J-V100-32"].eligible
    assert any("does not accept personal data" in s for s in ranked["J-V100-32"].reasons)
    assert ranked["J-V100-32"].predicted_hours is not None  # still shown what it would take
    assert ranked["p5.48xlarge"].eligible


def test_budget_and_deadline_refuse_options_that_overrun_them():
    cheap_slow = make_node("cheap", gpu_hour_rate=0.5)
    dear_fast = make_node("dear", gpu_hour_rate=50.0)
    results = [make_result("cheap", throughput=100.0), make_result("dear", throughput=1000.0)]
    req = make_request(dataset_samples=360_000, epochs=1, budget=10.0, deadline_hours=0.5)
    ranked = _by_name(recommend(req, WORKLOADS, [cheap_slow, dear_fast], results))
    # cheap: 1 h, $0.50 -> past the deadline; dear: 0.1 h, $5 -> within both.
    assert not ranked["cheap"].eligible
    assert any("past the deadline" in s for s in ranked["cheap"].reasons)
    assert ranked["dear"].eligible
    over = make_request(dataset_samples=360_000, epochs=1, budget=1.0)
    ranked = _by_name(recommend(over, WORKLOADS, [cheap_slow, dear_fast], results))
    assert not ranked["dear"].eligible and ranked["cheap"].eligible
    assert any("over the budget" in s for s in ranked["dear"].reasons)


def test_unsupported_precision_and_too_many_gpus_are_refused(workloads, seed_nodes):
    fp32_only = make_node("old", peak_tflops={"fp16": None, "bf16": None, "fp32": 10.0})
    ranked = _by_name(
        recommend(
            make_request(precision="bf16"),
            workloads,
            [*seed_nodes.values(), fp32_only],
            all_results(),
        )
    )
    old = ranked["old"]
    assert not old.eligible and old.predicted_hours is None
    assert any("no bf16 support" in s for s in old.reasons)
    ranked = _by_name(
        recommend(
            make_request(gpus=2, precision="fp32"), workloads, seed_nodes.values(), all_results()
        )
    )
    assert not ranked["local-cpu"].eligible
