"""Each prediction method, chosen in order, with the numbers it must produce."""

from __future__ import annotations

import math

import pytest

from benchmarks.catalogue import WORKLOADS
from benchmarks.recommender import predict as P
from tests.benchmarks.helpers import make_node, make_request, make_result

WL = {(w.model, w.dims): w for w in WORKLOADS}
DN = WL[("densenet121", 2)]


def _predict(results, node, req, nodes=None, strategy="single"):
    index = P.ResultIndex(results, nodes or [node], WORKLOADS)
    return P.predict(index, WL[(req.model, req.dims)], req, node, strategy)


def test_measured_neighbour_scales_image_size_by_pixels():
    node = make_node("a")
    same = _predict([make_result("a")], node, make_request())
    assert same.method == "measured" and same.confidence == "high"
    assert same.throughput == pytest.approx(1000.0)
    bigger = _predict([make_result("a")], node, make_request(image_size=448))
    assert bigger.throughput == pytest.approx(250.0)  # 4x the pixels, 4x the FLOPs


def test_measured_neighbour_prefers_the_closest_configuration():
    node = make_node("a")
    results = [
        make_result("a", batch_size=8, throughput=500.0),
        make_result("a", batch_size=64, throughput=1200.0),
    ]
    found = _predict(results, node, make_request(batch_size=64))
    assert found.throughput == pytest.approx(1200.0)
    assert found.basis.batch_size == 64


def test_bf16_uses_an_fp16_measurement_where_the_hardware_runs_both_at_one_rate():
    node = make_node("a")
    found = _predict([make_result("a", precision="fp16")], node, make_request(precision="bf16"))
    assert found.method == "measured"
    # ...but not on hardware whose bf16 peak differs (MI100: 184.6 fp16, 92.3 bf16).
    mi100 = make_node("m", peak_tflops={"fp16": 184.6, "bf16": 92.3, "fp32": 23.1})
    other = _predict([make_result("m", precision="fp16")], mi100, make_request(precision="bf16"))
    assert other.method != "measured"


def test_on_a_gpu_another_model_is_carried_over_by_activation_bytes_not_flops():
    node = make_node("a")
    rn50 = WL[("resnet50", 2)]
    result = make_result("a", model="resnet50", throughput=2470.0)
    found = _predict([result], node, make_request(model="densenet121"))
    assert found.method == "flops_scaled" and found.confidence == "medium"
    expected = 2470.0 * rn50.activation_bytes_per_sample / DN.activation_bytes_per_sample
    assert found.throughput == pytest.approx(expected)
    # DenseNet-121 does fewer FLOPs than ResNet-50 but moves more bytes: slower, not faster.
    assert found.throughput < 2470.0 < 2470.0 * rn50.flops(224) / DN.flops(224)
    assert "memory traffic" in found.notes[0]


def test_on_a_cpu_another_model_is_carried_over_by_flops():
    node = make_node("c", device="cpu", peak_tflops={"fp32": 0.19, "bf16": 0.38})
    rn50 = WL[("resnet50", 2)]
    result = make_result("c", model="resnet50", precision="fp32", throughput=10.0)
    found = _predict([result], node, make_request(model="resnet18", precision="fp32"))
    assert found.method == "flops_scaled"
    expected = 10.0 * rn50.flops(224) / WL[("resnet18", 2)].flops(224)
    assert found.throughput == pytest.approx(expected)


def test_roofline_fits_achieved_against_peak_on_measured_hardware():
    # Two measured accelerators where achieved TFLOP/s = 2 x sqrt(peak): the fit must find it.
    a = make_node("a", peak_tflops={"fp16": 100.0})
    b = make_node("b", peak_tflops={"fp16": 400.0})
    target = make_node("t", peak_tflops={"fp16": 900.0})
    flops = DN.flops(224)
    results = [
        make_result("a", throughput=2 * 10 * 1e12 / flops),
        make_result("b", throughput=2 * 20 * 1e12 / flops),
    ]
    found = _predict(results, target, make_request(), nodes=[a, b, target])
    assert found.method == "roofline" and found.confidence == "low"
    assert found.throughput == pytest.approx(2 * 30 * 1e12 / flops)
    assert "peak^0.50" in found.notes[0]


