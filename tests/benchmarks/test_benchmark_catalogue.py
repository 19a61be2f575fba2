"""The catalogue is the seed's data, and its derived numbers are reproducible."""

from __future__ import annotations

import pytest
import torch

from benchmarks import catalogue
from benchmarks.harness.networks import GPT, GPT_SIZES, build_cnn

SEED_NODE_TYPES = {
    "J-V100-32",
    "B-A100-40",
    "B-A100-80",
    "S-H100-80",
    "C-MI100-32",
    "C-MI210-64",
    "D-MX1550-128",
}


def test_node_types_carry_the_seed_names_and_peaks():
    specs = {s.name: s for s in catalogue.NODE_TYPES}
    assert SEED_NODE_TYPES <= set(specs)
    assert specs["J-V100-32"].peak_tflops["bf16"] is None  # N/A in the seed
    assert specs["D-MX1550-128"].peak_tflops["bf16"] == 832
    assert specs["S-H100-80"].memory_gb == 80
    facilities = {f["slug"] for f in catalogue.FACILITIES}
    assert all(s.facility in facilities for s in catalogue.NODE_TYPES)


def test_cloud_node_types_have_cited_prices_with_spot_below_on_demand():
    cloud = [s for s in catalogue.NODE_TYPES if s.instance_type]
    assert {s.instance_type for s in cloud} == {
        "g5.xlarge",
        "g5.12xlarge",
        "p4d.24xlarge",
        "p5.48xlarge",
    }
    for s in cloud:
        assert 0 < s.price_spot < s.price_on_demand and "us-east-1" in s.price_source


def test_published_results_cite_their_source_and_name_known_node_types():
    names = {s.name for s in catalogue.NODE_TYPES + catalogue.REFERENCE_NODE_TYPES}
    for r in catalogue.PUBLISHED_RESULTS + catalogue.REFERENCE_RESULTS:
        assert r.source == "published" and r.citation and r.node_type in names
    figures = {r.id: r.throughput for r in catalogue.PUBLISHED_RESULTS}
    assert figures["dle-v100-fp32"] == 367 and figures["lambda-h100-amp"] == 2790


@pytest.mark.parametrize("model, dims", [("resnet18", 2), ("densenet121", 3)])
def test_cnn_parameter_counts_match_monai(model, dims):
    with torch.device("meta"):
        net = build_cnn(model, dims)
    wl = {(w.model, w.dims): w for w in catalogue.WORKLOADS}[(model, dims)]
    assert sum(p.numel() for p in net.parameters()) == wl.parameters


def test_gpt_sizes_reproduce_the_turing_table():
    wl = {w.model: w for w in catalogue.WORKLOADS if w.family == "gpt"}
    assert set(wl) == set(GPT_SIZES) - {"gpt2-tiny"}
    for name, w in wl.items():
        with torch.device("meta"):
            counted = GPT(GPT_SIZES[name]).transformer_parameters()
        assert abs(counted - w.parameters) / w.parameters < 1e-3
        assert w.train_flops_per_sample == 6 * w.parameters * 128


def test_the_harness_and_the_recommender_import_no_django():
    # The harness runs on GPU nodes with only torch and monai; the recommender is pure.
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, benchmarks.harness.__main__, benchmarks.recommender, benchmarks.catalogue;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework',"
        " 'allocations', 'launcher', 'portal')];"
        "assert not bad, bad"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[2],
        check=True,
        timeout=120,
    )
