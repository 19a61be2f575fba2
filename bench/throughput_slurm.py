"""The cluster side of bench_throughput.py: the Slurm partition held DOWN while the bench
launches (sbatch accepts, every job pends, none runs on this 2-core machine), then the bench's
jobs cancelled and the partition put back exactly as it was, the staged job folders and the
bench's accounts removed, and a snapshot to show the cluster is as before.

Runs as root on the machine of `make services`: scontrol, squeue, scancel and sacctmgr run
locally as the Slurm administrator. The job folders are removed over the portal's own SSH
connection, as the service account that staged them. The whole Slurm part holds
/tmp/slurm.lock, the lock Slurm tests and benchmarks run under by hand.
"""

from __future__ import annotations

import contextlib
import fcntl
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

SLURM_LOCK = Path(tempfile.gettempdir()) / "slurm.lock"
# A staged job folder (`<token>-<nonce>`) or its submission lock (`.<token>.lock`).
_STAGED_RE = re.compile(r"^\.?(portal-job-[0-9a-f]{16})(?:-[0-9a-f]{8}|\.lock)$")


def _run(args: list[str], *, check: bool = True) -> str:
    done = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:3])} ...: {done.stderr.strip()[:300]}")
    return done.stdout


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


@contextlib.contextmanager
def cluster_lock() -> Iterator[None]:
    """/tmp/slurm.lock for the body: no Slurm test run under it shares the DOWN partition."""
    with open(SLURM_LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"waiting for {SLURM_LOCK} (a Slurm test holds it)", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def partition_state(partition: str) -> str:
    """The partition's State (UP, DOWN, DRAIN, INACTIVE) as slurmctld holds it."""
    found = re.search(r"\bState=(\S+)", _run(["scontrol", "show", "partition", partition, "-o"]))
    if found is None:
        raise RuntimeError(f"scontrol shows no partition {partition!r}")
    return found.group(1)


def live_jobs(accounts: Sequence[str]) -> list[str]:
    """Ids of the pending and running jobs charged to these accounts (one squeue)."""
    if not accounts:
        return []
    return _run(["squeue", "-h", "-A", ",".join(accounts), "-o", "%i"]).split()


def snapshot(partition: str, accounts: Sequence[str]) -> dict[str, object]:
    """What the bench must leave as it found it: the partition's state and availability (sinfo),
    and no live job on the bench's accounts."""
    return {
        "state": partition_state(partition),
        "sinfo": " ".join(_run(["sinfo", "-h", "-p", partition, "-o", "%P %a %l %D"]).split()),
        "bench_jobs": len(live_jobs(accounts)),
    }


def cancel_jobs(accounts: Sequence[str], *, timeout: float = 60) -> int:
    """scancel every live job of these accounts and wait until squeue shows none; returns how
    many there were. Raises if some are still live after `timeout`."""
    first = live_jobs(accounts)
    ids, deadline = first, time.monotonic() + timeout
    while ids:
        for chunk in _chunks(ids, 500):
            _run(["scancel", *chunk], check=False)  # one that just ended is no error
        time.sleep(0.3)
        ids = live_jobs(accounts)
        if ids and time.monotonic() > deadline:
            raise RuntimeError(f"{len(ids)} bench jobs still live after scancel")
    return len(first)


@contextlib.contextmanager
def partition_down(partition: str, *, before_up: Callable[[], None]) -> Iterator[str]:
    """The partition DOWN for the body (sbatch accepts; jobs pend with reason PartitionDown);
    then `before_up` (stop submitting, cancel the bench's jobs) and the partition back in the
    state it was in, also when the body or `before_up` fails. Yields that state."""
    was = partition_state(partition)
    _run(["scontrol", "update", f"PartitionName={partition}", "State=DOWN"])
    try:
        yield was
    finally:
        try:
            before_up()
        finally:
            _run(["scontrol", "update", f"PartitionName={partition}", f"State={was}"])


def remove_staged(ssh, jobs_dir: str, tokens: set[str]) -> int:
    """Remove the job folders and submission locks the portal staged for these tokens (as the
    service account, over the portal's SSH connection); returns how many entries went."""
    listing = ssh.run(["ls", "-a", "--", jobs_dir])
    names = [
        name
        for name in listing.stdout.split()
        if (found := _STAGED_RE.match(name)) and found.group(1) in tokens
    ]
    for chunk in _chunks(names, 200):
        removed = ssh.run(["rm", "-rf", "--", *(f"{jobs_dir}/{name}" for name in chunk)])
        if not removed.ok():
            print(f"note: {removed.stderr.strip()[:200]}", file=sys.stderr)
    return len(names)


def delete_accounts(accounts: Sequence[str]) -> None:
    """Delete the bench's Slurm accounts (their users' associations go with them). A member's
    default account goes last: sacctmgr refuses it while the member has other associations."""
    defaults = set(_run(["sacctmgr", "-n", "-P", "show", "user", "format=DefaultAccount"]).split())
    ours = list(accounts)
    for chunk in [
        *_chunks([a for a in ours if a not in defaults], 50),
        *([a] for a in ours if a in defaults),
    ]:
        out = subprocess.run(
            ["sacctmgr", "-i", "delete", "account", f"name={','.join(chunk)}"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if out.returncode != 0 and "Nothing deleted" not in out.stdout + out.stderr:
            print(f"note: sacctmgr delete: {(out.stdout + out.stderr).strip()[:300]}")
