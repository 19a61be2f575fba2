"""The scheduler's start report (starts.py) as the seam's fact, `StartEstimate`, in words:
what placement reads (launcher/services/placement.py). Kept apart from the client, which the
hub's spawner imports without the seam's contract."""

from __future__ import annotations

from launcher.backends.contract import BackendError, StartEstimate
from launcher.placement.words import duration_text, wait_text

from .starts import StartReport


def estimate_from(report: StartReport) -> StartEstimate:
    """The seam's fact from the scheduler's report: the later of its own start time for the
    job and the latest expected start of a job pending in the partition (one ahead of it starts
    first), in words. A permanent BackendError when the scheduler refuses the job as asked."""
    if report.refused:
        raise BackendError(f"the scheduler refuses it: {report.refused}", permanent=True)
    backlog = (
        f"{report.running} running, {report.pending} pending"
        + (f" ({report.pending_gpus} GPUs asked)" if report.pending_gpus else "")
        + " in the partition"
    )
    if report.wait_seconds is None:
        return StartEstimate(
            None,
            f"Slurm gave no start time ({report.said or 'no answer'}); {backlog}",
            backlog=report.pending,
        )
    wait = report.wait_seconds
    basis = f"Slurm's own estimate (sbatch --test-only): {wait_text(wait)}; {backlog}"
    ahead = report.last_pending_start_seconds
    if ahead is not None and ahead > wait:
        wait = ahead
        basis += f"; a pending job ahead is expected to start in {duration_text(ahead)}"
    return StartEstimate(wait, basis, backlog=report.pending)
