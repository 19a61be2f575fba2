"""`make bench`: run every benchmark script in this folder and print their tables."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = [
    "bench_portal.py",
    "bench_vs_coldfront.py",
    "bench_recommender.py",
    "bench_calibration.py",
    "bench_sacct.py",
    "bench_ledger.py",
    "bench_slurm_loop.py",
    "bench_cloud.py",
    "bench_workload.py",
    "bench_sweeps.py",
    "bench_placement.py",
    "bench_reports.py",
    "bench_scale.py",
    "bench_throughput.py",
    "notebooks.py",
]


def main() -> int:
    scripts = [HERE / name for name in ORDER if (HERE / name).exists()]
    scripts += sorted(p for p in HERE.glob("bench_*.py") if p.name not in ORDER)
    failed = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        if subprocess.run([sys.executable, str(script)], cwd=HERE.parent).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nFAILED: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
