"""`SlurmClient`: one Slurm cluster on a login node over SSH, as the portal's service account
(no Django). Its commands come in four parts: commands.py (the SSH plumbing, failure
classification, who a member's work runs as, files read as the member), accounts.py (sacctmgr:
accounts, members, caps, blocks), jobs.py (sbatch, squeue, sacct, scancel) and starts.py (when
a new job would start: sbatch --test-only, the backlog). The Slurm backend (backend.py) holds
one per facility."""

from __future__ import annotations

from .accounts import SlurmAccounts
from .jobs import SlurmJobs
from .starts import SlurmStarts

# A notebook session's jobs are named so (launcher/notebooks/hub/slurm.py submits them); they
# are charged per session (launcher/slurm/notebooks.py), never by the account's usage ingestion.
NOTEBOOK_JOB_PREFIX = "portal-nb-"


class SlurmClient(SlurmAccounts, SlurmJobs, SlurmStarts):
    """A Slurm cluster reached through one `SSHConnection`: its accounts, its jobs and when a
    new job would start."""
