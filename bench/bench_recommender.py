"""Recommender benchmark (plain script, no Django): latency at scale and leave-one-out accuracy.

    python bench/bench_recommender.py [--repeats 30] [--cases]

(a) latency of one recommendation (validate + rank + serialise) over 50 node types and 2,000
    results generated deterministically, median and p95 over repeats, against a naive baseline
    that re-scans every result for every node type (no index); both must agree exactly.
(b) leave-one-out error per prediction method over the catalogue's published and measured
    results (benchmarks/catalogue.py).
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import catalogue
from benchmarks.recommender import (
    BenchmarkRecord,
    NodeTypeInfo,
    leave_one_out,
    parse_request,
    recommend,
    summarise,
)
from benchmarks.recommender.core import _rank_key, assess
from benchmarks.recommender.predict import ResultIndex

REQUEST = dict(
    model="densenet121",
    dims=2,
    image_size=224,
    dataset_samples=200_000,
    epochs=50,
    precision="bf16",
    gpus=4,
    batch_size=64,
    data_sensitivity="internal",
    needs=["notebooks"],
    budget=5_000,
    deadline_hours=72,
)


def synthetic(n_nodes: int = 50, n_results: int = 2_000, seed: int = 4):
    """Deterministic node types (10 accelerators x 5 variants) and results spread over them."""
    rng = random.Random(seed)
    nodes = []
    for i in range(n_nodes):
        acc = i % 10
        peak = 20.0 * (1.6**acc)
        nodes.append(
            NodeTypeInfo(
                name=f"nt-{i:02d}",
                facility=f"fac-{i % 7}",
                kind=("hpc", "cloud", "local")[i % 3],
                accelerator=f"acc-{acc}",
                memory_gb=(16, 24, 40, 80, 141)[i % 5],
                accelerators_per_node=(1, 4, 8)[i % 3],
                peak_tflops={
                    "fp16": peak,
                    "bf16": peak if acc else None,
                    "fp32": peak / 12,
                    "tf32": peak / 2,
                },
                allowed_sensitivity=("public", "internal", "personal")[: 1 + i % 3],
                notebooks=i % 2 == 0,
                root=i % 3 == 1,
                gpu_hour_rate=0.5 + acc / 4,
                price_on_demand=4.0 + acc,
                price_spot=1.5 + acc / 3,
            )
        )
    models = [(w.model, w.dims, w.reference_size) for w in catalogue.WORKLOADS]
    results = []
    for j in range(n_results):
        node = nodes[rng.randrange(n_nodes)]
        model, dims, size = models[rng.randrange(len(models))]
        gpus = rng.choice((1, 1, 2, 4, 8))
        results.append(
            BenchmarkRecord(
                node_type=node.name,
                model=model,
                dims=dims,
                image_size=size,
                precision=rng.choice(("fp32", "tf32", "fp16", "bf16")),
                strategy="single" if gpus == 1 else rng.choice(("ddp", "fsdp", "deepspeed")),
                gpus=gpus,
                batch_size=rng.choice((8, 16, 32, 64, 128)),
                throughput=rng.uniform(5, 5_000),
                id=f"r{j}",
            )
        )
    return nodes, results


def naive(req, workloads, nodes, results):
    """Baseline: a fresh scan of every result for every node type (no shared index)."""
    workload = {(w.model, w.dims): w for w in workloads}[(req.model, req.dims)]
    recs = [assess(ResultIndex(results, nodes, workloads), workload, req, n) for n in nodes]
    return sorted(recs, key=_rank_key)


def _time(fn, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _p95(xs: list[float]) -> float:
    return sorted(xs)[max(0, round(0.95 * len(xs)) - 1)]


def latency(repeats: int) -> None:
    nodes, results = synthetic()
    wl = catalogue.WORKLOADS

    def ours():
        return [r.as_dict() for r in recommend(parse_request(REQUEST, wl), wl, nodes, results)]

    def baseline():
        return [r.as_dict() for r in naive(parse_request(REQUEST, wl), wl, nodes, results)]

    ranked_ours = [(d["node_type"], d["predicted_hours"]) for d in ours()]
    ranked_naive = [(d["node_type"], d["predicted_hours"]) for d in baseline()]
    assert ranked_ours == ranked_naive, "indexed and naive recommenders disagree"
    t_ours, t_naive = _time(ours, repeats), _time(baseline, max(3, repeats // 5))
    print(
        f"(a) latency, {len(nodes)} node types x {len(results):,} results "
        f"({platform.python_version()}, {os.cpu_count()} CPUs)"
    )
    print(f"    {'':<28}{'median ms':>10}{'p95 ms':>10}{'runs':>6}")
    print(
        f"    {'indexed (recommend)':<28}{statistics.median(t_ours):>10.1f}"
        f"{_p95(t_ours):>10.1f}{len(t_ours):>6}"
    )
    print(
        f"    {'naive (scan per node type)':<28}{statistics.median(t_naive):>10.1f}"
        f"{_p95(t_naive):>10.1f}{len(t_naive):>6}"
    )
    print(f"    speed-up (median): {statistics.median(t_naive) / statistics.median(t_ours):.1f}x")


def accuracy(show_cases: bool) -> None:
    cases = leave_one_out(
        catalogue.all_results(include_reference=True),
        catalogue.node_type_infos(include_reference=True),
        catalogue.WORKLOADS,
    )
    print("(b) leave-one-out median absolute percentage error (APE) per method; n = cases")
    groups = {
        "all": cases,
        "published GPU": [c for c in cases if not c.result_id.startswith("local-")],
        "measured CPU": [c for c in cases if c.result_id.startswith("local-")],
    }
    print(f"    {'method':<14}" + "".join(f"{g:>26}" for g in groups))
    rows = {g: {r.method: r for r in summarise(cs)} for g, cs in groups.items()}
    for method in ("measured", "flops_scaled", "roofline"):
        cells = []
        for g in groups:
            row = rows[g][method]
            cells.append(
                "-" if row.n == 0 else f"{row.median_ape:.1f}% (p90 {row.p90_ape:.0f}%, n={row.n})"
            )
        print(f"    {method:<14}" + "".join(f"{c:>26}" for c in cells))
    if show_cases:
        for c in cases:
            print(
                f"    {c.method:<14}{c.result_id:<44}{c.actual:>10.1f}{c.predicted:>10.1f}"
                f"{c.ape:>8.1f}%"
            )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=30)
    p.add_argument("--cases", action="store_true", help="print every leave-one-out case")
    args = p.parse_args()
    latency(args.repeats)
    accuracy(args.cases)


if __name__ == "__main__":
    main()
