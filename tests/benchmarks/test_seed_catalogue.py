"""seed(): the database holds the catalogue's workloads and results, node types agree with it."""

from __future__ import annotations

import pytest

from allocations.demo import seed_catalogue
from allocations.models import Facility, NodeType
from benchmarks import catalogue
from benchmarks.demo import seed
from benchmarks.models import BenchmarkResult, Workload

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded():
    seed_catalogue()
    return seed()


def test_seeded_node_types_agree_with_the_catalogue_on_memory_and_peaks(seeded):
    rows = {(n.facility.slug, n.name): n for n in NodeType.objects.select_related("facility")}
    for spec in catalogue.NODE_TYPES + catalogue.REFERENCE_NODE_TYPES:
        row = rows[(spec.facility, spec.name)]
        assert float(row.accelerator_memory_gb) == spec.memory_gb, spec.name
        for precision, peak in spec.peak_tflops.items():
            assert getattr(row, f"peak_tflops_{precision}") == peak, (spec.name, precision)
        assert row.device == spec.device, spec.name


def test_seed_fills_what_allocations_lacks_and_refines_chip_names(seeded):
    a100 = NodeType.objects.get(facility__slug="baskerville", name="B-A100-40")
    assert a100.peak_tflops_tf32 == 156
    cpu = NodeType.objects.get(facility__slug="local", name="local-cpu")
    assert float(cpu.accelerator_memory_gb) == 24 and cpu.peak_tflops_fp32 == 0.19
    # Different chips must not share results: the PCIe and SXM H100s are told apart.
    assert NodeType.objects.get(name="S-H100-80").accelerator == "NVIDIA H100 PCIe"
    assert (
        NodeType.objects.get(name="p5.48xlarge", facility__slug="aws-spot").accelerator
        == "NVIDIA H100 SXM5"
    )


def test_seed_never_overwrites_what_the_database_already_says(seeded):
    NodeType.objects.filter(name="B-A100-40").update(price_spot=7, accelerator="Custom A100")
    seed()
    row = NodeType.objects.get(name="B-A100-40")
    assert row.price_spot == 7 and row.accelerator == "Custom A100"


def test_results_carry_their_citations_and_provenance(seeded):
    published = BenchmarkResult.objects.filter(source="published")
    assert published.count() == len(catalogue.PUBLISHED_RESULTS + catalogue.REFERENCE_RESULTS)
    assert all("DeepLearningExamples" in r.citation or "Lambda" in r.citation for r in published)
    v100 = published.get(node_type__name="J-V100-32", precision="fp32")
    assert (v100.throughput, v100.workload.key, v100.batch_size) == (367, "resnet50-2d", 112)
    measured = BenchmarkResult.objects.filter(source="measured")
    assert measured.count() == len(catalogue.MEASURED_RESULTS)
    assert all(
        r.node_type.name == "local-cpu"
        and r.software["torch"]
        and r.repeats == 5
        and r.throughput_min <= r.throughput <= r.throughput_max
        for r in measured
    )


def test_reference_hardware_is_stored_but_not_offered(seeded):
    assert not Facility.objects.get(slug="published-reference").is_active
    assert BenchmarkResult.objects.filter(node_type__name="ref-H200-141").count() == 2


def test_seeding_twice_changes_nothing(seeded):
    before = (
        Workload.objects.count(),
        BenchmarkResult.objects.count(),
        NodeType.objects.count(),
        list(NodeType.objects.order_by("pk").values()),
    )
    assert seed() == seeded
    after = (
        Workload.objects.count(),
        BenchmarkResult.objects.count(),
        NodeType.objects.count(),
        list(NodeType.objects.order_by("pk").values()),
    )
    assert before == after
    assert Workload.objects.count() == len(catalogue.WORKLOADS)
