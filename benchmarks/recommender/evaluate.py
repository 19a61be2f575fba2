"""Leave-one-out accuracy: hide each result, predict it from the rest, per prediction method."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from benchmarks.recommender.predict import METHODS, PREDICTORS, ResultIndex, harness_of
from benchmarks.recommender.types import BenchmarkRecord, NodeTypeInfo, Workload, WorkloadRequest


@dataclass(frozen=True)
class LooCase:
    """One hidden result and what a method predicted for it."""

    result_id: str
    method: str
    actual: float
    predicted: float

    @property
    def ape(self) -> float:
        """Absolute percentage error."""
        return abs(self.predicted - self.actual) / self.actual * 100


@dataclass(frozen=True)
class LooRow:
    """Median absolute percentage error of one method over the results it could predict."""

    method: str
    n: int
    median_ape: float | None
    p90_ape: float | None


def _request_for(r: BenchmarkRecord) -> WorkloadRequest:
    return WorkloadRequest(
        model=r.model,
        dims=r.dims,
        image_size=r.image_size,
        dataset_samples=1,
        epochs=1,
        precision=r.precision,
        gpus=r.gpus,
        batch_size=r.batch_size,
        data_sensitivity="public",
        strategy=r.strategy,
        harness=harness_of(r),
    )


def _label(r: BenchmarkRecord, i: int) -> str:
    return r.id or (
        f"{r.node_type}/{r.model}{r.dims}d/{r.image_size}/{r.precision}/b{r.batch_size}#{i}"
    )


def leave_one_out(
    results: Iterable[BenchmarkRecord], nodes: Iterable[NodeTypeInfo], workloads: Iterable[Workload]
) -> list[LooCase]:
    """For every result and every method that can predict it without it, one case.

    Each method is forced (no fallback), so "measured" is scored only where another result of
    the same model exists on that accelerator, and so on.
    """
    results, nodes, workloads = list(results), list(nodes), list(workloads)
    by_name = {n.name: n for n in nodes}
    wl = {(w.model, w.dims): w for w in workloads}
    cases = []
    for i, hidden in enumerate(results):
        if hidden.node_type not in by_name or (hidden.model, hidden.dims) not in wl:
            continue
        index = ResultIndex(results[:i] + results[i + 1 :], nodes, workloads)
        req, node = _request_for(hidden), by_name[hidden.node_type]
        for method in METHODS:
            found = PREDICTORS[method](
                index, wl[(hidden.model, hidden.dims)], req, node, hidden.strategy
            )
            if found is not None:
                cases.append(
                    LooCase(_label(hidden, i), method, hidden.throughput, found.throughput)
                )
    return cases


def summarise(cases: Iterable[LooCase]) -> list[LooRow]:
    """One row per method: count, median and 90th-percentile absolute percentage error."""
    cases = list(cases)
    rows = []
    for method in METHODS:
        errs = sorted(c.ape for c in cases if c.method == method)
        if not errs:
            rows.append(LooRow(method, 0, None, None))
            continue
        p90 = errs[min(len(errs) - 1, round(0.9 * (len(errs) - 1)))]
        rows.append(LooRow(method, len(errs), statistics.median(errs), p90))
    return rows
