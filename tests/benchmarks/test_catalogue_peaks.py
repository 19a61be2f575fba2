"""Peak figures are dense: none is a with-sparsity figure, none exceeds the chip's documented
dense peak, and every GPU node type in the catalogue names where its figures come from."""

from __future__ import annotations

import pytest

from allocations import demo as allocations_demo
from benchmarks import catalogue


@pytest.mark.parametrize(
    "spec", catalogue.NODE_TYPES + catalogue.REFERENCE_NODE_TYPES, ids=lambda s: s.name
)
def test_no_peak_exceeds_the_documented_dense_peak(spec):
    if spec.device == "cpu":
        return
    dense = catalogue.DENSE_PEAKS[spec.accelerator]
    for precision, value in spec.peak_tflops.items():
        if value is not None:
            assert value <= dense[precision], (spec.name, precision, value)
    assert any(word in spec.peak_source for word in ("datasheet", "ark.intel.com")), spec.name


def test_the_h100_pcie_peak_is_756_not_the_sparsity_figure():
    h100 = next(s for s in catalogue.NODE_TYPES if s.name == "S-H100-80")
    assert h100.peak_tflops["bf16"] == 756 and h100.peak_tflops["tf32"] == 378
    assert catalogue.DENSE_PEAKS["NVIDIA V100 SXM2"]["fp16"] == 125


def test_the_allocations_seed_agrees_with_the_dense_peaks():
    for nodes in allocations_demo.NODE_TYPES.values():
        for node in nodes:
            dense = catalogue.DENSE_PEAKS.get(node["accelerator"])
            if dense is None:
                continue
            for precision, value in zip(("fp16", "bf16", "fp32", "fp64"), node["peak"]):
                if value is not None:
                    assert value <= dense[precision], (node["name"], precision, value)
