"""The `slurm` backend: Slurm over SSH (paramiko, pinned host keys).

client.py   SlurmClient: accounts, sbatch, squeue/sacct, scancel (no Django)
ssh.py      the SSH connection with retries and a pinned host key (no Django)
parse.py    squeue/sacct output parsing (no Django)
usage.py       sacct records -> unsaved UsageRecords
backend.py     SlurmBackend, the registry entry (registered by LauncherConfig.ready()):
               accounts (name, members, cap, block/unblock), jobs, usage; and a
               facility's settings -> a cached SlurmClient (slurm_settings, slurm_client)
"""
