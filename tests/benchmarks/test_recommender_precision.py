"""Precision per row: `auto` is mixed precision where the chip has it, and a bf16 request on a
chip without bf16 units (the V100) is predicted with fp16 mixed precision, not refused."""

from __future__ import annotations

from benchmarks import catalogue
from benchmarks.recommender import parse_request, recommend
from benchmarks.recommender.predict import resolve_precision
from tests.benchmarks.helpers import make_node

V100 = make_node(
    "v",
    accelerator="NVIDIA V100 SXM2",
    peak_tflops={"fp16": 125, "bf16": None, "fp32": 15.7, "fp64": 7.8},
)
CPU = make_node("c", device="cpu", peak_tflops={"fp16": None, "bf16": 0.38, "fp32": 0.19})


def _rows(precision: str) -> dict:
    req = parse_request(
        {
            "model": "densenet121",
            "dims": 2,
            "image_size": 224,
            "dataset_samples": 100_000,
            "epochs": 10,
            "precision": precision,
            "gpus": 1,
            "batch_size": 64,
            "data_sensitivity": "public",
        },
        catalogue.WORKLOADS,
    )
    ranked = recommend(
        req, catalogue.WORKLOADS, catalogue.node_type_infos(), catalogue.all_results()
    )
    return {r.node_type: r for r in ranked}


def test_auto_is_bf16_where_the_chip_has_it_fp16_where_it_does_not_and_fp32_on_a_cpu():
    assert resolve_precision(make_node("a"), "auto")[0] == "bf16"
    precision, why = resolve_precision(V100, "auto")
    assert precision == "fp16" and "no bf16" in why
    assert resolve_precision(CPU, "auto")[0] == "fp32"


def test_a_bf16_request_on_a_v100_is_predicted_with_fp16_and_says_so():
    for asked in ("bf16", "auto"):
        v100 = _rows(asked)["J-V100-32"]
        assert v100.precision == "fp16"
        assert v100.eligible and v100.throughput is not None and v100.predicted_hours > 0
        assert any("fp16 mixed precision" in reason for reason in v100.reasons)
        assert not any("no bf16 support" in reason for reason in v100.reasons)


def test_an_explicit_precision_the_chip_has_is_kept():
    rows = _rows("bf16")
    assert rows["B-A100-80"].precision == "bf16"
    assert rows["J-V100-32"].as_dict()["precision"] == "fp16"


def test_densenet121_bf16_on_an_h100_pcie_is_well_below_resnet50_there():
    h100 = _rows("bf16")["S-H100-80"]
    resnet50_amp = next(
        r.throughput for r in catalogue.all_results() if r.id == "lambda-h100pcie-amp"
    )
    assert h100.throughput < 0.8 * resnet50_amp
    assert "lambda-h100pcie-amp" == h100.basis and "S-H100-80" in h100.neighbour


def test_every_predicted_row_names_its_nearest_measured_neighbour():
    for row in _rows("auto").values():
        if row.throughput is not None:
            assert row.neighbour, row.node_type


def test_the_nearest_result_names_cpus_on_a_cpu_node_type_and_gpus_elsewhere():
    """Issue 39: on the CPU-only `local` facility the job page said "1 GPU, batch 8"."""
    from benchmarks.recommender.core import describe
    from benchmarks.recommender.types import BenchmarkRecord

    def record(gpus: int) -> BenchmarkRecord:
        return BenchmarkRecord(
            node_type="c", model="densenet121", dims=2, image_size=64, precision="fp32",
            strategy="single", gpus=gpus, batch_size=8, throughput=22.6,
        )  # fmt: skip

    assert ", fp32, 1 CPU, batch 8: 22.6 samples/s" in describe(record(1), CPU)
    assert ", fp32, 2 CPUs, batch 8:" in describe(record(2), CPU)
    assert ", fp32, 1 GPU, batch 8:" in describe(record(1), V100)
    assert ", fp32, 4 GPUs, batch 8:" in describe(record(4))