def test_roofline_with_nothing_measured_uses_the_stated_default_utilisation():
    node = make_node("t", peak_tflops={"fp16": 100.0})
    found = _predict([], node, make_request())
    expected = P.DEFAULT_UTILISATION["16bit"] * 100e12 / DN.flops(224)
    assert found.throughput == pytest.approx(expected)
    assert "default" in found.notes[0]


def test_no_peak_and_no_result_means_no_prediction():
    node = make_node("t", peak_tflops={"fp32": 10.0, "bf16": None})
    assert _predict([], node, make_request(precision="bf16")) is None


def test_gpu_scaling_uses_the_measured_efficiency_of_that_hardware():
    node = make_node("a")
    # 4 GPUs keep 81% of linear: 0.9 per doubling.
    results = [
        make_result("a"),
        make_result("a", gpus=4, strategy="ddp", throughput=1000.0 * 4 * 0.81),
    ]
    index = P.ResultIndex(results, [node], WORKLOADS)
    eff, measured = index.doubling_efficiency("acc-a")
    assert measured and eff == pytest.approx(0.9)
    found = P.predict(index, DN, make_request(gpus=16), node, "ddp")
    assert found.throughput == pytest.approx(1000.0 * 4 * 0.81 * 4 * 0.81)


def test_gpu_scaling_falls_back_to_the_stated_default():
    node = make_node("a")
    found = _predict([make_result("a")], node, make_request(gpus=8), strategy="ddp")
    expected = 1000.0 * 8 * P.DEFAULT_DOUBLING_EFFICIENCY**3
    assert found.throughput == pytest.approx(expected)
    assert any("stated default" in n for n in found.notes)


def test_sharded_strategies_are_predicted_slower_than_ddp():
    node = make_node("a")
    ddp = _predict([make_result("a")], node, make_request(gpus=2), strategy="ddp")
    fsdp = _predict([make_result("a")], node, make_request(gpus=2), strategy="fsdp")
    ds = _predict([make_result("a")], node, make_request(gpus=2), strategy="deepspeed")
    assert ds.throughput < fsdp.throughput < ddp.throughput
    assert math.isclose(fsdp.throughput / ddp.throughput, P.STRATEGY_SPEED["fsdp"])


def test_results_for_unknown_node_types_or_models_are_ignored():
    node = make_node("a")
    results = [make_result("elsewhere"), make_result("a", model="no-such-model")]
    index = P.ResultIndex(results, [node], WORKLOADS)
    assert index.all == []


def test_measured_results_at_several_sizes_fit_a_per_step_overhead():
    # Time per sample = 1 s / batch + 1e-11 s per FLOP: far from FLOP-bound at small sizes.
    def thr(size, batch):
        return 1.0 / (1.0 / batch + 1e-11 * DN.flops(size))

    node = make_node("a")
    results = [
        make_result("a", image_size=s, batch_size=b, throughput=thr(s, b))
        for s, b in ((64, 8), (128, 8), (96, 16))
    ]
    found = _predict(results, node, make_request(image_size=160, batch_size=8))
    assert found.method == "measured"
    assert found.throughput == pytest.approx(thr(160, 8), rel=1e-6)
    assert "time model" in found.notes[0]
    # Pure FLOPs scaling from the nearest result (128) would have said much less.
    assert found.throughput > 1.25 * thr(128, 8) * DN.flops(128) / DN.flops(160)


def test_roofline_never_calibrates_a_gpu_on_cpu_results():
    cpu = make_node("cpu", peak_tflops={"fp16": 0.4}, device="cpu")
    gpu = make_node("gpu", peak_tflops={"fp16": 300.0})
    found = _predict([make_result("cpu", throughput=1.0)], gpu, make_request(), nodes=[cpu, gpu])
    assert "default" in found.notes[0]
