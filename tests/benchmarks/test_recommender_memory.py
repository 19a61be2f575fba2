"""Memory fit: what a GPU can hold for full training, per strategy, and why not."""

from __future__ import annotations

from benchmarks.catalogue import WORKLOADS
from benchmarks.recommender import memory, recommend
from tests.benchmarks.helpers import make_request

WL = {(w.model, w.dims): w for w in WORKLOADS}


def test_a_2_7_billion_parameter_gpt2_does_not_fit_a_32gb_v100(seed_nodes):
    v100 = seed_nodes["J-V100-32"]
    gpt = WL[("gpt2-xxl", 1)]
    assert 2.6e9 < gpt.parameters < 2.7e9
    for precision in ("fp32", "fp16"):
        req = make_request(
            model="gpt2-xxl", dims=1, image_size=128, precision=precision, batch_size=1
        )
        mem = memory.choose(gpt, req, v100)
        assert not mem.fits
        assert mem.states_gb > 32  # weights + grads + Adam alone exceed the card
        text = memory.explain(gpt, req, v100, mem)
        assert "Does not fit in 32 GB" in text and "2.66 B parameters" in text
        assert "FSDP or DeepSpeed ZeRO-3 it would fit on 2 or more GPUs" in text


def test_densenet121_at_224_fits_a_32gb_v100(seed_nodes):
    req = make_request(precision="fp32", batch_size=32)
    mem = memory.choose(WL[("densenet121", 2)], req, seed_nodes["J-V100-32"])
    assert mem.fits and mem.strategy == "single"
    assert 1 < mem.total_gb < 32


def test_sharding_divides_the_states_and_auto_picks_fsdp_when_ddp_does_not_fit(seed_nodes):
    gpt, v100 = WL[("gpt2-xxl", 1)], seed_nodes["J-V100-32"]
    req = make_request(model="gpt2-xxl", dims=1, image_size=128, gpus=4, batch_size=4)
    ddp = memory.estimate(gpt, req, v100, "ddp")
    fsdp = memory.estimate(gpt, req, v100, "fsdp")
    assert abs(fsdp.states_gb * 4 - ddp.states_gb) < 1e-9
    assert not ddp.fits and fsdp.fits
    assert memory.choose(gpt, req, v100).strategy == "fsdp"


def test_activations_grow_with_batch_size_and_pixels(seed_nodes):
    dn, node = WL[("densenet121", 2)], seed_nodes["B-A100-40"]
    small = memory.estimate(dn, make_request(batch_size=8), node, "single")
    double_batch = memory.estimate(dn, make_request(batch_size=16), node, "single")
    double_side = memory.estimate(dn, make_request(batch_size=8, image_size=448), node, "single")
    assert abs(double_batch.activations_gb / small.activations_gb - 2) < 1e-9
    assert abs(double_side.activations_gb / small.activations_gb - 4) < 1e-9


def test_recommend_flags_the_v100_as_not_fitting_for_gpt2_xxl(workloads, seed_nodes):
    from benchmarks.catalogue import all_results

    req = make_request(model="gpt2-xxl", dims=1, image_size=128, batch_size=4)
    ranked = {r.node_type: r for r in recommend(req, workloads, seed_nodes.values(), all_results())}
    assert not ranked["J-V100-32"].fits_memory
    assert ranked["B-A100-80"].fits_memory
    best = min(ranked.values(), key=lambda r: r.rank)
    assert best.fits_memory and best.eligible


def test_a_measured_peak_for_the_same_configuration_overrides_the_estimate():
    from benchmarks.recommender import recommend
    from tests.benchmarks.helpers import make_node, make_result

    node = make_node("a", memory_gb=16)
    req = make_request(batch_size=64)
    estimated = recommend(req, WORKLOADS, [node], [make_result("a", batch_size=64)])[0]
    assert estimated.fits_memory
    heavy = make_result("a", batch_size=64, peak_memory_gb=20.0)
    measured = recommend(req, WORKLOADS, [node], [heavy])[0]
    assert not measured.fits_memory
    assert measured.memory_gb == 20.75
    assert "measured peak" in measured.reasons[0]
    # Another batch size is not the same configuration: the estimate stands.
    other = recommend(make_request(batch_size=32), WORKLOADS, [node], [heavy])[0]
    assert other.fits_memory
