"""The rows of bench_vs_coldfront.py's table: each side's figures over the paired rounds, the
median of the rounds' ratios with their range, and the printed table."""

from __future__ import annotations

import statistics

CF_VERSION = "1.1.10"

ROWS = [
    "project list",
    "allocation detail",
    "request detail",
    "request POST",
    "API allocations",
    "API requests",
    "API jobs",
]


def rounds_row(scale: str, row: str, rounds: list[dict[str, dict[str, dict]]]) -> dict:
    """One row: each side's median over the rounds, and the median (and range) of the rounds'
    own ratios, each round's two sides having been measured back to back."""
    cf = [r["ColdFront"][row] for r in rounds if row in r["ColdFront"]]
    ours = [r["ours"][row] for r in rounds if row in r["ours"]]
    rps = [_ratio(o["c8_rps"], c["c8_rps"]) for o, c in zip(ours, cf)]
    p50 = [_ratio(o["seq_p50"], c["seq_p50"]) for o, c in zip(ours, cf)]
    return {
        "scale": scale,
        "row": row,
        "coldfront": _median_of(cf),
        "ours": _median_of(ours),
        "rps_ratio": _median([x for x in rps if x is not None]),
        "p50_ratio": _median([x for x in p50 if x is not None]),
        "rps_ratios": rps,
        "p50_ratios": p50,
        "rounds": {"ColdFront": cf, "ours": ours},
    }


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _median_of(results: list[dict[str, float]]) -> dict[str, float] | None:
    """Each figure's median over the rounds (None for a page a side does not have)."""
    if not results:
        return None
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    return ours / theirs if ours and theirs else None


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(rows: list[dict], how: str) -> None:
    print(f"\nOurs against ColdFront {CF_VERSION}: {how}; medians over the rounds; ms")
    print(
        f"{'scale':<7}{'page':<19}{'CF r/s':>9}{'ours r/s':>9}{'x r/s':>7}{'x range':>12}"
        f"{'CF p50':>8}{'ours p50':>9}{'p50 ratio':>10}"
    )
    for r in rows:
        cf, ours = r["coldfront"], r["ours"]
        if cf is None:
            print(
                f"{r['scale']:<7}{r['row']:<19}{'-':>9}{ours['c8_rps']:>9.1f}{'-':>7}{'-':>12}"
                f"{'-':>8}{ours['seq_p50']:>9.2f}{'no counterpart':>15}"
            )
            continue
        spread = [x for x in r["rps_ratios"] if x is not None]
        span = f"{min(spread):.2f}-{max(spread):.2f}" if spread else "-"
        print(
            f"{r['scale']:<7}{r['row']:<19}{cf['c8_rps']:>9.1f}{ours['c8_rps']:>9.1f}"
            f"{_fmt(r['rps_ratio'], '.2f'):>6}x{span:>12}{cf['seq_p50']:>8.2f}"
            f"{ours['seq_p50']:>9.2f}{_fmt(r['p50_ratio'], '.2f'):>10}"
        )
    print(
        "x r/s: the median over the rounds of ours / ColdFront requests per second at "
        "concurrency 8 (aim >= 3), x range: the rounds' lowest and highest; p50 ratio: the "
        "median of the rounds' our sequential median / ColdFront's (aim <= 0.33)."
    )
