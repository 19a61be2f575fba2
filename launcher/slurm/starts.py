"""When would a job start: the scheduler's own estimate (`sbatch --test-only`, run as the
member exactly as a submission would be, so the member's association, the account's limits and
the partition are all checked) and the partition's backlog (`squeue -t PD,R`: the jobs waiting
and running, with the expected start of each waiting one), in one SSH round trip. Nothing is
submitted. No Django (tested alone against the real Slurm).

`sbatch --test-only` answers on stderr, e.g.

    sbatch: Job 16 to start at 2026-11-28T21:05:37 using 1 processors on nodes vm in partition gpu

in the cluster's local time, so the script also prints the cluster's own clock and the wait is
the difference of the two (never this host's clock against the cluster's). A refusal is
`sbatch: error: ...` with a non-zero exit: the job could never run as asked (no association,
no such node configuration, the account's limits), a permanent BackendError with the
scheduler's words; a daemon that does not answer is transient (commands.py classifies it).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from launcher.backends.errors import BackendError, check_name

from .commands import SlurmCommands

# Values arrive as positional arguments ("$@"), never spliced into this text. Prints `now
# <cluster time>`, the test's lines prefixed `test `, `testrc <exit>`, then `queue` lines.
_START_SCRIPT = r"""
set -u
user=$1; part=$2; shift 2
echo "now $(date +%Y-%m-%dT%H:%M:%S)"
sbatch=$(command -v sbatch) || { echo "sbatch is not on the login node's PATH" >&2; exit 1; }
if ! why=$(sudo -n -l -u "$user" "$sbatch" 2>&1 >/dev/null); then echo "$why" >&2; exit 77; fi
out=$(cd / && sudo -n -u "$user" "$sbatch" --test-only "$@" 2>&1); rc=$?
printf '%s\n' "$out" | sed 's/^/test /'
echo "testrc $rc"
if [ -n "$part" ]; then q=$(squeue -h -t PD,R -p "$part" -o 'queue %T|%b|%S') || exit 75
else q=$(squeue -h -t PD,R -o 'queue %T|%b|%S') || exit 75; fi
printf '%s\n' "$q"
"""

_STARTS_AT = re.compile(r"to start at (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")
_GPUS = re.compile(r"gpu(?::[A-Za-z0-9_-]+)?:(\d+)")
_TIME = "%Y-%m-%dT%H:%M:%S"


@dataclass(frozen=True)
class StartReport:
    """What the scheduler said: `wait_seconds` until the test job would start (None when it
    gave no time), the line it said it in, and the partition's backlog: jobs pending and
    running, GPUs asked by pending ones, and the latest expected start of a pending job (as
    seconds from now; None when none has one)."""

    wait_seconds: float | None
    said: str
    pending: int = 0
    running: int = 0
    pending_gpus: int = 0
    last_pending_start_seconds: float | None = None
    refused: str = ""


def _time(text: str) -> dt.datetime | None:
    try:
        return dt.datetime.strptime(text.strip(), _TIME)
    except ValueError:
        return None  # "N/A", "Unknown" or nothing


def parse_start_report(stdout: str) -> StartReport:
    """The script's output as a StartReport (pure: tested on recorded outputs)."""
    now: dt.datetime | None = None
    said: list[str] = []
    rc = 0
    pending = running = pending_gpus = 0
    starts: list[dt.datetime] = []
    for line in stdout.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "now":
            now = _time(rest)
        elif kind == "test":
            if rest.strip():
                said.append(rest.strip())
        elif kind == "testrc":
            rc = int(rest) if rest.strip().isdigit() else 1
        elif kind == "queue":
            state, _, tail = rest.partition("|")
            gres, _, start = tail.partition("|")
            if state == "PENDING":
                pending += 1
                found = _GPUS.search(gres)
                pending_gpus += int(found.group(1)) if found else 0
                when = _time(start)
                if when is not None:
                    starts.append(when)
            elif state == "RUNNING":
                running += 1
    text = " ".join(said)[:300]
    if rc != 0:
        refused = re.sub(r"^sbatch: error: ", "", said[-1] if said else f"exit {rc}")
        return StartReport(None, text, pending, running, pending_gpus, None, refused[:300])
    match = _STARTS_AT.search(text)
    at = _time(match.group(1)) if match else None
    wait = None if at is None or now is None else max(0.0, (at - now).total_seconds())
    last = None if not starts or now is None else max(0.0, (max(starts) - now).total_seconds())
    return StartReport(wait, text, pending, running, pending_gpus, last)


class SlurmStarts(SlurmCommands):
    """The scheduler's start estimate for a job not yet submitted."""

    def start_estimate(
        self,
        *,
        user: str,
        account: str,
        gpus: int,
        time_limit_minutes: int,
        partition: str | None = None,
    ) -> StartReport:
        """When a job of `gpus` GPUs and `time_limit_minutes` on `account` would start if the
        member `user` submitted it now (`sbatch --test-only` as the member: nothing is
        submitted), with the partition's backlog. A permanent BackendError when sudo refuses
        the member; a transient one when the daemons do not answer. A refusal by the scheduler
        itself is in the report's `refused` (the caller decides what it means)."""
        login = self.member(user)
        check_name(account, "account")
        for value, what in ((gpus, "gpus"), (time_limit_minutes, "time limit")):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise BackendError(f"invalid {what} {value!r}", permanent=True)
        part = partition or self.partition or ""
        args = [
            "--job-name=portal-placement-probe",
            f"--account={account}",
            f"--time={max(1, time_limit_minutes)}",
            "--output=/dev/null",
            "--chdir=/",
            *([f"--gres=gpu:{gpus}"] if gpus else []),
            *([f"--partition={check_name(part, 'partition')}"] if part else []),
            "--wrap=true",
        ]
        command = ["bash", "-c", _START_SCRIPT, "portal-start", login, part, *args]
        result = self.ssh.run(command)
        if result.rc == 77:
            raise self.refused(login, result.stderr)
        report = parse_start_report(self._checked(command, result).stdout)
        if report.refused and any(
            marker in report.refused.lower()
            for marker in ("unable to contact", "socket timed out", "try again", "slurmdbd")
        ):
            raise BackendError(f"sbatch --test-only failed: {report.refused}", permanent=False)
        return report
