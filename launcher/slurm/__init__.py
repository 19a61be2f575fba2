"""The `slurm` backend: Slurm over SSH (paramiko, pinned host keys).

client.py    SlurmClient, one cluster as the portal's service account (no Django), made of:
commands.py  the SSH plumbing, failure classification, members, files read as a member
accounts.py  sacctmgr: accounts, member associations, GPU-minute caps, blocks
jobs.py      sbatch (as the member, once per token), squeue/sacct states, scancel, usage rows
starts.py    when a new job would start: sbatch --test-only as the member, the backlog
estimate.py  that report as the seam's StartEstimate, in words (placement)
records.py   the client's plain records: JobSpec, SubmitResult, JobState, JobStatus, UsageRow,
             AccountState (no Django)
ssh.py       the SSH connection with retries and a pinned host key (no Django)
parse.py     squeue/sacct output parsing (no Django)
usage.py     sacct records -> unsaved UsageRecords
notebooks.py a notebook session's options and its charge from sacct
backend.py   SlurmBackend, the registry entry (registered by LauncherConfig.ready()):
             accounts (name, members, cap, block/unblock), jobs, usage, returned as the seam's
             facts (launcher/backends/contract.py); and a facility's settings -> a cached
             SlurmClient (slurm_settings, slurm_client)
"""
