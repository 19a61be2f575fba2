"""Predict training throughput on a node type from benchmark results.

Methods, tried in order (the first that has data wins):
  measured      a result for the same model and dims on the same accelerator at a compatible
                precision; scaled for image size by FLOPs, for GPU count by scaling efficiency.
  flops_scaled  a result for another model on the same accelerator and precision, carried over
                by the work per sample: FLOPs on a CPU (compute-bound), activation bytes on a
                GPU (memory-bound under mixed precision: see `work_per_sample`).
  roofline      no result on this accelerator: achieved work rate predicted from its peak at
                the precision, by a fit of achieved against peak over the hardware that has
                results (same workload if possible). Least trustworthy: marked low confidence.
                Its neighbour is the calibration result on the chip with the nearest peak.

Precision: a request's precision is first resolved per node type (`resolve_precision`): `auto`
is bf16 where the accelerator has bf16 units, else fp16, and fp32 on a CPU (the trainer does not
autocast there); bf16 asked of an fp16-only chip (V100, MI100 is bf16-capable) is predicted as
fp16 mixed precision, which is what one runs there, and the row says so.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from benchmarks.recommender.hardware import (  # noqa: F401 - re-exported for callers
    effective_peak,
    harness_of,
    precision_class,
    precision_compatible,
    resolve_precision,
    work_per_sample,
)
from benchmarks.recommender.robust import faster_half_median
from benchmarks.recommender.types import (
    BenchmarkRecord,
    NodeTypeInfo,
    Workload,
    WorkloadRequest,
    fmt_number,
)

METHODS = ("measured", "flops_scaled", "roofline")
# Stated defaults, used only where nothing is measured:
# the seed saw 1->16 GPU DDP scaling "marginally sub-linear"; 0.95 per doubling = 81% at 16.
DEFAULT_DOUBLING_EFFICIENCY = 0.95
# Relative speed of the strategies at equal GPU count (the seed: FSDP faster than DeepSpeed).
STRATEGY_SPEED = {"single": 1.0, "ddp": 1.0, "fsdp": 0.85, "deepspeed": 0.75}
# Utilisation of peak when nothing at all was measured at a precision class (REFERENCE.md:
# plain PyTorch AMP reaches ~7% of H100 bf16 peak; fp32 CUDA cores are far easier to keep busy).
DEFAULT_UTILISATION = {"16bit": 0.07, "tf32": 0.15, "fp32": 0.35}


@dataclass
class Prediction:
    """A throughput (samples/s over all GPUs) and how it was obtained."""

    throughput: float
    method: str
    confidence: str
    basis: BenchmarkRecord | None = None
    notes: list[str] = field(default_factory=list)
    # The portal's own runs of this shape the figure is the faster-half median of (0: none).
    alike: int = 0


def _log2_ratio(a: float, b: float) -> float:
    return abs(math.log2(a / b))


class ResultIndex:
    """Benchmark results indexed by accelerator and model, built once per request (O(results)).

    Results whose node type or workload is unknown are ignored.
    """

    def __init__(
        self,
        results: Iterable[BenchmarkRecord],
        nodes: Iterable[NodeTypeInfo],
        workloads: Iterable[Workload],
    ) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.workloads = {(w.model, w.dims): w for w in workloads}
        self.by_hw: dict[str, list[BenchmarkRecord]] = defaultdict(list)
        self.by_hw_model: dict[tuple[str, str, int], list[BenchmarkRecord]] = defaultdict(list)
        self.all: list[BenchmarkRecord] = []
        for r in results:
            node = self.nodes.get(r.node_type)
            if node is None or (r.model, r.dims) not in self.workloads or r.throughput <= 0:
                continue
            self.all.append(r)
            self.by_hw[node.accelerator].append(r)
            self.by_hw_model[(node.accelerator, r.model, r.dims)].append(r)
        self._efficiency: dict[str, float] = {}
        self._calibration: dict[
            tuple[str, str, str], tuple[float, float, int, list[BenchmarkRecord]]
        ] = {}

    def measured_peak_gb(
        self, node: NodeTypeInfo, workload: Workload, req: WorkloadRequest, strategy: str
    ) -> float | None:
        """Peak GPU memory measured for exactly this configuration on this chip, if any.

        Only GPU results count: on CPUs the harness records the process's RSS, not tensors.
        """
        if node.device != "gpu":
            return None
        peaks = [
            r.peak_memory_gb
            for r in self.by_hw_model.get((node.accelerator, workload.model, workload.dims), [])
            if r.peak_memory_gb
            and r.source == "measured"
            and (r.precision, r.image_size, r.batch_size, r.strategy, r.gpus)
            == (req.precision, req.image_size, req.batch_size, strategy, req.gpus)
        ]
        return max(peaks) if peaks else None

    def harness_ratio(
        self, want: str, have: str, like: BenchmarkRecord, exclude: str
    ) -> tuple[float, int] | None:
        """Median of throughput(want) / throughput(have) over other accelerators where both
        harnesses measured `like`'s model, dims, size, GPU count and precision class; with the
        number of accelerators. None where no other chip has both."""
        key = (like.model, like.dims, like.image_size, like.gpus, precision_class(like.precision))
        by_chip: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in self.all:
            chip = self.nodes[r.node_type].accelerator
            if (
                chip != exclude
                and (r.model, r.dims, r.image_size, r.gpus, precision_class(r.precision)) == key
            ):
                by_chip[chip][harness_of(r)].append(r.throughput)
        ratios = [
            statistics.median(h[want]) / statistics.median(h[have])
            for h in by_chip.values()
            if h.get(want) and h.get(have)
        ]
        return (statistics.median(ratios), len(ratios)) if ratios else None

    # -- scaling across GPU counts -------------------------------------------------------
    def doubling_efficiency(self, accelerator: str) -> tuple[float, bool]:
        """Throughput kept per doubling of GPUs, measured on this accelerator if possible.

        Returns (efficiency, measured?). Pairs are results differing only in GPU count.
        """
        if accelerator not in self._efficiency:
            pool = self.by_hw.get(accelerator, [])
            self._efficiency[accelerator] = self._measure_efficiency(pool)
        eff = self._efficiency[accelerator]
        return (eff, True) if eff > 0 else (DEFAULT_DOUBLING_EFFICIENCY, False)

    @staticmethod
    def _measure_efficiency(results: list[BenchmarkRecord]) -> float:
        groups: dict[tuple, list[BenchmarkRecord]] = defaultdict(list)
        for r in results:
            groups[(r.model, r.dims, r.image_size, r.precision, r.batch_size)].append(r)
        values = []
        for rs in groups.values():
            base = min(rs, key=lambda r: r.gpus)
            for r in rs:
                if r.gpus > base.gpus:
                    kept = (r.throughput / r.gpus) / (base.throughput / base.gpus)
                    values.append(kept ** (1 / math.log2(r.gpus / base.gpus)))
        return min(1.0, statistics.median(values)) if values else 0.0

    def scale_gpus(
        self, throughput: float, from_gpus: int, to_gpus: int, accelerator: str
    ) -> float:
        """Move a throughput from one GPU count to another with the scaling efficiency."""
        if from_gpus == to_gpus:
            return throughput
        eff, _ = self.doubling_efficiency(accelerator)
        ratio = to_gpus / from_gpus
        return throughput * ratio * eff ** math.log2(ratio)

    # -- achieved FLOP/s against peak, for the roofline ----------------------------------------
    def achieved(self, r: BenchmarkRecord) -> tuple[float, float] | None:
        """(peak TFLOP/s, achieved work rate per GPU) of one result; None without a peak.

        The work unit is `work_per_sample` on the result's device (x 1e-12 to keep numbers
        near 1): within one model it cancels out, across models it carries the right cost.
        """
        node = self.nodes[r.node_type]
        peak = effective_peak(node, r.precision)
        if not peak:
            return None
        work = work_per_sample(self.workloads[(r.model, r.dims)], r.image_size, node.device)
        return peak, r.throughput * work / r.gpus / 1e12

    def calibration(
        self, workload: Workload, precision: str, target: NodeTypeInfo
    ) -> tuple[float, float, int, list[BenchmarkRecord]]:
        """Fit achieved = c x peak^b (log-space least squares) on the most similar results.

        Tiers: same model and dims, then same family, then anything, always at the same
        precision class, on other hardware of the target's device kind (CPU or GPU). With one
        distinct peak b is 1 (a constant utilisation c); with none, c is a stated default.
        Returns (c, b, number of results used, those results).
        Peak ratios overstate real speed-ups (REFERENCE.md: H100/V100 7.9x on paper, 2.3-3.4x
        measured), which is why b is fitted rather than assumed to be 1.
        """
        key = (workload.key, precision_class(precision), target.accelerator)
        if key not in self._calibration:
            self._calibration[key] = self._fit(workload, precision, target)
        return self._calibration[key]

    def _fit(
        self, workload: Workload, precision: str, target: NodeTypeInfo
    ) -> tuple[float, float, int, list[BenchmarkRecord]]:
        pclass = precision_class(precision)
        pool = [
            r
            for r in self.all
            if precision_class(r.precision) == pclass
            and self.nodes[r.node_type].accelerator != target.accelerator
            and self.nodes[r.node_type].device == target.device
        ]
        tiers = (
            [r for r in pool if (r.model, r.dims) == (workload.model, workload.dims)],
            [r for r in pool if self.workloads[(r.model, r.dims)].family == workload.family],
            pool,
        )
        for tier in tiers:
            used = [r for r in tier if (p := self.achieved(r)) is not None and p[1] > 0]
            if used:
                points = [self.achieved(r) for r in used]
                return _power_fit(points) + (len(points), used)  # type: ignore[arg-type]
        return DEFAULT_UTILISATION[pclass], 1.0, 0, []


def _power_fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares fit of log(achieved) = log(c) + b log(peak), b clamped to [0, 1]."""
    xs = [math.log(p) for p, _ in points]
    ys = [math.log(a) for _, a in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = 1.0 if sxx < 1e-9 else sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    b = min(1.0, max(0.0, b))
    return math.exp(my - b * mx), b


def _transfer(
    index: ResultIndex,
    r: BenchmarkRecord,
    per_sample_ratio: float,
    req: WorkloadRequest,
    node: NodeTypeInfo,
    strategy: str,
) -> float:
    """Carry result r over to the request: work per sample, GPU count, strategy."""
    thr = r.throughput * per_sample_ratio
    thr = index.scale_gpus(thr, r.gpus, req.gpus, node.accelerator)
    return thr * STRATEGY_SPEED[strategy] / STRATEGY_SPEED.get(r.strategy, 1.0)


def _same_hw(
    index: ResultIndex, node: NodeTypeInfo, req: WorkloadRequest, pool: list[BenchmarkRecord]
) -> list[BenchmarkRecord]:
    return [r for r in pool if precision_compatible(node, req.precision, r.precision)]


def _alike(q: BenchmarkRecord, r: BenchmarkRecord) -> bool:
    """The same run shape on the same node type: only the machine's load differs."""
    return harness_of(q) == harness_of(r) and (
        q.node_type,
        q.model,
        q.dims,
        q.precision,
        q.gpus,
        q.strategy,
        q.batch_size,
        q.image_size,
    ) == (r.node_type, r.model, r.dims, r.precision, r.gpus, r.strategy, r.batch_size, r.image_size)


def predict_measured(
    index: ResultIndex, workload: Workload, req: WorkloadRequest, node: NodeTypeInfo, strategy: str
) -> Prediction | None:
    """Nearest result of the same model and dims on the same accelerator, or None."""
    pool = _same_hw(
        index,
        node,
        req,
        index.by_hw_model.get((node.accelerator, workload.model, workload.dims), []),
    )
    if not pool:
        return None

    def distance(r: BenchmarkRecord) -> float:
        return (
            (r.node_type != node.name) * 0.5
            + (r.precision != req.precision) * 0.5
            + _log2_ratio(r.gpus, req.gpus)
            + 0.5 * _log2_ratio(r.batch_size, req.batch_size)
            + _log2_ratio(r.image_size, req.image_size)
            + (bool(req.harness) and harness_of(r) != req.harness) * 0.25
        )

    r = min(pool, key=distance)
    alike = [q for q in pool if harness_of(r) == "job" and _alike(q, r)]
    if len(alike) >= 2:
        r = faster_half_median(alike, key=lambda q: q.throughput)
    siblings = [
        q
        for q in pool
        if (q.gpus, q.strategy) == (r.gpus, r.strategy) and harness_of(q) == harness_of(r)
    ]
    fit = _fit_step_time(workload, siblings)
    if fit is None:
        ratio = workload.flops(r.image_size) / workload.flops(req.image_size)
        how = "scaled by FLOPs per sample"
    else:
        alpha, beta = fit
        ratio = (alpha / r.batch_size + beta * workload.flops(r.image_size)) / (
            alpha / req.batch_size + beta * workload.flops(req.image_size)
        )
        how = "scaled by a per-sample time model fitted on its results here"
    thr = _transfer(index, r, ratio, req, node, strategy)
    far = distance(r) >= 1.0
    notes = [
        f"from a {r.source} result for {r.model} on {r.node_type} ({r.precision}, "
        f"{r.gpus} GPU, batch {r.batch_size}, size {r.image_size}: "
        f"{fmt_number(r.throughput)} samples/s)" + (f", {how}" if ratio != 1.0 else "")
    ]
    if len(alike) >= 2:
        notes.append(
            f"the median of the faster half of {len(alike)} runs of this shape here (a slower "
            "run is taken as a loaded machine, not a slower model)"
        )
    if req.harness and harness_of(r) != req.harness:
        found = index.harness_ratio(req.harness, harness_of(r), r, exclude=node.accelerator)
        if found is not None:
            factor, pairs = found
            thr *= factor
            notes.append(
                f"x {factor:.2f}, what {req.harness} measures against "
                f"{harness_of(r)} on {pairs} other chip{'s' if pairs != 1 else ''}"
            )
    return Prediction(
        thr, "measured", "medium" if far else "high", r, notes, len(alike) if len(alike) >= 2 else 0
    )


def _fit_step_time(
    workload: Workload, results: list[BenchmarkRecord]
) -> tuple[float, float] | None:
    """Fit time per sample = alpha / batch + beta x FLOPs per sample over same-model results.

    alpha is a fixed cost per step (launches, optimizer, Python) shared by the batch; beta the
    time per FLOP. Small inputs are far from FLOP-bound (on our CPU, 4x the pixels cost 2x the
    time), which pure FLOPs scaling gets badly wrong. Needs two distinct configurations and
    non-negative coefficients; None otherwise (then the caller scales by FLOPs).
    """
    rows = {(r.batch_size, workload.flops(r.image_size)): r.gpus / r.throughput for r in results}
    if len(rows) < 2:
        return None
    xs = [(1.0 / b, f) for b, f in rows]
    ts = list(rows.values())
    s11 = sum(x1 * x1 for x1, _ in xs)
    s12 = sum(x1 * x2 for x1, x2 in xs)
    s22 = sum(x2 * x2 for _, x2 in xs)
    t1 = sum(x1 * t for (x1, _), t in zip(xs, ts))
    t2 = sum(x2 * t for (_, x2), t in zip(xs, ts))
    det = s11 * s22 - s12 * s12
    if det <= 1e-12 * s11 * s22:
        return None
    alpha, beta = (t1 * s22 - t2 * s12) / det, (t2 * s11 - t1 * s12) / det
    return (alpha, beta) if alpha >= 0 and beta >= 0 else None


def predict_flops_scaled(
    index: ResultIndex, workload: Workload, req: WorkloadRequest, node: NodeTypeInfo, strategy: str
) -> Prediction | None:
    """Nearest result of another model on the same accelerator, scaled by FLOPs per sample."""
    pool = [
        r
        for r in _same_hw(index, node, req, index.by_hw.get(node.accelerator, []))
        if (r.model, r.dims) != (workload.model, workload.dims)
    ]
    if not pool:
        return None
    target = workload.flops(req.image_size)

    def flops_of(r: BenchmarkRecord) -> float:
        return index.workloads[(r.model, r.dims)].flops(r.image_size)

    def distance(r: BenchmarkRecord) -> float:
        other = index.workloads[(r.model, r.dims)]
        return (
            2.0 * (other.family != workload.family)
            + (r.dims != workload.dims)
            + _log2_ratio(flops_of(r), target)
            + _log2_ratio(r.gpus, req.gpus)
            + 0.5 * _log2_ratio(r.batch_size, req.batch_size)
        )

    r = min(pool, key=distance)
    other = index.workloads[(r.model, r.dims)]
    ratio = work_per_sample(other, r.image_size, node.device) / work_per_sample(
        workload, req.image_size, node.device
    )
    thr = _transfer(index, r, ratio, req, node, strategy)
    if node.device == "cpu":
        how = (
            f"by FLOPs per sample ({flops_of(r) / 1e9:,.1f} GFLOP there, "
            f"{target / 1e9:,.1f} here: a CPU is compute-bound)"
        )
    else:
        how = (
            f"by activation bytes per sample ({other.activation_bytes_per_sample * other.scale(r.image_size) / 2**20:,.0f} MiB there, "
            f"{workload.activation_bytes_per_sample * workload.scale(req.image_size) / 2**20:,.0f} MiB here: mixed-precision "
            "training on a GPU is bound by memory traffic, not FLOPs)"
        )
    notes = [
        (
            f"scaled from {r.model} ({r.dims}D) on {r.node_type} "
            f"({fmt_number(r.throughput)} samples/s, {r.precision}) {how}"
        )
    ]
    return Prediction(thr, "flops_scaled", "medium", r, notes)


def predict_roofline(
    index: ResultIndex, workload: Workload, req: WorkloadRequest, node: NodeTypeInfo, strategy: str
) -> Prediction | None:
    """Peak TFLOP/s at the precision x calibrated utilisation; None without a peak figure."""
    peak = effective_peak(node, req.precision)
    if not peak:
        return None
    c, b, used, points = index.calibration(workload, req.precision, node)
    rate = c * peak**b  # work per second per GPU (x 1e12), in work_per_sample's unit
    if used:
        one_gpu = rate * 1e12 / work_per_sample(workload, req.image_size, node.device)
        neighbour = min(points, key=lambda r: abs(math.log(index.achieved(r)[0] / peak)))  # type: ignore[index]
        how = (
            f"fitted on {used} results on other hardware, achieved ~ peak^{b:.2f}; "
            f"nearest: {neighbour.model} on {neighbour.node_type} ({neighbour.precision}, "
            f"{fmt_number(neighbour.throughput)} samples/s)"
        )
    else:
        one_gpu = rate * 1e12 / workload.flops(req.image_size)  # rate is TFLOP/s here
        neighbour = None
        how = f"a stated default utilisation of {c:.0%} of peak: nothing measured to fit on"
    thr = index.scale_gpus(one_gpu, 1, req.gpus, node.accelerator) * STRATEGY_SPEED[strategy]
    notes = [
        (
            f"estimated from its {peak:g} TFLOP/s peak speed at {req.precision} (roofline: "
            f"{how}); no result on {node.accelerator}"
        )
    ]
    return Prediction(thr, "roofline", "low", neighbour, notes)


PREDICTORS = {
    "measured": predict_measured,
    "flops_scaled": predict_flops_scaled,
    "roofline": predict_roofline,
}


def predict(
    index: ResultIndex, workload: Workload, req: WorkloadRequest, node: NodeTypeInfo, strategy: str
) -> Prediction | None:
    """The best available prediction (measured, then FLOPs-scaled, then roofline), or None."""
    for method in METHODS:
        found = PREDICTORS[method](index, workload, req, node, strategy)
        if found is not None:
            if req.gpus > 1:
                eff, measured = index.doubling_efficiency(node.accelerator)
                where = "measured here" if measured else "stated default"
                found.notes.append(f"{req.gpus} GPUs at {eff:.0%} kept per doubling ({where})")
            return found
    return None
